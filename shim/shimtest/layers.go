package shimtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
)

// layerCase is one nn layer on seeded inputs and weights.
type layerCase struct {
	layer  string // the nn function, "nn.Linear"
	name   string
	inputs []inputSpec
	build  func(g *dataflow.Graph, in []dataflow.Value, w weights) dataflow.Value
}

// weights draws a case's seeded weights: float64 values, not fp16 ones, so
// that the constants' rounding is part of what the bound covers.
type weights struct{ rng *rand.Rand }

func (w weights) normal(name string, sigma float64, shape ...int) nn.Tensor {
	t := nn.Tensor{Name: name, DType: nn.F32, Shape: shape, Data: make([]float64, size(shape))}
	for i := range t.Data {
		t.Data[i] = sigma * w.rng.NormFloat64()
	}
	return t
}

func (w weights) uniform(name string, lo, hi float64, shape ...int) nn.Tensor {
	t := nn.Tensor{Name: name, DType: nn.F32, Shape: shape, Data: make([]float64, size(shape))}
	for i := range t.Data {
		t.Data[i] = lo + (hi-lo)*w.rng.Float64()
	}
	return t
}

func (w weights) dense(name string, out, in int, bias bool) nn.Dense {
	d := nn.Dense{W: w.normal(name+".weight", 1/math.Sqrt(float64(in)), out, in)}
	if bias {
		d.B = w.normal(name+".bias", 0.1, out)
	}
	return d
}

func size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// oneHot draws T tokens from a vocabulary of V and lays them out one-hot,
// channel-first [1, V, 1, T] or as rows [T, V].
func oneHot(name string, v, t int, rows bool) inputSpec {
	shape := dataflow.Shape{1, v, 1, t}
	if rows {
		shape = dataflow.Shape{t, v}
	}
	return inputSpec{name: name, shape: shape, gen: func(rng *rand.Rand) []float64 {
		x := make([]float64, v*t)
		for i := range t {
			id := rng.IntN(v)
			if rows {
				x[i*v+id] = 1
			} else {
				x[id*t+i] = 1
			}
		}
		return x
	}}
}

// Shapes of the layer cases: a sequence of 16 positions of 48 features,
// channel-first (the engine's layout) or as rows; a small image.
var (
	seqCF  = dataflow.Shape{1, 48, 1, 16}
	seqRow = dataflow.Shape{16, 48}
	img    = dataflow.Shape{1, 4, 9, 11}
)

func act(layer, name string, lo, hi float64, f func(*dataflow.Graph, dataflow.Value) dataflow.Value) layerCase {
	return layerCase{layer: layer, name: name, inputs: []inputSpec{in("x", dataflow.Shape{1, 32, 1, 16}, lo, hi)},
		build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value { return f(g, v[0]) }}
}

func gelu(mode nn.GELUMode) func(*dataflow.Graph, dataflow.Value) dataflow.Value {
	return func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return nn.GELU(g, x, mode) }
}

// layerCases covers every layer of package nn, in each of its forms.
// Inputs reach the ranges the layers are built for, the ones a naive
// composition would overflow on included: logits of ±2000 before the
// softmax, pre-norm values of ±20000, a linear output past the 32752 cliff.
func layerCases() []layerCase {
	linear := func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
		d := w.dense("fc", 24, 48, true)
		return nn.Linear(g, v[0], d.W, d.B)
	}
	bn := func(w weights, c int) *nn.BatchNorm {
		return &nn.BatchNorm{
			Gamma: w.uniform("bn.weight", 0.5, 1.5, c), Beta: w.normal("bn.bias", 0.2, c),
			Mean: w.normal("bn.running_mean", 0.1, c), Var: w.uniform("bn.running_var", 0.5, 2, c),
			Epsilon: 1e-5,
		}
	}
	attention := func(causal bool) func(*dataflow.Graph, []dataflow.Value, weights) dataflow.Value {
		return func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
			aw := nn.AttentionWeights{Q: w.dense("q", 8, 8, true), K: w.dense("k", 8, 8, true), V: w.dense("v", 8, 8, true), O: w.dense("o", 8, 8, true)}
			return nn.Attention(g, v[0], aw, nn.AttentionOptions{Heads: 2, Causal: causal})
		}
	}
	embedding := func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
		return nn.Embedding(g, v[0], w.normal("embeddings.word_embeddings.weight", 1, 40, 24))
	}
	return []layerCase{
		{layer: "nn.Linear", name: "1×1 conv", inputs: []inputSpec{in("x", seqCF, -1, 1)}, build: linear},
		{layer: "nn.Linear", name: "matmul", inputs: []inputSpec{in("x", seqRow, -1, 1)}, build: linear},
		{layer: "nn.LinearShift", name: "output past the cliff", inputs: []inputSpec{in("x", dataflow.Shape{8, 80}, 6, 8)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				// Σ of 80 products of about 7·62: outputs near 35000, past
				// the engine's 32752; ShiftFor(·, 8) folds 2⁻² into W.
				wt := w.uniform("fc.weight", 60, 64, 16, 80)
				return nn.LinearShift(g, v[0], wt, nn.Tensor{}, nn.ShiftFor(wt, nn.Tensor{}, 8))
			}},
		{layer: "nn.Conv2D", name: "3×3, batch norm folded", inputs: []inputSpec{in("x", img, -1, 1)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.Conv2D(g, v[0], w.normal("conv.weight", 1.0/6, 8, 4, 3, 3), w.normal("conv.bias", 0.1, 8),
					nn.ConvOptions{Pads: [4]int{1, 1, 1, 1}, BatchNorm: bn(w, 8)})
			}},
		{layer: "nn.Conv2D", name: "strided, grouped, batch norm, shifted for |x| ≤ 1000", inputs: []inputSpec{in("x", dataflow.Shape{1, 8, 10, 12}, -1000, 1000)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.Conv2D(g, v[0], w.normal("conv.weight", 1, 8, 4, 3, 3), nn.Tensor{},
					nn.ConvOptions{Strides: [2]int{2, 2}, Pads: [4]int{1, 1, 1, 1}, Groups: 2, BatchNorm: bn(w, 8), Bound: 1000})
			}},
		{layer: "nn.LayerNorm", name: "built, rows, |x| ≤ 20000", inputs: []inputSpec{signed("x", seqRow, 0.5, 20000)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.LayerNorm(g, v[0], w.uniform("ln.weight", 0.5, 1.5, 48), w.normal("ln.bias", 0.1, 48), nn.NormOptions{Epsilon: 1e-5})
			}},
		{layer: "nn.LayerNorm", name: "built, channel-first, ε = 1e-12", inputs: []inputSpec{in("x", seqCF, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.LayerNorm(g, v[0], w.uniform("ln.weight", 0.5, 1.5, 48), w.normal("ln.bias", 0.1, 48), nn.NormOptions{Epsilon: 1e-12})
			}},
		{layer: "nn.LayerNorm", name: "native", inputs: []inputSpec{in("x", seqCF, -8, 8)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.LayerNorm(g, v[0], w.uniform("ln.weight", 0.5, 1.5, 48), w.normal("ln.bias", 0.1, 48), nn.NormOptions{Epsilon: 1e-4, Native: true})
			}},
		{layer: "nn.RMSNorm", name: "rows, |x| ≤ 20000", inputs: []inputSpec{signed("x", seqRow, 0.5, 20000)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.RMSNorm(g, v[0], w.uniform("norm.weight", 0.5, 1.5, 48), nn.NormOptions{Epsilon: 1e-6})
			}},
		act("nn.ReLU", "", -4, 4, nn.ReLU),
		act("nn.GELU", "native exact", -8, 8, gelu(nn.GELUExact)),
		act("nn.GELU", "native tanh", -8, 8, gelu(nn.GELUNativeTanh)),
		act("nn.GELU", "tanh, built", -10, 10, gelu(nn.GELUTanh)),
		act("nn.GELU", "sigmoid, built", -8, 8, gelu(nn.GELUSigmoid)),
		act("nn.SiLU", "", -8, 8, nn.SiLU),
		{layer: "nn.Softmax", name: "rows, logits ±2000", inputs: []inputSpec{in("x", dataflow.Shape{8, 64}, -2000, 2000)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value { return nn.Softmax(g, v[0], -1) }},
		{layer: "nn.Softmax", name: "channel axis", inputs: []inputSpec{in("x", dataflow.Shape{1, 32, 1, 16}, -6, 6)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value { return nn.Softmax(g, v[0], 1) }},
		{layer: "nn.MaxPool2D", name: "3×3, stride 2, pad 1", inputs: []inputSpec{in("x", img, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.MaxPool2D(g, v[0], 3, 2, 1)
			}},
		{layer: "nn.MaxPool2D", name: "2×2, stride 2", inputs: []inputSpec{in("x", dataflow.Shape{1, 4, 8, 12}, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.MaxPool2D(g, v[0], 2, 2, 0)
			}},
		{layer: "nn.AvgPool2D", name: "3×3, stride 2, pad 1", inputs: []inputSpec{in("x", img, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.AvgPool2D(g, v[0], 3, 2, 1)
			}},
		{layer: "nn.GlobalAvgPool", name: "after a ReLU", inputs: []inputSpec{in("x", dataflow.Shape{1, 8, 6, 7}, 0, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.GlobalAvgPool(g, v[0])
			}},
		{layer: "nn.Residual", inputs: []inputSpec{in("x", seqCF, -4, 4), in("y", seqCF, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.Residual(g, v[0], v[1])
			}},
		// Attention is small: its bound composes the worst cases of four
		// contractions and grows with their lengths (at 32 features and 16
		// positions it is above 1 % of every output on sim, near 100 % on
		// sim-narrow).
		{layer: "nn.Attention", name: "2 heads of 4 features, 8 positions", inputs: []inputSpec{in("x", dataflow.Shape{1, 8, 1, 8}, -1, 1)}, build: attention(false)},
		{layer: "nn.Attention", name: "2 heads of 4 features, 8 positions, causal", inputs: []inputSpec{in("x", dataflow.Shape{1, 8, 1, 8}, -1, 1)}, build: attention(true)},
		{layer: "nn.Embedding", name: "one-hot 1×1 conv", inputs: []inputSpec{oneHot("tokens", 40, 16, false)}, build: embedding},
		{layer: "nn.Embedding", name: "one-hot matmul", inputs: []inputSpec{oneHot("tokens", 40, 16, true)}, build: embedding},
	}
}

// CheckLayers runs every layer of package nn on dev — each built into a
// graph with seeded weights, lowered for the device's target and run on
// seeded inputs — and compares each output element with dataflow.Eval of
// the same graph, within a bound derived by a forward error analysis from
// the op suite's own per-op bounds (docs/SHIMTEST.md derives it). A
// result's Op is the nn function ("nn.Linear"), its Status the weakest of
// its ops' statuses on the target and MIL the registry's MIL names of
// those ops. Like Check, it never panics on a device failure.
func CheckLayers(dev shim.Device) []Result {
	info := dev.Info()
	var out []Result
	for i, c := range layerCases() {
		out = append(out, runLayer(dev, info, c, uint64(1000+i)))
	}
	return out
}

func runLayer(dev shim.Device, info shim.Info, c layerCase, seed uint64) (res Result) {
	res = Result{Op: c.layer, Case: c.name, Evidence: "a composite of the registry's ops, each checked by the op cases"}
	fail := func(err error) Result {
		res.Pass, res.Error = false, err.Error()
		return res
	}
	rng := rand.New(rand.NewPCG(seed, 0x1a7e5))
	g := dataflow.New()
	vals := make([]dataflow.Value, len(c.inputs))
	host := map[string][]float64{}
	dev32 := make([][]float32, len(c.inputs))
	for i, s := range c.inputs {
		vals[i] = g.Input(s.name, s.shape)
		host[s.name], dev32[i] = draw(rng, s)
	}
	out := c.build(g, vals, weights{rng})
	g.Output("out", out)
	if err := g.Err(); err != nil {
		return fail(err)
	}
	res.Status, res.MIL = layerStatus(g, info.Target.Name)
	an, err := propagate(g, host, numericsOf(narrow(info), approximate(info)))
	if err != nil {
		return fail(err)
	}
	want, err := dataflow.Eval(g, host)
	if err != nil {
		return fail(err)
	}
	id := g.Outputs()[0].Node
	if !slices.Equal(want["out"], an.vals[id]) {
		return fail(fmt.Errorf("shimtest: internal: the node-by-node evaluation of %s differs from dataflow.Eval", c.layer))
	}
	got, err := runOnDevice(dev, info.Target, g, dev32, len(want["out"]))
	if err != nil {
		return fail(err)
	}
	return compare(res, got, want["out"], an.errs[id])
}

// layerStatus is the weakest status on target of the ops in g (rejected
// before decomposed before native) and the registry's MIL names of them.
func layerStatus(g *dataflow.Graph, target string) (string, string) {
	worst := lower.Native
	var mils []string
	for _, n := range g.Nodes() {
		if n.Op == dataflow.OpInput || n.Op == dataflow.OpConst {
			continue
		}
		cap, ok := lower.CapabilityOf(n.Op)
		if !ok {
			return "unregistered", ""
		}
		if s := cap.StatusOn(target); s > worst {
			worst = s
		}
		if !slices.Contains(mils, cap.MIL) {
			mils = append(mils, cap.MIL)
		}
	}
	slices.Sort(mils)
	return worst.String(), strings.Join(mils, ", ")
}

// draw gives an input's host values (fp16, normal or zero, as Eval sees
// them) and the device's float32 copy.
func draw(rng *rand.Rand, s inputSpec) ([]float64, []float32) {
	var xs []float64
	if s.gen != nil {
		xs = s.gen(rng)
	} else {
		xs = make([]float64, s.shape.Size())
		for j := range xs {
			v := s.lo + (s.hi-s.lo)*rng.Float64()
			if s.signed && rng.IntN(2) == 0 {
				v = -v
			}
			xs[j] = v
		}
	}
	x32 := make([]float32, len(xs))
	for j, v := range xs {
		v = fp16.Round64(v) // Eval sees exactly what the device sees
		if math.Abs(v) < fp16.MinNormal {
			v = 0 // inputs are never subnormal: the engine may flush them
		}
		xs[j], x32[j] = v, float32(v)
	}
	return xs, x32
}

// compare checks got against want within bound element by element and
// records the worst element (in fp16 ulps of the exact value) and the
// largest error-to-bound ratio in res. A non-finite bound is a failure of
// the analysis, never a pass; a zero bound asks for the exact value.
func compare(res Result, got []float32, want, bound []float64) Result {
	res.Elements = len(got)
	res.Pass = true
	worst := -1.0
	res.Detects = math.MaxFloat64
	for j, w := range want {
		d := float64(got[j])
		if math.IsNaN(d) {
			res.Pass, res.Error = false, fmt.Sprintf("shimtest: element %d is NaN, want %g", j, w)
			return res
		}
		b := bound[j]
		if math.IsInf(b, 0) || math.IsNaN(b) {
			res.Pass, res.Error = false, fmt.Sprintf("shimtest: element %d (want %g) has no finite error bound: the inputs are outside what the analysis can bound", j, w)
			return res
		}
		errAbs := math.Abs(d - w)
		if d != 0 {
			res.Detects = math.Min(res.Detects, (b+errAbs)/math.Abs(d))
		}
		ulps := errAbs / ulp16(w)
		if ulps > worst {
			worst = ulps
			res.MaxULPs, res.BoundULPs = ulps, b/ulp16(w)
		}
		if b > 0 {
			res.MaxRatio = math.Max(res.MaxRatio, errAbs/b)
		}
		if errAbs > b && res.Error == "" {
			res.Pass = false
			res.Error = fmt.Sprintf("element %d: got %g, want %g ± %.3g", j, d, w, b)
		}
	}
	return res
}
