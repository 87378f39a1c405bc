package dataflow

import (
	"math"
	"slices"
)

// The elementwise unary ops. Each one's facts — its builder below, its
// float64 definition (Eval), its gradient rule (Grad), its attribute check
// (Verify) — are its entry in unaryOps; the rest of the package consults
// that table, so adding such an op is its constant, its builder and its
// entry.
const (
	OpNeg     Op = "neg"
	OpAbs     Op = "abs"
	OpSquare  Op = "square"
	OpSqrt    Op = "sqrt"
	OpRsqrt   Op = "rsqrt"
	OpExp     Op = "exp"
	OpLog     Op = "log"
	OpTanh    Op = "tanh"
	OpSigmoid Op = "sigmoid"
	OpRelu    Op = "relu"
	OpGelu    Op = "gelu"
)

// unaryOp is the descriptor of one elementwise unary op.
type unaryOp struct {
	// eval is the op's meaning on one element, given the node's attributes.
	eval func(a *Attrs) func(float64) float64
	// grad is the adjoint of x from the adjoint gy of the result y (nil:
	// the op has no gradient rule). It may record an error on b.g.
	grad func(b *gradder, x, y, gy Value, a *Attrs) Value
	// attrs keeps of a what the op reads, normalized as its builder
	// stores it (nil: none, Attrs{}).
	attrs func(a Attrs) Attrs
	// check validates the normalized attributes for infer (nil: none).
	check func(op Op, a *Attrs) error
	// show formats the attributes for Graph.String (nil: none).
	show func(a *Attrs) string
}

// fixed is the eval of an op without attributes.
func fixed(f func(float64) float64) func(*Attrs) func(float64) float64 {
	return func(*Attrs) func(float64) float64 { return f }
}

// unaryOps holds every elementwise unary op's descriptor. It is filled
// by init: its gradient rules call the builders, which consult it.
var unaryOps map[Op]unaryOp

func init() {
	unaryOps = map[Op]unaryOp{
		OpNeg: {
			eval: fixed(func(v float64) float64 { return -v }),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value { return b.g.Neg(gy) },
		},
		OpAbs: {
			eval: fixed(math.Abs),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value { return b.g.Mul(gy, b.sign(x)) },
		},
		OpSquare: {
			eval: fixed(func(v float64) float64 { return v * v }),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value {
				g := b.g
				return g.Mul(gy, g.Mul(x, g.Scalar(2)))
			},
		},
		OpSqrt: {
			eval: fixed(math.Sqrt),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value {
				g := b.g
				return g.Div(gy, g.Mul(y, g.Scalar(2)))
			},
		},
		OpRsqrt: {
			eval: fixed(func(v float64) float64 { return 1 / math.Sqrt(v) }),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value {
				g := b.g
				return g.Mul(gy, g.Mul(g.Mul(y, g.Square(y)), g.Scalar(-0.5)))
			},
		},
		OpExp: {
			eval: fixed(math.Exp),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value { return b.g.Mul(gy, y) },
		},
		OpLog: {
			eval: fixed(math.Log),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value { return b.g.Div(gy, x) },
		},
		OpTanh: {
			eval: fixed(math.Tanh),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value {
				g := b.g
				return g.Mul(gy, g.Sub(g.Scalar(1), g.Square(y)))
			},
		},
		OpSigmoid: {
			eval: fixed(sigmoid),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value {
				g := b.g
				return g.Mul(gy, g.Mul(y, g.Sub(g.Scalar(1), y)))
			},
		},
		OpRelu: {
			eval: fixed(func(v float64) float64 { return math.Max(v, 0) }),
			grad: func(b *gradder, x, y, gy Value, _ *Attrs) Value { return b.g.Mul(gy, b.pos(x)) },
		},
		OpGelu: {
			eval: func(a *Attrs) func(float64) float64 { return geluFunc(a.Gelu) },
			grad: func(b *gradder, x, y, gy Value, a *Attrs) Value { return b.gelu(x, gy, a.Gelu) },
			attrs: func(a Attrs) Attrs {
				mode := a.Gelu
				if mode == "" {
					mode = GeluExact
				}
				return Attrs{Gelu: mode}
			},
			check: func(op Op, a *Attrs) error {
				switch a.Gelu {
				case GeluExact, GeluTanh, GeluSigmoid:
					return nil
				}
				return opError(op, ErrInvalid, "unknown mode %q (want %s, %s or %s)", a.Gelu, GeluExact, GeluTanh, GeluSigmoid)
			},
			show: func(a *Attrs) string { return "mode=" + string(a.Gelu) },
		},
	}
}

// UnaryOps returns the elementwise unary ops (those g.Unary builds),
// sorted by name.
func UnaryOps() []Op {
	ops := make([]Op, 0, len(unaryOps))
	for op := range unaryOps {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// ElementwiseArity is the number of operands of an elementwise op: 1 for
// those g.Unary builds, 2 for those g.Binary builds, 0 for any other op.
func ElementwiseArity(op Op) int {
	if _, ok := unaryOps[op]; ok {
		return 1
	}
	if _, ok := binaryOps[op]; ok {
		return 2
	}
	return 0
}

// unary builds an elementwise op of one operand.
func (g *Graph) unary(op Op, attrs Attrs, x Value) Value {
	s, ok := g.operands(op, labelsX, x)
	if !ok {
		return Value{}
	}
	return g.emit(op, attrs, s, x)
}

// Unary builds the elementwise unary op op (one of UnaryOps) on x exactly
// as its own builder does: g.Unary(OpSigmoid, Attrs{}, x) is g.Sigmoid(x)
// and g.Unary(OpGelu, Attrs{Gelu: m}, x) is g.Gelu(x, m). Of attrs it reads
// only what that builder takes. It serves code that rebuilds nodes by op
// (a rewrite pass, an error analysis); an op that is not elementwise unary
// records an error wrapping ErrInvalid.
func (g *Graph) Unary(op Op, attrs Attrs, x Value) Value {
	d, ok := unaryOps[op]
	if !ok {
		if g.usable() {
			g.failf(op, ErrInvalid, "not an elementwise unary op (those are %v)", UnaryOps())
		}
		return Value{}
	}
	a := Attrs{}
	if d.attrs != nil {
		a = d.attrs(attrs)
	}
	return g.unary(op, a, x)
}

// Neg is −x, elementwise.
func (g *Graph) Neg(x Value) Value { return g.unary(OpNeg, Attrs{}, x) }

// Abs is |x|, elementwise.
func (g *Graph) Abs(x Value) Value { return g.unary(OpAbs, Attrs{}, x) }

// Square is x², elementwise.
func (g *Graph) Square(x Value) Value { return g.unary(OpSquare, Attrs{}, x) }

// Sqrt is √x, elementwise.
func (g *Graph) Sqrt(x Value) Value { return g.unary(OpSqrt, Attrs{}, x) }

// Rsqrt is 1/√x, elementwise, with no epsilon.
func (g *Graph) Rsqrt(x Value) Value { return g.unary(OpRsqrt, Attrs{}, x) }

// Exp is eˣ, elementwise.
func (g *Graph) Exp(x Value) Value { return g.unary(OpExp, Attrs{}, x) }

// Log is the natural logarithm ln x, elementwise, with no epsilon.
func (g *Graph) Log(x Value) Value { return g.unary(OpLog, Attrs{}, x) }

// Tanh is tanh x, elementwise.
func (g *Graph) Tanh(x Value) Value { return g.unary(OpTanh, Attrs{}, x) }

// Sigmoid is 1/(1+e^(−x)), elementwise.
func (g *Graph) Sigmoid(x Value) Value { return g.unary(OpSigmoid, Attrs{}, x) }

// Relu is max(x, 0), elementwise.
func (g *Graph) Relu(x Value) Value { return g.unary(OpRelu, Attrs{}, x) }

// Gelu is the Gaussian error linear unit, elementwise, in the given mode
// (an empty mode is GeluExact, stored as such in Attrs.Gelu):
//
//	GeluExact:   0.5·x·(1 + erf(x/√2))
//	GeluTanh:    0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
//	GeluSigmoid: x·sigmoid(1.702·x)
func (g *Graph) Gelu(x Value, mode GeluMode) Value {
	return g.Unary(OpGelu, Attrs{Gelu: mode}, x)
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// geluFunc returns gelu's formula in mode.
func geluFunc(mode GeluMode) func(float64) float64 {
	switch mode {
	case GeluTanh:
		c := math.Sqrt(2 / math.Pi)
		return func(v float64) float64 { return 0.5 * v * (1 + math.Tanh(c*(v+0.044715*v*v*v))) }
	case GeluSigmoid:
		return func(v float64) float64 { return v * sigmoid(1.702*v) }
	}
	return func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }
}

// gelu is gy·gelu'(x) for the tanh and sigmoid forms.
func (b *gradder) gelu(x, gy Value, mode GeluMode) Value {
	g := b.g
	switch mode {
	case GeluTanh:
		// y = ½x(1+t), t = tanh(c(x + a·x³)):
		// y' = ½(1+t) + ½x(1−t²)·c(1 + 3a·x²).
		const a = 0.044715
		c := math.Sqrt(2 / math.Pi)
		x2 := g.Square(x)
		t := g.Tanh(g.Mul(g.Mul(x, g.Add(g.Mul(x2, g.Scalar(a)), g.Scalar(1))), g.Scalar(c)))
		left := g.Mul(g.Add(t, g.Scalar(1)), g.Scalar(0.5))
		inner := g.Mul(g.Add(g.Mul(x2, g.Scalar(3*a)), g.Scalar(1)), g.Scalar(0.5*c))
		right := g.Mul(g.Mul(x, g.Sub(g.Scalar(1), g.Square(t))), inner)
		return g.Mul(gy, g.Add(left, right))
	case GeluSigmoid:
		// y = x·σ(kx): y' = σ + k·x·σ(1−σ).
		const k = 1.702
		s := g.Sigmoid(g.Mul(x, g.Scalar(k)))
		d := g.Add(s, g.Mul(g.Mul(x, g.Scalar(k)), g.Mul(s, g.Sub(g.Scalar(1), s))))
		return g.Mul(gy, d)
	}
	g.failf("grad", ErrInvalid, "gelu in %s mode has no gradient rule (it needs erf, which the engine lacks): use %s or %s", mode, GeluTanh, GeluSigmoid)
	return Value{}
}
