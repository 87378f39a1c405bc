package shimtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
)

// ruleCase is one propagation rule on random operands: the rule's bound
// must cover the exact op's change when every operand element moves by
// any amount within its bound (tried at random and at the corners ±e).
type ruleCase struct {
	name   string
	shapes []dataflow.Shape
	lo, hi []float64 // operand ranges
	emax   float64   // operand bounds are drawn in [0, emax·|x|]
	build  func(g *dataflow.Graph, in []dataflow.Value) dataflow.Value
	rule   func(n *dataflow.Node, vals, errs []operand) []float64
}

func binaryRule(n *dataflow.Node, vals, errs []operand) []float64 { return binaryBound(n, vals, errs) }

func TestPropagationRulesAreBounds(t *testing.T) {
	row, col := dataflow.Shape{4, 8}, dataflow.Shape{4, 1}
	bin := func(name string, lo, hi []float64, f func(*dataflow.Graph, dataflow.Value, dataflow.Value) dataflow.Value) ruleCase {
		return ruleCase{name: name, shapes: []dataflow.Shape{row, col}, lo: lo, hi: hi, emax: 0.05,
			build: func(g *dataflow.Graph, in []dataflow.Value) dataflow.Value { return f(g, in[0], in[1]) }, rule: binaryRule}
	}
	mono := func(op dataflow.Op, lo, hi float64, f func(*dataflow.Graph, dataflow.Value) dataflow.Value) ruleCase {
		return ruleCase{name: string(op), shapes: []dataflow.Shape{row}, lo: []float64{lo}, hi: []float64{hi}, emax: 0.05,
			build: func(g *dataflow.Graph, in []dataflow.Value) dataflow.Value { return f(g, in[0]) },
			rule: func(n *dataflow.Node, vals, errs []operand) []float64 {
				return unaryBound(op, vals[0].data, errs[0].data)
			}}
	}
	cases := []ruleCase{
		bin("add", []float64{-4, -4}, []float64{4, 4}, (*dataflow.Graph).Add),
		bin("sub", []float64{-4, -4}, []float64{4, 4}, (*dataflow.Graph).Sub),
		bin("mul", []float64{-4, -4}, []float64{4, 4}, (*dataflow.Graph).Mul),
		bin("div", []float64{-4, 0.5}, []float64{4, 4}, (*dataflow.Graph).Div),
		bin("pow", []float64{0.25, -2}, []float64{4, 2}, (*dataflow.Graph).Pow),
		bin("maximum", []float64{-4, -4}, []float64{4, 4}, (*dataflow.Graph).Maximum),
		bin("minimum", []float64{-4, -4}, []float64{4, 4}, (*dataflow.Graph).Minimum),
		mono(dataflow.OpSqrt, 0.01, 100, (*dataflow.Graph).Sqrt),
		mono(dataflow.OpRsqrt, 0.01, 100, (*dataflow.Graph).Rsqrt),
		mono(dataflow.OpExp, -4, 4, (*dataflow.Graph).Exp),
		mono(dataflow.OpLog, 0.01, 100, (*dataflow.Graph).Log),
		mono(dataflow.OpTanh, -3, 3, (*dataflow.Graph).Tanh),
		mono(dataflow.OpSigmoid, -6, 6, (*dataflow.Graph).Sigmoid),
		{name: "reduce_max", shapes: []dataflow.Shape{row}, lo: []float64{-4}, hi: []float64{4}, emax: 0.5,
			build: func(g *dataflow.Graph, in []dataflow.Value) dataflow.Value { return g.ReduceMax(in[0], []int{1}, true) },
			rule:  func(n *dataflow.Node, vals, errs []operand) []float64 { return maxBound(n, vals[0], errs[0].data) }},
		{name: "softmax", shapes: []dataflow.Shape{row}, lo: []float64{-6}, hi: []float64{6}, emax: 0.1,
			build: func(g *dataflow.Graph, in []dataflow.Value) dataflow.Value { return g.Softmax(in[0], 1) },
			rule:  func(n *dataflow.Node, vals, errs []operand) []float64 { return softmaxBound(n, vals[0], errs[0].data) }},
		{name: "layer_norm", shapes: []dataflow.Shape{row, {8}, {8}}, lo: []float64{-4, 0.5, -1}, hi: []float64{4, 1.5, 1}, emax: 0.02,
			build: func(g *dataflow.Graph, in []dataflow.Value) dataflow.Value {
				return g.LayerNorm(in[0], []int{1}, in[1], in[2], 1e-3)
			},
			rule: layerNormBound},
	}
	rng := rand.New(rand.NewPCG(13, 7))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := dataflow.New()
			in := make([]dataflow.Value, len(c.shapes))
			for i, s := range c.shapes {
				in[i] = g.Input(string(rune('a'+i)), s)
			}
			y := c.build(g, in)
			g.Output("y", y)
			require.NoError(t, g.Err())
			n := g.Nodes()[y.ID()]
			for trial := range 20 {
				vals, errs := make([]operand, len(c.shapes)), make([]operand, len(c.shapes))
				for i, s := range c.shapes {
					v, e := make([]float64, s.Size()), make([]float64, s.Size())
					for j := range v {
						v[j] = c.lo[i] + (c.hi[i]-c.lo[i])*rng.Float64()
						e[j] = c.emax * math.Abs(v[j]) * rng.Float64()
					}
					vals[i], errs[i] = operand{v, s}, operand{e, s}
				}
				exact, err := apply(n, n.Attrs, vals)
				require.NoError(t, err)
				bound := c.rule(n, vals, errs)
				for range 10 {
					moved := make([]operand, len(vals))
					for i, x := range vals {
						d := make([]float64, len(x.data))
						for j := range d {
							s := 2*rng.Float64() - 1
							if trial%2 == 0 { // corners
								s = math.Copysign(1, s)
							}
							d[j] = x.data[j] + s*errs[i].data[j]
						}
						moved[i] = operand{d, x.shape}
					}
					got, err := apply(n, n.Attrs, moved)
					require.NoError(t, err)
					for j := range got {
						diff := math.Abs(got[j] - exact[j])
						require.LessOrEqual(t, diff, bound[j]*(1+1e-9)+1e-15, "%s element %d: moved by %g, bound %g", c.name, j, diff, bound[j])
					}
				}
			}
		})
	}
}

// The GELU rule uses 1.13 as a Lipschitz constant of every mode.
func TestGeluLipschitz(t *testing.T) {
	for _, mode := range []dataflow.GeluMode{dataflow.GeluExact, dataflow.GeluTanh, dataflow.GeluSigmoid} {
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, 20001})
		g.Output("y", g.Gelu(x, mode))
		xs := make([]float64, 20001)
		for i := range xs {
			xs[i] = -10 + float64(i)*1e-3
		}
		out, err := dataflow.Eval(g, map[string][]float64{"x": xs})
		require.NoError(t, err)
		y := out["y"]
		for i := 1; i < len(y); i++ {
			require.LessOrEqual(t, math.Abs(y[i]-y[i-1])/1e-3, geluLipschitz, "mode %s at x = %g", mode, xs[i])
		}
	}
}

// The layer bound takes each op's local allowance from opULPs; the op
// cases must use the same figures, so that a device that meets the op
// bounds meets the layer bounds.
func TestOpULPsMatchOpCases(t *testing.T) {
	for _, c := range cases() {
		if c.bound == rounded {
			require.Equal(t, opULPs[c.op], c.ulps, "op %s", c.op)
		}
	}
	for op := range opULPs {
		found := false
		for _, c := range cases() {
			found = found || (c.op == op && c.bound == rounded)
		}
		require.True(t, found, "opULPs lists %s, which no rounded op case checks", op)
	}
}

// The node-by-node evaluation is dataflow.Eval, and a graph of exact ops
// on fp16 inputs has a zero bound.
func TestPropagateExactOps(t *testing.T) {
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{2, 8})
	y := g.Relu(g.ReduceMax(g.Transpose(g.Pad(x, []int{0, 0, 1, 1}, -65504), []int{1, 0}), []int{0}, true))
	g.Output("y", y)
	xs := make([]float64, 16)
	for i := range xs {
		xs[i] = float64(i%5) - 2
	}
	an, err := propagate(g, map[string][]float64{"x": xs}, numericsOf(true, true))
	require.NoError(t, err)
	want, err := dataflow.Eval(g, map[string][]float64{"x": xs})
	require.NoError(t, err)
	require.Equal(t, want["y"], an.vals[y.ID()])
	for _, e := range an.errs[y.ID()] {
		require.Zero(t, e)
	}
}
