package nntest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/shimtest"
)

// in and signed are inputs drawn in [lo, hi], or |x| in [lo, hi] with a
// random sign.
func in(name string, shape dataflow.Shape, lo, hi float64) shimtest.Input {
	return shimtest.Input{Name: name, Shape: shape, Lo: lo, Hi: hi}
}

func signed(name string, shape dataflow.Shape, lo, hi float64) shimtest.Input {
	return shimtest.Input{Name: name, Shape: shape, Lo: lo, Hi: hi, Signed: true}
}

// layerCase is one nn layer on seeded inputs and weights.
type layerCase struct {
	layer  string // the nn function, "nn.Linear"
	name   string
	inputs []shimtest.Input
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
func oneHot(name string, v, t int, rows bool) shimtest.Input {
	shape := dataflow.Shape{1, v, 1, t}
	if rows {
		shape = dataflow.Shape{t, v}
	}
	return shimtest.Input{Name: name, Shape: shape, Gen: func(rng *rand.Rand) []float64 {
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
	return layerCase{layer: layer, name: name, inputs: []shimtest.Input{in("x", dataflow.Shape{1, 32, 1, 16}, lo, hi)},
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
		{layer: "nn.Linear", name: "1×1 conv", inputs: []shimtest.Input{in("x", seqCF, -1, 1)}, build: linear},
		{layer: "nn.Linear", name: "matmul", inputs: []shimtest.Input{in("x", seqRow, -1, 1)}, build: linear},
		{layer: "nn.LinearShift", name: "output past the cliff", inputs: []shimtest.Input{in("x", dataflow.Shape{8, 80}, 6, 8)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				// Σ of 80 products of about 7·62: outputs near 35000, past
				// the engine's 32752; ShiftFor(·, 8) folds 2⁻² into W.
				wt := w.uniform("fc.weight", 60, 64, 16, 80)
				return nn.LinearShift(g, v[0], wt, nn.Tensor{}, nn.ShiftFor(wt, nn.Tensor{}, 8))
			}},
		{layer: "nn.Conv2D", name: "3×3, batch norm folded", inputs: []shimtest.Input{in("x", img, -1, 1)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.Conv2D(g, v[0], w.normal("conv.weight", 1.0/6, 8, 4, 3, 3), w.normal("conv.bias", 0.1, 8),
					nn.ConvOptions{Pads: [4]int{1, 1, 1, 1}, BatchNorm: bn(w, 8)})
			}},
		{layer: "nn.Conv2D", name: "strided, grouped, batch norm, shifted for |x| ≤ 1000", inputs: []shimtest.Input{in("x", dataflow.Shape{1, 8, 10, 12}, -1000, 1000)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.Conv2D(g, v[0], w.normal("conv.weight", 1, 8, 4, 3, 3), nn.Tensor{},
					nn.ConvOptions{Strides: [2]int{2, 2}, Pads: [4]int{1, 1, 1, 1}, Groups: 2, BatchNorm: bn(w, 8), Bound: 1000})
			}},
		{layer: "nn.LayerNorm", name: "built, rows, |x| ≤ 20000", inputs: []shimtest.Input{signed("x", seqRow, 0.5, 20000)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.LayerNorm(g, v[0], w.uniform("ln.weight", 0.5, 1.5, 48), w.normal("ln.bias", 0.1, 48), nn.NormOptions{Epsilon: 1e-5})
			}},
		{layer: "nn.LayerNorm", name: "built, channel-first, ε = 1e-12", inputs: []shimtest.Input{in("x", seqCF, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.LayerNorm(g, v[0], w.uniform("ln.weight", 0.5, 1.5, 48), w.normal("ln.bias", 0.1, 48), nn.NormOptions{Epsilon: 1e-12})
			}},
		{layer: "nn.LayerNorm", name: "native", inputs: []shimtest.Input{in("x", seqCF, -8, 8)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.LayerNorm(g, v[0], w.uniform("ln.weight", 0.5, 1.5, 48), w.normal("ln.bias", 0.1, 48), nn.NormOptions{Epsilon: 1e-4, Native: true})
			}},
		{layer: "nn.RMSNorm", name: "rows, |x| ≤ 20000", inputs: []shimtest.Input{signed("x", seqRow, 0.5, 20000)},
			build: func(g *dataflow.Graph, v []dataflow.Value, w weights) dataflow.Value {
				return nn.RMSNorm(g, v[0], w.uniform("norm.weight", 0.5, 1.5, 48), nn.NormOptions{Epsilon: 1e-6})
			}},
		act("nn.ReLU", "", -4, 4, nn.ReLU),
		act("nn.GELU", "native exact", -8, 8, gelu(nn.GELUExact)),
		act("nn.GELU", "native tanh", -8, 8, gelu(nn.GELUNativeTanh)),
		act("nn.GELU", "tanh, built", -10, 10, gelu(nn.GELUTanh)),
		act("nn.GELU", "sigmoid, built", -8, 8, gelu(nn.GELUSigmoid)),
		act("nn.SiLU", "", -8, 8, nn.SiLU),
		{layer: "nn.Softmax", name: "rows, logits ±2000", inputs: []shimtest.Input{in("x", dataflow.Shape{8, 64}, -2000, 2000)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value { return nn.Softmax(g, v[0], -1) }},
		{layer: "nn.Softmax", name: "channel axis", inputs: []shimtest.Input{in("x", dataflow.Shape{1, 32, 1, 16}, -6, 6)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value { return nn.Softmax(g, v[0], 1) }},
		{layer: "nn.MaxPool2D", name: "3×3, stride 2, pad 1", inputs: []shimtest.Input{in("x", img, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.MaxPool2D(g, v[0], 3, 2, 1)
			}},
		{layer: "nn.MaxPool2D", name: "2×2, stride 2", inputs: []shimtest.Input{in("x", dataflow.Shape{1, 4, 8, 12}, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.MaxPool2D(g, v[0], 2, 2, 0)
			}},
		{layer: "nn.AvgPool2D", name: "3×3, stride 2, pad 1", inputs: []shimtest.Input{in("x", img, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.AvgPool2D(g, v[0], 3, 2, 1)
			}},
		{layer: "nn.GlobalAvgPool", name: "after a ReLU", inputs: []shimtest.Input{in("x", dataflow.Shape{1, 8, 6, 7}, 0, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.GlobalAvgPool(g, v[0])
			}},
		{layer: "nn.Residual", inputs: []shimtest.Input{in("x", seqCF, -4, 4), in("y", seqCF, -4, 4)},
			build: func(g *dataflow.Graph, v []dataflow.Value, _ weights) dataflow.Value {
				return nn.Residual(g, v[0], v[1])
			}},
		// Attention is small: its bound composes the worst cases of four
		// contractions and grows with their lengths (at 32 features and 16
		// positions it is above 1 % of every output on sim, near 100 % on
		// sim-narrow).
		{layer: "nn.Attention", name: "2 heads of 4 features, 8 positions", inputs: []shimtest.Input{in("x", dataflow.Shape{1, 8, 1, 8}, -1, 1)}, build: attention(false)},
		{layer: "nn.Attention", name: "2 heads of 4 features, 8 positions, causal", inputs: []shimtest.Input{in("x", dataflow.Shape{1, 8, 1, 8}, -1, 1)}, build: attention(true)},
		{layer: "nn.Embedding", name: "one-hot 1×1 conv", inputs: []shimtest.Input{oneHot("tokens", 40, 16, false)}, build: embedding},
		{layer: "nn.Embedding", name: "one-hot matmul", inputs: []shimtest.Input{oneHot("tokens", 40, 16, true)}, build: embedding},
	}
}

// CheckLayers runs every layer of package nn on dev — each built into a
// graph with seeded weights, lowered for the device's target and run on
// seeded inputs — and compares each output element with dataflow.Eval of
// the same graph within the bound the conformance suite's error analysis
// derives (shimtest.CheckGraph). A result's Op is the nn function
// ("nn.Linear"). Like shimtest.Check, it never panics on a device failure.
func CheckLayers(dev shim.Device) []shimtest.Result {
	var out []shimtest.Result
	for i, c := range layerCases() {
		out = append(out, shimtest.CheckGraph(dev, c.layer, c.name, c.inputs, uint64(1000+i),
			func(g *dataflow.Graph, v []dataflow.Value, rng *rand.Rand) dataflow.Value {
				return c.build(g, v, weights{rng})
			}))
	}
	return out
}

// Test runs CheckLayers on dev as subtests of t (shimtest.Report).
func Test(t *testing.T, dev shim.Device) {
	t.Helper()
	shimtest.Report(t, dev, CheckLayers(dev))
}
