package dataflow

import (
	"math"
	"slices"
)

// The elementwise binary ops, with numpy broadcasting. Each one's facts —
// its builder below, its float64 definition (Eval), its gradient rule
// (Grad) — are its entry in binaryOps; the rest of the package consults
// that table, so adding such an op is its constant, its builder and its
// entry.
const (
	OpAdd     Op = "add"
	OpSub     Op = "sub"
	OpMul     Op = "mul"
	OpDiv     Op = "div"
	OpPow     Op = "pow"
	OpMaximum Op = "maximum"
	OpMinimum Op = "minimum"
)

// binaryOp is the descriptor of one elementwise binary op.
type binaryOp struct {
	// eval is the op's meaning on one pair of elements.
	eval func(p, q float64) float64
	// grad gives the adjoints of x and y from the adjoint gy of the
	// result out: it passes each operand j's adjoint, at the broadcast
	// shape, to unb(j, ·), which sums it down to the operand's shape when
	// want[j] (and ignores it otherwise); nil: no gradient rule.
	grad func(b *gradder, x, y, out, gy Value, want []bool, unb func(j int, v Value))
}

// binaryOps holds every elementwise binary op's descriptor. It is filled
// by init: its gradient rules call the builders, which consult it.
var binaryOps map[Op]binaryOp

func init() {
	binaryOps = map[Op]binaryOp{
		OpAdd: {
			eval: func(p, q float64) float64 { return p + q },
			grad: func(b *gradder, x, y, out, gy Value, want []bool, unb func(int, Value)) {
				unb(0, gy)
				unb(1, gy)
			},
		},
		OpSub: {
			eval: func(p, q float64) float64 { return p - q },
			grad: func(b *gradder, x, y, out, gy Value, want []bool, unb func(int, Value)) {
				unb(0, gy)
				if want[1] {
					unb(1, b.g.Neg(gy))
				}
			},
		},
		OpMul: {
			eval: func(p, q float64) float64 { return p * q },
			grad: func(b *gradder, x, y, out, gy Value, want []bool, unb func(int, Value)) {
				g := b.g
				if want[0] {
					unb(0, g.Mul(gy, y))
				}
				if want[1] {
					unb(1, g.Mul(gy, x))
				}
			},
		},
		OpDiv: {
			eval: func(p, q float64) float64 { return p / q },
			grad: func(b *gradder, x, y, out, gy Value, want []bool, unb func(int, Value)) {
				g := b.g
				if want[0] {
					unb(0, g.Div(gy, y))
				}
				if want[1] {
					unb(1, g.Neg(g.Div(g.Mul(gy, out), y)))
				}
			},
		},
		OpPow: {
			eval: math.Pow,
			grad: func(b *gradder, x, y, out, gy Value, want []bool, unb func(int, Value)) {
				g := b.g
				if want[0] {
					unb(0, g.Mul(gy, g.Mul(y, g.Pow(x, g.Sub(y, g.Scalar(1))))))
				}
				if want[1] {
					unb(1, g.Mul(gy, g.Mul(out, g.Log(x))))
				}
			},
		},
		OpMaximum: {eval: math.Max, grad: extremumGrad(OpMaximum)},
		OpMinimum: {eval: math.Min, grad: extremumGrad(OpMinimum)},
	}
}

// extremumGrad is the gradient rule of maximum and minimum: for maximum,
// x gets [x ≥ y] and y gets [y > x]; minimum mirrored.
func extremumGrad(op Op) func(b *gradder, x, y, out, gy Value, want []bool, unb func(int, Value)) {
	return func(b *gradder, x, y, out, gy Value, want []bool, unb func(int, Value)) {
		g := b.g
		d := g.Sub(y, x)
		if op == OpMinimum {
			d = g.Sub(x, y)
		}
		py := b.pos(d)
		if want[0] {
			unb(0, g.Mul(gy, g.Sub(g.Scalar(1), py)))
		}
		if want[1] {
			unb(1, g.Mul(gy, py))
		}
	}
}

// BinaryOps returns the elementwise binary ops (those g.Binary builds),
// sorted by name.
func BinaryOps() []Op {
	ops := make([]Op, 0, len(binaryOps))
	for op := range binaryOps {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// binary builds an elementwise op of two operands with numpy broadcasting.
func (g *Graph) binary(op Op, x, y Value) Value {
	s, ok := g.operands(op, labelsXY, x, y)
	if !ok {
		return Value{}
	}
	return g.emit(op, Attrs{}, s, x, y)
}

// Binary builds the elementwise binary op op (one of BinaryOps) on x and y
// exactly as its own builder does: g.Binary(OpAdd, x, y) is g.Add(x, y).
// It serves code that rebuilds nodes by op (a rewrite pass, an error
// analysis); an op that is not elementwise binary records an error
// wrapping ErrInvalid.
func (g *Graph) Binary(op Op, x, y Value) Value {
	if _, ok := binaryOps[op]; !ok {
		if g.usable() {
			g.failf(op, ErrInvalid, "not an elementwise binary op (those are %v)", BinaryOps())
		}
		return Value{}
	}
	return g.binary(op, x, y)
}

// Add is x + y, elementwise with numpy broadcasting: shapes are aligned on
// the right, and each pair of dims must be equal or one of them 1.
func (g *Graph) Add(x, y Value) Value { return g.binary(OpAdd, x, y) }

// Sub is x − y, elementwise with broadcasting as in Add.
func (g *Graph) Sub(x, y Value) Value { return g.binary(OpSub, x, y) }

// Mul is x · y, elementwise with broadcasting as in Add.
func (g *Graph) Mul(x, y Value) Value { return g.binary(OpMul, x, y) }

// Div is x / y (true division), elementwise with broadcasting as in Add.
func (g *Graph) Div(x, y Value) Value { return g.binary(OpDiv, x, y) }

// Pow is x^y (math.Pow), elementwise with broadcasting as in Add.
func (g *Graph) Pow(x, y Value) Value { return g.binary(OpPow, x, y) }

// Maximum is max(x, y) (math.Max: NaN propagates), elementwise with
// broadcasting as in Add.
func (g *Graph) Maximum(x, y Value) Value { return g.binary(OpMaximum, x, y) }

// Minimum is min(x, y) (math.Min: NaN propagates), elementwise with
// broadcasting as in Add.
func (g *Graph) Minimum(x, y Value) Value { return g.binary(OpMinimum, x, y) }
