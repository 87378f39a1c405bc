package dataflow_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
)

// gradCase is one graph whose gradient Grad must give: inputs x0, x1, …
// of the given shapes, drawn by gen (standard normal when nil), and the
// value build computes from them.
type gradCase struct {
	name   string
	shapes []dataflow.Shape
	gen    func(r *rand.Rand) float64
	build  func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value
}

func positive(r *rand.Rand) float64 { return 0.5 + r.Float64() }

// awayFromZero keeps kinks (relu, abs, max) more than 0.1 from every
// input, far beyond the finite-difference step.
func awayFromZero(r *rand.Rand) float64 {
	v := 0.1 + r.Float64()
	if r.IntN(2) == 0 {
		return -v
	}
	return v
}

func sh(d ...int) dataflow.Shape { return dataflow.Shape(d) }

func unary(f func(g *dataflow.Graph, x dataflow.Value) dataflow.Value) func(*dataflow.Graph, []dataflow.Value) dataflow.Value {
	return func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return f(g, x[0]) }
}

func conv(opts dataflow.Conv2DOptions) func(*dataflow.Graph, []dataflow.Value) dataflow.Value {
	return func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Conv2D(x[0], x[1], opts) }
}

func gradCases() []gradCase {
	mm := func(tx, ty bool) func(*dataflow.Graph, []dataflow.Value) dataflow.Value {
		return func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.MatMul(x[0], x[1], tx, ty) }
	}
	return []gradCase{
		{name: "add broadcast row", shapes: []dataflow.Shape{sh(3, 4), sh(4)}, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Add(x[0], x[1]) }},
		{name: "add broadcast middle", shapes: []dataflow.Shape{sh(2, 3, 4), sh(3, 1)}, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Add(x[0], x[1]) }},
		{name: "sub", shapes: []dataflow.Shape{sh(3, 1), sh(1, 4)}, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Sub(x[0], x[1]) }},
		{name: "mul", shapes: []dataflow.Shape{sh(3, 4), sh(3, 1)}, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Mul(x[0], x[1]) }},
		{name: "mul by scalar", shapes: []dataflow.Shape{sh(3, 4)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Mul(x, g.Scalar(0.75)) })},
		{name: "div", shapes: []dataflow.Shape{sh(3, 4), sh(4)}, gen: positive, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Div(x[0], x[1]) }},
		{name: "pow", shapes: []dataflow.Shape{sh(3, 4), sh(3, 4)}, gen: positive, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Pow(x[0], x[1]) }},
		{name: "maximum", shapes: []dataflow.Shape{sh(3, 4), sh(4)}, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Maximum(x[0], x[1]) }},
		{name: "minimum", shapes: []dataflow.Shape{sh(3, 4), sh(3, 4)}, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Minimum(x[0], x[1]) }},
		{name: "neg", shapes: []dataflow.Shape{sh(5)}, build: unary((*dataflow.Graph).Neg)},
		{name: "abs", shapes: []dataflow.Shape{sh(2, 5)}, gen: awayFromZero, build: unary((*dataflow.Graph).Abs)},
		{name: "square", shapes: []dataflow.Shape{sh(2, 5)}, build: unary((*dataflow.Graph).Square)},
		{name: "sqrt", shapes: []dataflow.Shape{sh(2, 5)}, gen: positive, build: unary((*dataflow.Graph).Sqrt)},
		{name: "rsqrt", shapes: []dataflow.Shape{sh(2, 5)}, gen: positive, build: unary((*dataflow.Graph).Rsqrt)},
		{name: "exp", shapes: []dataflow.Shape{sh(2, 5)}, build: unary((*dataflow.Graph).Exp)},
		{name: "log", shapes: []dataflow.Shape{sh(2, 5)}, gen: positive, build: unary((*dataflow.Graph).Log)},
		{name: "tanh", shapes: []dataflow.Shape{sh(2, 5)}, build: unary((*dataflow.Graph).Tanh)},
		{name: "sigmoid", shapes: []dataflow.Shape{sh(2, 5)}, build: unary((*dataflow.Graph).Sigmoid)},
		{name: "relu", shapes: []dataflow.Shape{sh(3, 5)}, gen: awayFromZero, build: unary((*dataflow.Graph).Relu)},
		{name: "gelu tanh", shapes: []dataflow.Shape{sh(3, 5)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Gelu(x, dataflow.GeluTanh) })},
		{name: "gelu sigmoid", shapes: []dataflow.Shape{sh(3, 5)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Gelu(x, dataflow.GeluSigmoid) })},
		{name: "matmul", shapes: []dataflow.Shape{sh(3, 4), sh(4, 5)}, build: mm(false, false)},
		{name: "matmul transpose y", shapes: []dataflow.Shape{sh(3, 4), sh(5, 4)}, build: mm(false, true)},
		{name: "matmul transpose x", shapes: []dataflow.Shape{sh(4, 3), sh(4, 5)}, build: mm(true, false)},
		{name: "matmul transpose both", shapes: []dataflow.Shape{sh(4, 3), sh(5, 4)}, build: mm(true, true)},
		{name: "matmul batch broadcast", shapes: []dataflow.Shape{sh(2, 3, 4), sh(4, 5)}, build: mm(false, false)},
		{name: "matmul batch both", shapes: []dataflow.Shape{sh(2, 1, 3, 4), sh(3, 5, 4)}, build: mm(false, true)},
		{name: "conv 3x3 pad 1", shapes: []dataflow.Shape{sh(2, 3, 6, 6), sh(4, 3, 3, 3)}, build: conv(dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}})},
		{name: "conv 1x1", shapes: []dataflow.Shape{sh(2, 3, 4, 5), sh(4, 3, 1, 1)}, build: conv(dataflow.Conv2DOptions{})},
		{name: "conv stride 2", shapes: []dataflow.Shape{sh(1, 2, 7, 6), sh(3, 2, 3, 3)}, build: conv(dataflow.Conv2DOptions{Strides: [2]int{2, 2}, Pads: [4]int{1, 1, 1, 1}})},
		{name: "conv asymmetric pad and stride", shapes: []dataflow.Shape{sh(1, 2, 7, 7), sh(2, 2, 2, 3)}, build: conv(dataflow.Conv2DOptions{Strides: [2]int{2, 3}, Pads: [4]int{0, 1, 2, 0}})},
		{name: "conv dilation 2", shapes: []dataflow.Shape{sh(1, 2, 7, 7), sh(2, 2, 3, 3)}, build: conv(dataflow.Conv2DOptions{Dilations: [2]int{2, 2}, Pads: [4]int{2, 2, 2, 2}})},
		{name: "conv depthwise constant weight", shapes: []dataflow.Shape{sh(2, 4, 6, 6)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value {
			w := make([]float64, 4*9)
			for i := range w {
				w[i] = float64(i%7) / 7
			}
			return g.Conv2D(x, g.Const("dw", sh(4, 1, 3, 3), w), dataflow.Conv2DOptions{Strides: [2]int{2, 2}, Pads: [4]int{1, 1, 1, 1}, Groups: 4})
		})},
		{name: "reduce_sum axis", shapes: []dataflow.Shape{sh(3, 4, 2)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.ReduceSum(x, []int{1}, false) })},
		{name: "reduce_sum outer axes", shapes: []dataflow.Shape{sh(3, 4, 2)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.ReduceSum(x, []int{0, 2}, true) })},
		{name: "reduce_mean all", shapes: []dataflow.Shape{sh(3, 4)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.ReduceMean(x, nil, false) })},
		{name: "reduce_max rows", shapes: []dataflow.Shape{sh(3, 5)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.ReduceMax(x, []int{1}, false) })},
		{name: "reduce_max all", shapes: []dataflow.Shape{sh(3, 5)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.ReduceMax(x, nil, true) })},
		{name: "softmax last", shapes: []dataflow.Shape{sh(3, 5)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Softmax(x, -1) })},
		{name: "softmax first", shapes: []dataflow.Shape{sh(3, 5)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Softmax(x, 0) })},
		{name: "layer_norm affine", shapes: []dataflow.Shape{sh(3, 6), sh(6), sh(6)}, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value {
			return g.LayerNorm(x[0], []int{-1}, x[1], x[2], 1e-5)
		}},
		{name: "layer_norm two axes", shapes: []dataflow.Shape{sh(2, 3, 4)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value {
			return g.LayerNorm(x, []int{1, 2}, dataflow.Value{}, dataflow.Value{}, 1e-3)
		})},
		{name: "reshape", shapes: []dataflow.Shape{sh(3, 4)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Reshape(x, sh(2, 6)) })},
		{name: "transpose", shapes: []dataflow.Shape{sh(2, 3, 4)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Transpose(x, []int{2, 0, 1}) })},
		{name: "concat", shapes: []dataflow.Shape{sh(2, 3), sh(2, 1), sh(2, 2)}, build: func(g *dataflow.Graph, x []dataflow.Value) dataflow.Value { return g.Concat(1, x...) }},
		{name: "slice", shapes: []dataflow.Shape{sh(4, 5)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Slice(x, []int{1, 2}, []int{2, -1}) })},
		{name: "pad", shapes: []dataflow.Shape{sh(2, 3)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Pad(x, []int{1, 0, 2, 1}, 3) })},
		{name: "max pool 2x2", shapes: []dataflow.Shape{sh(1, 2, 4, 6)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return nn.MaxPool2D(g, x, 2, 2, 0) })},
		{name: "max pool 3x3 stride 2 pad 1", shapes: []dataflow.Shape{sh(1, 2, 5, 5)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return nn.MaxPool2D(g, x, 3, 2, 1) })},
		{name: "avg pool", shapes: []dataflow.Shape{sh(1, 3, 4, 4)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return nn.AvgPool2D(g, x, 2, 2, 0) })},
		{name: "global avg pool", shapes: []dataflow.Shape{sh(2, 3, 3, 4)}, build: unary(nn.GlobalAvgPool)},
		{name: "two uses of one value", shapes: []dataflow.Shape{sh(3, 4)}, build: unary(func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Mul(g.Tanh(x), g.Exp(x)) })},
	}
}

// TestGradFiniteDifferences checks every rule in float64 against central
// differences of the same graph through Eval. The scalar is y = Σ out⊙R
// with a random probe R, so every output element carries its own weight.
// With step h = 1e-5·max(1, |x|) the difference's truncation error is
// h²/6·|y”'| ≈ 2e-11 and its rounding error about 2⁻⁵²·|y|/h ≈ 1e-11·|y|
// (|y|, |y”'| are O(10) here), so a bound of 1e-6·(1 + |g|) leaves four
// orders of magnitude for larger derivatives and still catches any wrong
// rule (a wrong rule is off by O(1)).
func TestGradFiniteDifferences(t *testing.T) {
	for ci, c := range gradCases() {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 7))
			gen := c.gen
			if gen == nil {
				gen = func(r *rand.Rand) float64 { return r.NormFloat64() }
			}
			g := dataflow.New()
			xs := make([]dataflow.Value, len(c.shapes))
			inputs := map[string][]float64{}
			for i, s := range c.shapes {
				name := fmt.Sprintf("x%d", i)
				xs[i] = g.Input(name, s)
				d := make([]float64, s.Size())
				for j := range d {
					d[j] = gen(rng)
				}
				inputs[name] = d
			}
			out := c.build(g, xs)
			probe := make([]float64, out.Shape().Size())
			for i := range probe {
				probe[i] = rng.NormFloat64()
			}
			y := g.ReduceSum(g.Mul(out, g.Const("probe", out.Shape(), probe)), nil, false)
			first := g.NumNodes()
			grads := g.Grad(y, xs...)
			g.Output("y", y)
			for i, gv := range grads {
				g.Output(fmt.Sprintf("g%d", i), gv)
			}
			if err := g.Err(); err != nil {
				t.Fatal(err)
			}
			for _, n := range g.Nodes()[first:] {
				if n.Op == dataflow.OpReduceSum {
					t.Fatalf("the backward pass holds a reduce_sum (node %d); every sum must be a matmul against ones", n.ID)
				}
			}
			res, err := dataflow.Eval(g, inputs)
			if err != nil {
				t.Fatal(err)
			}
			f := func() float64 {
				r, err := dataflow.Eval(g, inputs)
				if err != nil {
					t.Fatal(err)
				}
				return r["y"][0]
			}
			for i := range xs {
				name := fmt.Sprintf("x%d", i)
				an := res[fmt.Sprintf("g%d", i)]
				if len(an) != len(inputs[name]) {
					t.Fatalf("gradient of %s has %d elements, want %d", name, len(an), len(inputs[name]))
				}
				worst := 0.0
				for j := range inputs[name] {
					x0 := inputs[name][j]
					h := 1e-5 * math.Max(1, math.Abs(x0))
					inputs[name][j] = x0 + h
					up := f()
					inputs[name][j] = x0 - h
					down := f()
					inputs[name][j] = x0
					fd := (up - down) / (2 * h)
					e := math.Abs(fd-an[j]) / (1 + math.Abs(an[j]))
					worst = math.Max(worst, e)
					if e > 1e-6 {
						t.Fatalf("d y/d %s[%d]: Grad %.10g, finite difference %.10g", name, j, an[j], fd)
					}
				}
				t.Logf("%s: %d elements, worst scaled error %.2g", name, len(an), worst)
			}
		})
	}
}

func TestGradErrors(t *testing.T) {
	t.Run("vector y", func(t *testing.T) {
		g := dataflow.New()
		x := g.Input("x", sh(3))
		gr := g.Grad(g.Exp(x), x)
		if gr[0].Valid() || !errors.Is(g.Err(), dataflow.ErrShape) {
			t.Fatalf("got %v, %v; want a zero Value and ErrShape", gr[0], g.Err())
		}
	})
	t.Run("gelu exact", func(t *testing.T) {
		g := dataflow.New()
		x := g.Input("x", sh(1))
		g.Grad(g.Gelu(x, dataflow.GeluExact), x)
		if !errors.Is(g.Err(), dataflow.ErrInvalid) {
			t.Fatalf("err %v, want ErrInvalid", g.Err())
		}
	})
	t.Run("grouped conv weight", func(t *testing.T) {
		g := dataflow.New()
		x := g.Input("x", sh(1, 2, 3, 3))
		w := g.Input("w", sh(2, 1, 1, 1))
		y := g.ReduceSum(g.Conv2D(x, w, dataflow.Conv2DOptions{Groups: 2}), nil, false)
		g.Grad(y, w)
		if !errors.Is(g.Err(), dataflow.ErrInvalid) {
			t.Fatalf("err %v, want ErrInvalid", g.Err())
		}
	})
	t.Run("other graph", func(t *testing.T) {
		g, h := dataflow.New(), dataflow.New()
		x := g.Input("x", sh(1))
		z := h.Input("z", sh(1))
		g.Grad(g.Exp(x), z)
		if !errors.Is(g.Err(), dataflow.ErrInvalid) {
			t.Fatalf("err %v, want ErrInvalid", g.Err())
		}
	})
	t.Run("no path is zero", func(t *testing.T) {
		g := dataflow.New()
		x := g.Input("x", sh(1))
		z := g.Input("z", sh(2))
		gr := g.Grad(g.Exp(x), z)
		g.Output("gz", gr[0])
		res, err := dataflow.Eval(g, map[string][]float64{"x": {1}, "z": {1, 2}})
		if err != nil || res["gz"][0] != 0 || res["gz"][1] != 0 {
			t.Fatalf("got %v, %v; want zeros", res, err)
		}
	})
	t.Run("sticky", func(t *testing.T) {
		g := dataflow.New()
		x := g.Input("x", sh(2))
		g.Add(x, g.Input("y", sh(3)))
		if gr := g.Grad(g.ReduceSum(x, nil, false), x); gr[0].Valid() {
			t.Fatal("Grad after an error returned a valid Value")
		}
	})
}

// TestGradSaturate: with saturation every backward contraction is clamped,
// so an overflow becomes the finite limit instead of ±Inf.
func TestGradSaturate(t *testing.T) {
	g := dataflow.New()
	x := g.Input("x", sh(1, 2))
	w := g.Input("w", sh(2, 1))
	y := g.Reshape(g.MatMul(x, w, false, false), dataflow.Shape{})
	gr := g.GradWith(dataflow.GradOptions{Saturate: 100}, g.Mul(y, g.Scalar(1e6)), x)
	g.Output("gx", gr[0])
	res, err := dataflow.Eval(g, map[string][]float64{"x": {1, 2}, "w": {1, -3}})
	if err != nil {
		t.Fatal(err)
	}
	if res["gx"][0] != 100 || res["gx"][1] != -100 {
		t.Fatalf("gx = %v, want [100 -100]", res["gx"])
	}
}
