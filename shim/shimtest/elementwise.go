package shimtest

import (
	"math"

	"github.com/anemone-go/anemone/dataflow"
)

// elementwiseRule is all the suite knows of one elementwise op (one of
// dataflow.UnaryOps or BinaryOps): its op case, its local allowance, and
// how its operands' bounds propagate through it. The op cases, the layer
// bound's rules and the table-based set are read from these entries, so
// adding such an op is one entry.
type elementwiseRule struct {
	op dataflow.Op
	// x and y are the op case's operands (y only for a binary op).
	x, y inputSpec
	// attrs are the op case's attributes (gelu's mode).
	attrs dataflow.Attrs
	// ulps is the local allowance, in fp16 ulps of the exact result, of
	// the op case and of the layer bound alike; 0 means exact on the
	// device: the op case is bit-exact, and the layer bound adds nothing,
	// not even a flush.
	ulps float64
	// table: the engine computes the op from tables, so an approximate
	// device may add lutError relative before rounding.
	table bool
	// The propagated bound, element by element, from the operands x (and
	// y) and their bounds: unary for a unary op, binary for a binary one.
	unary  func(x, e float64) float64
	binary func(x, y, ex, ey float64) float64
}

// lipschitz is the propagation of a unary op with |f′| ≤ c everywhere.
func lipschitz(c float64) func(x, e float64) float64 {
	return func(_, e float64) float64 { return c * e }
}

// monotone is the propagation of a monotone unary f: the larger of
// |f(x ± e) − f(x)| (exact, no linearization), +Inf where x − e leaves the
// domain (lo, ∞), or [lo, ∞) when closed.
func monotone(f func(float64) float64, lo float64, closed bool) func(x, e float64) float64 {
	return func(x, e float64) float64 {
		a, b := x-e, x+e
		if a < lo || (a == lo && !closed) {
			return math.Inf(1)
		}
		fx := f(x)
		return math.Max(math.Abs(f(a)-fx), math.Abs(f(b)-fx))
	}
}

// elementwiseRules are the entries, in the order of their op cases.
//
// The binary rules: for x' = x + δx, y' = y + δy with |δx| ≤ ex, |δy| ≤ ey,
//
//	add, sub:  ex + ey
//	mul:       |x|·ey + |y|·ex + ex·ey
//	div:       (ex·|y| + |x|·ey) / (|y|·(|y| − ey)), +Inf when |y| ≤ ey
//	pow:       |x^y|·(exp(d) − 1), d = (|y| + ey)·|Δln x| + ey·|ln x|, x > ex
//	max, min:  max(ex, ey) (1-Lipschitz in each operand)
//
// The unary ones: neg, abs and relu are 1-Lipschitz (and exact on the
// device: neg is a mul by −1); square moves by 2|x|·e + e²; the monotone
// transcendentals by exactly |f(x ± e) − f(x)|; gelu by geluLipschitz·e.
var elementwiseRules = []elementwiseRule{
	{op: dataflow.OpAdd, x: in("x", mat, -4, 4), y: in("y", row, -4, 4), ulps: 1,
		binary: func(x, y, ex, ey float64) float64 { return ex + ey }},
	{op: dataflow.OpSub, x: in("x", mat, -4, 4), y: in("y", mat, -4, 4), ulps: 1,
		binary: func(x, y, ex, ey float64) float64 { return ex + ey }},
	{op: dataflow.OpMul, x: in("x", mat, -4, 4), y: in("y", mat, -4, 4), ulps: 1,
		binary: func(x, y, ex, ey float64) float64 { return math.Abs(x)*ey + math.Abs(y)*ex + ex*ey }},
	{op: dataflow.OpDiv, x: in("x", mat, -4, 4), y: signed("y", mat, 0.5, 2), ulps: 1,
		binary: func(x, y, ex, ey float64) float64 {
			ax, ay := math.Abs(x), math.Abs(y)
			if ay <= ey {
				return math.Inf(1)
			}
			return (ex*ay + ax*ey) / (ay * (ay - ey))
		}},
	{op: dataflow.OpMaximum, x: in("x", mat, -4, 4), y: in("y", mat, -4, 4),
		binary: func(x, y, ex, ey float64) float64 { return math.Max(ex, ey) }},
	{op: dataflow.OpMinimum, x: in("x", mat, -4, 4), y: in("y", mat, -4, 4),
		binary: func(x, y, ex, ey float64) float64 { return math.Max(ex, ey) }},
	{op: dataflow.OpPow, x: in("x", mat, 0.25, 4), y: in("y", mat, -2, 2), ulps: 2, table: true,
		binary: func(x, y, ex, ey float64) float64 {
			if x <= ex {
				return math.Inf(1)
			}
			dln := math.Max(math.Log(x)-math.Log(x-ex), math.Log(x+ex)-math.Log(x))
			d := (math.Abs(y)+ey)*dln + ey*math.Abs(math.Log(x))
			return math.Pow(x, y) * math.Expm1(d)
		}},

	{op: dataflow.OpNeg, x: in("x", mat, -4, 4), unary: lipschitz(1)},
	{op: dataflow.OpAbs, x: in("x", mat, -4, 4), unary: lipschitz(1)},
	{op: dataflow.OpSquare, x: in("x", mat, -8, 8), ulps: 1,
		unary: func(x, e float64) float64 { return 2*math.Abs(x)*e + e*e }},
	{op: dataflow.OpSqrt, x: in("x", mat, 0.01, 100), ulps: 1, table: true,
		unary: monotone(math.Sqrt, 0, true)},
	{op: dataflow.OpRsqrt, x: in("x", mat, 0.01, 100), ulps: 2, table: true,
		unary: monotone(func(v float64) float64 { return 1 / math.Sqrt(v) }, 0, false)},
	{op: dataflow.OpExp, x: in("x", mat, -4, 4), ulps: 2, table: true,
		unary: monotone(math.Exp, math.Inf(-1), false)},
	{op: dataflow.OpLog, x: in("x", mat, 0.01, 100), ulps: 2, table: true,
		unary: monotone(math.Log, 0, false)},
	{op: dataflow.OpTanh, x: in("x", mat, -3, 3), ulps: 2, table: true,
		unary: monotone(math.Tanh, math.Inf(-1), false)},
	{op: dataflow.OpSigmoid, x: in("x", mat, -6, 6), ulps: 2, table: true,
		unary: monotone(func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }, math.Inf(-1), false)},
	{op: dataflow.OpRelu, x: in("x", mat, -4, 4), unary: lipschitz(1)},
	{op: dataflow.OpGelu, x: in("x", mat, -4, 4), attrs: dataflow.Attrs{Gelu: dataflow.GeluExact}, ulps: 2, table: true,
		unary: lipschitz(geluLipschitz)},
}

// elementwiseRuleOf is the entry of each op of elementwiseRules.
var elementwiseRuleOf = func() map[dataflow.Op]*elementwiseRule {
	m := make(map[dataflow.Op]*elementwiseRule, len(elementwiseRules))
	for i := range elementwiseRules {
		m[elementwiseRules[i].op] = &elementwiseRules[i]
	}
	return m
}()

// elementwiseCases are the op cases of elementwiseRules, in order.
func elementwiseCases() []opCase {
	out := make([]opCase, 0, len(elementwiseRules))
	for _, r := range elementwiseRules {
		c := opCase{op: r.op, bound: rounded, ulps: r.ulps}
		if r.ulps == 0 {
			c.bound = exact
		}
		op, attrs := r.op, r.attrs
		if r.binary != nil {
			c.inputs = []inputSpec{r.x, r.y}
			c.build = func(g *dataflow.Graph, v []dataflow.Value, _ constFn) dataflow.Value { return g.Binary(op, v[0], v[1]) }
		} else {
			c.inputs = []inputSpec{r.x}
			c.build = func(g *dataflow.Graph, v []dataflow.Value, _ constFn) dataflow.Value { return g.Unary(op, attrs, v[0]) }
		}
		out = append(out, c)
	}
	return out
}

// unaryBound is the propagated bound of an elementwise unary op on x
// with bounds e, by its entry's rule.
func unaryBound(op dataflow.Op, x, e []float64) []float64 {
	f := elementwiseRuleOf[op].unary
	out := make([]float64, len(x))
	for i := range x {
		out[i] = f(x[i], e[i])
	}
	return out
}

// binaryBound is the propagated bound of a broadcasting binary op, by its
// entry's rule at each element of the result.
func binaryBound(n *dataflow.Node, vals, errs []operand) []float64 {
	f := elementwiseRuleOf[n.Op].binary
	ix, iy := broadcastIndex(n.Shape, vals[0].shape), broadcastIndex(n.Shape, vals[1].shape)
	out := make([]float64, n.Shape.Size())
	for i := range out {
		out[i] = f(vals[0].data[ix[i]], vals[1].data[iy[i]], errs[0].data[ix[i]], errs[1].data[iy[i]])
	}
	return out
}
