// Package calibration builds the programs behind the published Neural
// Engine measurements that lower.Estimate is compared with (docs/ENGINE.md
// §6): whole networks from nn's graph builders, GEMMs, conv stacks and
// single convs, each lowered for an ANE family's target. Its test prices
// every one and checks the model against the measurement.
package calibration

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/nn"
)

// ResNet18 is nn's ResNet-18 (3×224×224, 1000 classes).
func ResNet18() (*dataflow.Graph, error) {
	return nn.ResNet(nn.ResNet18.RandomWeights(1), nn.ResNet18)
}

// MiniLM is nn's MiniLM-shaped encoder (6 layers of 384, sequence 128).
func MiniLM() (*dataflow.Graph, error) {
	return nn.Encoder(nn.MiniLM.RandomWeights(1), nn.MiniLM)
}

// ViTB16 is ViT-B/16 on a 224×224 image: the 16×16 stride-16 patch
// embedding (3 → 768 channels, 14×14 patches) — as the 1×1 conv it equals
// over the 196 flattened 3·16·16 patches, the input, since a 16-wide
// kernel exceeds the engine's limit of 15; the same flops and weights —
// the patches as 196 tokens plus a class token (197), learned positions,
// then 12 pre-norm blocks of
// hidden 768, 12 heads and MLP 3072 with exact GELU and a final
// LayerNorm — nn.Encoder's block, built here from nn's layers because
// the encoder takes embedded tokens as its input.
func ViTB16() (*dataflow.Graph, error) {
	const d, seq, layers, heads, mlp = 768, 197, 12, 12, 3072
	cfg := nn.EncoderConfig{Layers: layers, Hidden: d, Heads: heads, MLP: mlp, Seq: seq, GELU: nn.GELUExact}
	ws := cfg.RandomWeights(1)
	rng := rand.New(rand.NewPCG(2, 3))
	randn := func(name string, sigma float64, shape ...int) nn.Tensor {
		t := nn.Tensor{Name: name, DType: nn.F32, Shape: shape}
		t.Data = make([]float64, t.Size())
		for i := range t.Data {
			t.Data[i] = rng.NormFloat64() * sigma
		}
		return t
	}
	g := dataflow.New()
	patches := g.Input("patches", dataflow.Shape{1, 3 * 16 * 16, 1, 196})
	tokens := nn.Conv2D(g, patches, randn("patch.weight", 1/math.Sqrt(3*256), d, 3*16*16, 1, 1), randn("patch.bias", 0.02, d), nn.ConvOptions{Bound: 4})
	normal := func(n int) []float64 { // in ±[2⁻⁷, 2⁻⁶]: fp16 normals
		v := make([]float64, n)
		for i := range v {
			v[i] = math.Copysign(0x1p-7*(1+rng.Float64()), rng.NormFloat64())
		}
		return v
	}
	x := g.Concat(3, g.Const("cls", dataflow.Shape{1, d, 1, 1}, normal(d)), tokens)
	x = g.Add(x, g.Const("pos", dataflow.Shape{1, d, 1, seq}, normal(d*seq)))
	out, err := encoderBlocks(g, ws, cfg, x)
	if err != nil {
		return nil, err
	}
	g.Output("hidden", out)
	return g, g.Err()
}

// GPT2Step approximates one GPT-2 124M decode step: nn.Encoder's causal
// pre-norm blocks (12 layers of 768, 12 heads, MLP 3072, tanh GELU) over
// a 16-token window — decode pads a one-token step to 16 positions on the
// engine (Orion) — then the language-model head, a linear layer from 768
// to the 50257-entry vocabulary (GPT-2 ties it to the token embedding,
// whose 38.6M weights are part of the 124M). nn has no KV-cache
// attention: the window's keys and values stand in for the cache, so
// the approximation streams every weight once (the 248 MB that dominate
// a decode step) and leaves out reading a cache of past keys and values
// (at most 12·2·1024·768·2 B = 38 MB at GPT-2's full 1024-token context).
func GPT2Step() (*dataflow.Graph, error) {
	const d, vocab = 768, 50257
	cfg := nn.EncoderConfig{Layers: 12, Hidden: d, Heads: 12, MLP: 3072, Seq: 16, Causal: true, GELU: nn.GELUTanh}
	ws := cfg.RandomWeights(1)
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, d, 1, cfg.Seq})
	h, err := encoderBlocks(g, ws, cfg, x)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(4, 5))
	head := nn.Tensor{Name: "lm_head.weight", DType: nn.F32, Shape: []int{vocab, d}, Data: make([]float64, vocab*d)}
	for i := range head.Data {
		head.Data[i] = rng.NormFloat64() * 0.02
	}
	g.Output("logits", nn.Linear(g, h, head, nn.Tensor{}))
	return g, g.Err()
}

// encoderBlocks appends cfg's pre-norm blocks and final LayerNorm to x, as
// nn.Encoder builds them, with ws's names, and returns the result.
func encoderBlocks(g *dataflow.Graph, ws nn.Weights, cfg nn.EncoderConfig, x dataflow.Value) (dataflow.Value, error) {
	d := cfg.Hidden
	get := func(name string, shape ...int) nn.Tensor {
		t, err := ws.Get(name, shape...)
		if err != nil {
			g.Fail(err)
		}
		return t
	}
	dense := func(p string, out, in int) nn.Dense {
		return nn.Dense{W: get(p+".weight", out, in), B: get(p+".bias", out)}
	}
	opts := nn.NormOptions{Epsilon: 1e-5}
	for i := range cfg.Layers {
		p := fmt.Sprintf("layers.%d", i)
		aw := nn.AttentionWeights{Q: dense(p+".attn.q", d, d), K: dense(p+".attn.k", d, d), V: dense(p+".attn.v", d, d), O: dense(p+".attn.o", d, d)}
		h := nn.Attention(g, nn.LayerNorm(g, x, get(p+".norm1.weight", d), get(p+".norm1.bias", d), opts), aw, nn.AttentionOptions{Heads: cfg.Heads, Causal: cfg.Causal})
		x = nn.Residual(g, x, h)
		fc1, fc2 := dense(p+".mlp.fc1", cfg.MLP, d), dense(p+".mlp.fc2", d, cfg.MLP)
		m := nn.Linear(g, nn.GELU(g, nn.Linear(g, nn.LayerNorm(g, x, get(p+".norm2.weight", d), get(p+".norm2.bias", d), opts), fc1.W, fc1.B), cfg.GELU), fc2.W, fc2.B)
		x = nn.Residual(g, x, m)
	}
	out := nn.LayerNorm(g, x, get("norm.weight", d), get("norm.bias", d), opts)
	return out, g.Err()
}

// The micro-benchmarks are the single programs that were measured,
// written as MIL (as the benchmarks bind their tensors directly, without
// anemone's packed input and output surfaces): the op, its inputs and
// its constant weights, nothing else.

// GEMM is one n×n by n×n matmul of two runtime operands.
func GEMM(n int) *lower.Program {
	t := fmt.Sprintf("tensor<fp16, [%d, %d]>", n, n)
	return milProgram(t+" a, "+t+" b", "        "+t+" c = matmul(x = a, y = b)[name = string(\"c\")];\n", "c", nil)
}

// GEMMConst is an n×n by n×n matmul with a constant right operand.
func GEMMConst(n int) *lower.Program {
	w := mil.NewBlobWriter()
	off := w.Add(mil.BlobFP16, make([]byte, 2*n*n))
	t := fmt.Sprintf("tensor<fp16, [%d, %d]>", n, n)
	return milProgram(t+" x", blobConst("w", off, n, n)+"        "+t+" y = matmul(x = x, y = w)[name = string(\"y\")];\n", "y", w)
}

// Convs is layers k×k convs of c channels in a chain over an h×w image
// ([1, c, h, w]), stride 1, "same" padding, each with its own constant
// weight. One layer is a single conv; eight 1×1 layers over a row of
// positions are a wide-conv throughput benchmark.
func Convs(layers, k, c, h, w int) *lower.Program {
	blob := mil.NewBlobWriter()
	p := k / 2
	body := "        tensor<int32, [2]> st = const()[name = string(\"st\"), val = tensor<int32, [2]>([1, 1])];\n" +
		"        tensor<int32, [2]> dl = const()[name = string(\"dl\"), val = tensor<int32, [2]>([1, 1])];\n" +
		fmt.Sprintf("        tensor<int32, [4]> pd = const()[name = string(\"pd\"), val = tensor<int32, [4]>([%d, %d, %d, %d])];\n", p, p, p, p) +
		"        int32 gr = const()[name = string(\"gr\"), val = int32(1)];\n" +
		"        string pt = const()[name = string(\"pt\"), val = string(\"custom\")];\n"
	x := "x"
	for l := range layers {
		off := blob.Add(mil.BlobFP16, make([]byte, 2*c*c*k*k))
		wn, y := fmt.Sprintf("w%d", l), fmt.Sprintf("y%d", l)
		body += blobConst(wn, off, c, c, k, k) +
			fmt.Sprintf("        tensor<fp16, [1, %d, %d, %d]> %s = conv(dilations = dl, groups = gr, pad = pd, pad_type = pt, strides = st, weight = %s, x = %s)[name = string(%q)];\n", c, h, w, y, wn, x, y)
		x = y
	}
	return milProgram(fmt.Sprintf("tensor<fp16, [1, %d, %d, %d]> x", c, h, w), body, x, blob)
}

// WeightStream is a matrix–vector product with a constant out×in weight
// (a 1×1 conv over one position): all but no compute, the weight's bytes
// streamed once — a bandwidth benchmark.
func WeightStream(out, in int) *lower.Program {
	blob := mil.NewBlobWriter()
	off := blob.Add(mil.BlobFP16, make([]byte, 2*out*in))
	body := blobConst("w", off, out, in, 1, 1) +
		fmt.Sprintf("        tensor<fp16, [1, %d, 1, 1]> y = conv(weight = w, x = x)[name = string(\"y\")];\n", out)
	return milProgram(fmt.Sprintf("tensor<fp16, [1, %d, 1, 1]> x", in), body, "y", blob)
}

// Stream is one relu over a rows×cols fp16 input: ANEForge's streaming
// archetype (bench/device_bandwidth_roofline.py, "streaming (relu / x*2)"),
// which sweeps rows×4096 inputs and reports 2·(rows·cols)·2 bytes — the
// input read and the output written — over the time of one call. No
// compute and no weight: every byte is a program input or output.
func Stream(rows, cols int) *lower.Program {
	t := fmt.Sprintf("tensor<fp16, [%d, %d]>", rows, cols)
	return milProgram(t+" x", "        "+t+" y = relu(x = x)[name = string(\"y\")];\n", "y", nil)
}

// Empty is a program without a node: what the model charges is the
// dispatch floor.
func Empty() *lower.Program {
	return milProgram("tensor<fp16, [1, 1, 1, 64]> x", "", "x", nil)
}

func milProgram(inputs, body, output string, blob *mil.BlobWriter) *lower.Program {
	p := &lower.Program{MIL: []byte("program(1.3)\n{\n    func main<ios18>(" + inputs + ") {\n" + body + "    } -> (" + output + ");\n}\n")}
	if blob != nil {
		p.Blob = blob.Bytes()
	}
	return p
}

func blobConst(name string, offset uint64, dims ...int) string {
	ds := make([]string, len(dims))
	for i, d := range dims {
		ds[i] = fmt.Sprint(d)
	}
	t := "tensor<fp16, [" + strings.Join(ds, ", ") + "]>"
	return fmt.Sprintf("        %s %s = const()[name = string(%q), val = %s(BLOBFILE(path = string(%q), offset = uint64(%d)))];\n",
		t, name, name, t, lower.WeightPath, offset)
}

// Lower lowers g for the named target.
func Lower(g *dataflow.Graph, target string) (*lower.Program, error) {
	t, err := lower.TargetByName(target)
	if err != nil {
		return nil, err
	}
	return lower.Lower(g, t)
}
