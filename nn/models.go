package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/anemone-go/anemone/dataflow"
)

// seeded draws weights for the model builders' tests and examples.
type seeded struct {
	rng *rand.Rand
	ws  Weights
}

func newSeeded(seed uint64) *seeded {
	return &seeded{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), ws: Weights{}}
}

// normal adds a tensor of N(0, σ²) entries.
func (s *seeded) normal(name string, sigma float64, shape ...int) {
	t := Tensor{Name: name, DType: F32, Shape: shape}
	t.Data = make([]float64, t.Size())
	for i := range t.Data {
		t.Data[i] = s.rng.NormFloat64() * sigma
	}
	s.ws.Add(t)
}

// uniform adds a tensor of U(lo, hi) entries.
func (s *seeded) uniform(name string, lo, hi float64, shape ...int) {
	t := Tensor{Name: name, DType: F32, Shape: shape}
	t.Data = make([]float64, t.Size())
	for i := range t.Data {
		t.Data[i] = lo + (hi-lo)*s.rng.Float64()
	}
	s.ws.Add(t)
}

// batchNorm adds a batch norm's four parameters under prefix.
func (s *seeded) batchNorm(prefix string, c int) {
	s.uniform(prefix+".weight", 0.5, 1, c)
	s.normal(prefix+".bias", 0.1, c)
	s.normal(prefix+".running_mean", 0.1, c)
	s.uniform(prefix+".running_var", 0.5, 1.5, c)
}

// getter collects the first error of a run of Weights.Get calls.
type getter struct {
	ws  Weights
	err error
}

func (g *getter) get(name string, shape ...int) Tensor {
	if g.err != nil {
		return Tensor{}
	}
	t, err := g.ws.Get(name, shape...)
	if err != nil {
		g.err = err
	}
	return t
}

func (g *getter) batchNorm(prefix string, c int, eps float64) *BatchNorm {
	return &BatchNorm{
		Gamma: g.get(prefix+".weight", c), Beta: g.get(prefix+".bias", c),
		Mean: g.get(prefix+".running_mean", c), Var: g.get(prefix+".running_var", c),
		Epsilon: eps,
	}
}

func (g *getter) dense(prefix string, out, in int) Dense {
	return Dense{W: g.get(prefix+".weight", out, in), B: g.get(prefix+".bias", out)}
}

// bnEpsilon is PyTorch's BatchNorm2d default.
const bnEpsilon = 1e-5

// CNNConfig describes a small CNN: one conv–BN–ReLU block per entry of
// Widths (3×3, padding 1), a 2×2 max pool after every block but the last,
// a global average pool and a linear classifier.
type CNNConfig struct {
	InChannels int     // input channels
	Size       int     // input height and width
	Widths     []int   // channels of each block
	Classes    int     // classifier outputs
	InputBound float64 // a bound on |input|; 0 means 8. Scales the first conv (ConvOptions.Bound).
}

// SmallCNN is the configuration the tests and the example run: 3×32×32
// inputs, blocks of 16, 32 and 64 channels, 10 classes.
var SmallCNN = CNNConfig{InChannels: 3, Size: 32, Widths: []int{16, 32, 64}, Classes: 10}

// RandomWeights returns seeded weights for c in PyTorch's naming
// ("blocks.0.conv.weight", "blocks.0.bn.running_var", "fc.weight"), He-
// initialized convs and batch norms with running statistics near (0, 1).
func (c CNNConfig) RandomWeights(seed uint64) Weights {
	s := newSeeded(seed)
	in := c.InChannels
	for i, w := range c.Widths {
		p := fmt.Sprintf("blocks.%d", i)
		s.normal(p+".conv.weight", math.Sqrt(2/float64(9*in)), w, in, 3, 3)
		s.batchNorm(p+".bn", w)
		in = w
	}
	s.normal("fc.weight", 1/math.Sqrt(float64(in)), c.Classes, in)
	s.normal("fc.bias", 0.1, c.Classes)
	return s.ws
}

// CNN builds c from ws into a graph with input "image" [1, InChannels,
// Size, Size] and output "logits" [1, Classes]. A missing or misshapen
// weight is an error wrapping ErrWeight.
func CNN(ws Weights, c CNNConfig) (*dataflow.Graph, error) {
	if c.InChannels < 1 || c.Size < 1 || len(c.Widths) == 0 || c.Classes < 1 {
		return nil, fmt.Errorf("nn: cnn: config %+v needs positive sizes and at least one block: %w", c, ErrShape)
	}
	bound := c.InputBound
	if bound == 0 {
		bound = 8
	}
	gt := &getter{ws: ws}
	g := dataflow.New()
	x := g.Input("image", dataflow.Shape{1, c.InChannels, c.Size, c.Size})
	in := c.InChannels
	for i, w := range c.Widths {
		p := fmt.Sprintf("blocks.%d", i)
		opts := ConvOptions{Pads: [4]int{1, 1, 1, 1}, BatchNorm: gt.batchNorm(p+".bn", w, bnEpsilon)}
		if i == 0 {
			opts.Bound = bound
		}
		wt := gt.get(p+".conv.weight", w, in, 3, 3)
		if gt.err != nil {
			return nil, gt.err
		}
		x = ReLU(g, Conv2D(g, x, wt, Tensor{}, opts))
		if i < len(c.Widths)-1 {
			x = MaxPool2D(g, x, 2, 2, 0)
		}
		in = w
	}
	fc := gt.dense("fc", c.Classes, in)
	if gt.err != nil {
		return nil, gt.err
	}
	x = g.Reshape(GlobalAvgPool(g, x), dataflow.Shape{1, in})
	g.Output("logits", Linear(g, x, fc.W, fc.B))
	return g, g.Err()
}

// EncoderConfig describes a pre-norm transformer encoder on channel-first
// activations [1, Hidden, 1, Seq]: Layers blocks of x += Attention(LN(x))
// and x += W2·GELU(W1·LN(x)), then a final LayerNorm.
type EncoderConfig struct {
	Layers, Hidden, Heads, MLP, Seq int
	// Vocab > 0: the input "tokens" is one-hot [1, Vocab, 1, Seq] (see
	// OneHot), embedded by a table plus learned positions. Vocab = 0: the
	// input "x" [1, Hidden, 1, Seq] is already embedded.
	Vocab   int
	Causal  bool
	Epsilon float64  // LayerNorm's ε; 0 means 1e-5
	Native  bool     // native layer_norm ops (ε must then be 0 or ≥ 2⁻¹⁴)
	GELU    GELUMode // the MLP's activation
}

// SmallEncoder is the encoder the tests and the example run: 2 layers,
// hidden 64, 4 heads, MLP 256, sequence 32, vocabulary 100, causal.
var SmallEncoder = EncoderConfig{Layers: 2, Hidden: 64, Heads: 4, MLP: 256, Seq: 32, Vocab: 100, Causal: true, GELU: GELUTanh}

// MiniLM is a MiniLM-shaped encoder (all-MiniLM-L6-v2's sizes): 6 layers,
// hidden 384, 12 heads, MLP 1536, sequence 128, ε = 1e-12, exact GELU,
// embedded input. (MiniLM itself is post-norm BERT; this is the pre-norm
// block with its shapes, and the same work per layer.)
var MiniLM = EncoderConfig{Layers: 6, Hidden: 384, Heads: 12, MLP: 1536, Seq: 128, Epsilon: 1e-12, GELU: GELUExact}

// RandomWeights returns seeded weights for c ("layers.0.attn.q.weight",
// "layers.0.norm1.weight", "layers.0.mlp.fc1.weight", "norm.weight",
// "embed.weight", "pos.weight"), Xavier-like N(0, 1/fan_in) projections.
func (c EncoderConfig) RandomWeights(seed uint64) Weights {
	s := newSeeded(seed)
	d := c.Hidden
	if c.Vocab > 0 {
		s.normal("embed.weight", 1, c.Vocab, d)
		s.normal("pos.weight", 0.5, c.Seq, d)
	}
	norm := func(p string) {
		s.uniform(p+".weight", 0.8, 1.2, d)
		s.normal(p+".bias", 0.05, d)
	}
	dense := func(p string, out, in int) {
		s.normal(p+".weight", 1/math.Sqrt(float64(in)), out, in)
		s.normal(p+".bias", 0.02, out)
	}
	for i := range c.Layers {
		p := fmt.Sprintf("layers.%d", i)
		norm(p + ".norm1")
		for _, n := range []string{"q", "k", "v", "o"} {
			dense(p+".attn."+n, d, d)
		}
		norm(p + ".norm2")
		dense(p+".mlp.fc1", c.MLP, d)
		dense(p+".mlp.fc2", d, c.MLP)
	}
	norm("norm")
	return s.ws
}

// Encoder builds c from ws into a graph with input "tokens" or "x" (see
// EncoderConfig.Vocab) and output "hidden" [1, Hidden, 1, Seq].
func Encoder(ws Weights, c EncoderConfig) (*dataflow.Graph, error) {
	if c.Layers < 0 || c.Hidden < 1 || c.Heads < 1 || c.Hidden%c.Heads != 0 || c.MLP < 1 || c.Seq < 1 || c.Vocab < 0 {
		return nil, fmt.Errorf("nn: encoder: config %+v needs positive sizes and heads dividing hidden: %w", c, ErrShape)
	}
	eps := c.Epsilon
	if eps == 0 {
		eps = 1e-5
	}
	d, t := c.Hidden, c.Seq
	gt := &getter{ws: ws}
	g := dataflow.New()
	var x dataflow.Value
	if c.Vocab > 0 {
		table, pos := gt.get("embed.weight", c.Vocab, d), gt.get("pos.weight", t, d)
		if gt.err != nil {
			return nil, gt.err
		}
		x = Embedding(g, g.Input("tokens", dataflow.Shape{1, c.Vocab, 1, t}), table)
		pt := make([]float64, d*t) // [1, D, 1, T] from [T, D]
		for i := range t {
			for j := range d {
				pt[j*t+i] = pos.Data[i*d+j]
			}
		}
		x = g.Add(x, vector(g, "pos_weight", dataflow.Shape{1, d, 1, t}, pt))
	} else {
		x = g.Input("x", dataflow.Shape{1, d, 1, t})
	}
	opts := NormOptions{Epsilon: eps, Native: c.Native}
	for i := range c.Layers {
		p := fmt.Sprintf("layers.%d", i)
		aw := AttentionWeights{
			Q: gt.dense(p+".attn.q", d, d), K: gt.dense(p+".attn.k", d, d),
			V: gt.dense(p+".attn.v", d, d), O: gt.dense(p+".attn.o", d, d),
		}
		n1g, n1b := gt.get(p+".norm1.weight", d), gt.get(p+".norm1.bias", d)
		n2g, n2b := gt.get(p+".norm2.weight", d), gt.get(p+".norm2.bias", d)
		fc1, fc2 := gt.dense(p+".mlp.fc1", c.MLP, d), gt.dense(p+".mlp.fc2", d, c.MLP)
		if gt.err != nil {
			return nil, gt.err
		}
		h := Attention(g, LayerNorm(g, x, n1g, n1b, opts), aw, AttentionOptions{Heads: c.Heads, Causal: c.Causal})
		x = Residual(g, x, h)
		m := Linear(g, GELU(g, Linear(g, LayerNorm(g, x, n2g, n2b, opts), fc1.W, fc1.B), c.GELU), fc2.W, fc2.B)
		x = Residual(g, x, m)
	}
	ng, nb := gt.get("norm.weight", d), gt.get("norm.bias", d)
	if gt.err != nil {
		return nil, gt.err
	}
	g.Output("hidden", LayerNorm(g, x, ng, nb, opts))
	return g, g.Err()
}

// ResNetConfig describes a ResNet-18-shaped network: a 7×7 stride-2 stem
// with batch norm, ReLU and a 3×3 stride-2 max pool, four stages of two
// basic blocks (64, 128, 256, 512 channels; stride 2 and a 1×1 projection
// at the start of stages 2–4), a global average pool and a linear
// classifier.
type ResNetConfig struct {
	Size    int // input height and width (224 for ImageNet)
	Classes int
}

// ResNet18 is the ImageNet shape: 3×224×224 inputs, 1000 classes.
var ResNet18 = ResNetConfig{Size: 224, Classes: 1000}

var resnetWidths = [4]int{64, 128, 256, 512}

// RandomWeights returns seeded weights under torchvision's resnet18 names
// ("conv1.weight", "bn1.running_var", "layer2.0.downsample.0.weight",
// "fc.bias", …): He-initialized convs and batch norms with running
// statistics near (0, 1), the second batch norm of each block scaled down
// (γ ∈ [0.25, 0.5]) as trained residual networks keep their branches
// small, so that activations stay O(1) through the eight residual adds.
func (c ResNetConfig) RandomWeights(seed uint64) Weights {
	s := newSeeded(seed)
	s.normal("conv1.weight", math.Sqrt(2.0/(3*49)), 64, 3, 7, 7)
	s.batchNorm("bn1", 64)
	in := 64
	for l, w := range resnetWidths {
		for b := range 2 {
			p := fmt.Sprintf("layer%d.%d", l+1, b)
			s.normal(p+".conv1.weight", math.Sqrt(2/float64(9*in)), w, in, 3, 3)
			s.batchNorm(p+".bn1", w)
			s.normal(p+".conv2.weight", math.Sqrt(2/float64(9*w)), w, w, 3, 3)
			s.batchNorm(p+".bn2", w)
			s.uniform(p+".bn2.weight", 0.25, 0.5, w)
			if b == 0 && l > 0 {
				s.normal(p+".downsample.0.weight", math.Sqrt(2/float64(in)), w, in, 1, 1)
				s.batchNorm(p+".downsample.1", w)
			}
			in = w
		}
	}
	s.normal("fc.weight", 1/math.Sqrt(512), c.Classes, 512)
	s.normal("fc.bias", 0.01, c.Classes)
	return s.ws
}

// ResNet builds c from ws into a graph with input "image" [1, 3, Size,
// Size] and output "logits" [1, Classes].
func ResNet(ws Weights, c ResNetConfig) (*dataflow.Graph, error) {
	if c.Size < 32 || c.Classes < 1 {
		return nil, fmt.Errorf("nn: resnet: config %+v needs Size ≥ 32 and Classes ≥ 1: %w", c, ErrShape)
	}
	gt := &getter{ws: ws}
	g := dataflow.New()
	x := g.Input("image", dataflow.Shape{1, 3, c.Size, c.Size})
	conv := func(x dataflow.Value, name, bn string, out, in, k, stride int) dataflow.Value {
		w := gt.get(name, out, in, k, k)
		norm := gt.batchNorm(bn, out, bnEpsilon)
		if gt.err != nil {
			return dataflow.Value{}
		}
		p := k / 2
		return Conv2D(g, x, w, Tensor{}, ConvOptions{Strides: [2]int{stride, stride}, Pads: [4]int{p, p, p, p}, BatchNorm: norm})
	}
	x = MaxPool2D(g, ReLU(g, conv(x, "conv1.weight", "bn1", 64, 3, 7, 2)), 3, 2, 1)
	in := 64
	for l, w := range resnetWidths {
		for b := range 2 {
			p := fmt.Sprintf("layer%d.%d", l+1, b)
			stride := 1
			if b == 0 && l > 0 {
				stride = 2
			}
			h := ReLU(g, conv(x, p+".conv1.weight", p+".bn1", w, in, 3, stride))
			h = conv(h, p+".conv2.weight", p+".bn2", w, w, 3, 1)
			skip := x
			if stride != 1 || in != w {
				skip = conv(x, p+".downsample.0.weight", p+".downsample.1", w, in, 1, stride)
			}
			if gt.err != nil {
				return nil, gt.err
			}
			x = ReLU(g, Residual(g, h, skip))
			in = w
		}
	}
	fc := gt.dense("fc", c.Classes, 512)
	if gt.err != nil {
		return nil, gt.err
	}
	x = g.Reshape(GlobalAvgPool(g, x), dataflow.Shape{1, 512})
	g.Output("logits", Linear(g, x, fc.W, fc.B))
	return g, g.Err()
}
