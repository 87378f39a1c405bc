package shimtest

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
)

// The layer bound is a forward error analysis of the whole graph: every
// node carries, element by element, its exact value v (what dataflow.Eval
// computes) and a bound e on |device − v|, built from its operands' bounds
// in two parts:
//
//   - propagated: the largest change of the exact op when each operand
//     element moves by at most its bound (worked out per op below, and
//     for the elementwise ops in their entries of elementwiseRules, with
//     the second-order terms kept, so it is a bound, not an estimate);
//   - local: what the op may add on the operands it is given, the op
//     suite's own allowance (opULPs, the dot and running-sum formulas),
//     taken at the largest magnitude the op's exact result can have,
//     |v| + propagated.
//
// Constants enter with their own fp16 rounding error (the whole value when
// it lies below fp16's normal range: the lowering flushes or refuses it);
// inputs enter exact, since the suite rounds them to fp16 before Eval sees
// them. A device that meets every op's bound therefore meets the layer's.

// opULPs is the local allowance, in fp16 ulps of the exact result, of the
// ops whose error is not exact by construction and not a sum of products:
// the same figures the op cases use (the elementwise ones from their
// entries in elementwiseRules).
var opULPs = func() map[dataflow.Op]float64 {
	m := map[dataflow.Op]float64{dataflow.OpSoftmax: 4, dataflow.OpLayerNorm: 4}
	for _, r := range elementwiseRules {
		if r.ulps > 0 {
			m[r.op] = r.ulps
		}
	}
	return m
}()

// geluLipschitz bounds |GELU′| for every mode: the exact form's derivative
// Φ(x) + x·φ(x) peaks at x = √2 with 1.1289, the tanh and sigmoid forms
// within 1.13 as well (the package's tests check all three on a grid).
const geluLipschitz = 1.13

// subnormalHalf is half the spacing of fp16's subnormals: the absolute
// error of one rounding in that range.
const subnormalHalf = 0x1p-25

// numerics is what the analysis needs to know of a device.
type numerics struct {
	uAcc   float64 // unit roundoff of the matmul/conv accumulator
	approx bool    // table-based transcendentals and subnormal flushing
}

func numericsOf(narrowAcc, approx bool) numerics {
	n := numerics{uAcc: 0x1p-24, approx: approx}
	if narrowAcc {
		n.uAcc = fp16.UnitRoundoff
	}
	return n
}

// analysis holds, per node ID, the exact values and the error bounds.
type analysis struct {
	g    *dataflow.Graph
	vals [][]float64
	errs [][]float64
}

// propagate evaluates g on inputs node by node and bounds each node's
// device error. Inputs must hold fp16 values (they enter exact).
func propagate(g *dataflow.Graph, inputs map[string][]float64, m numerics) (*analysis, error) {
	if err := dataflow.Verify(g); err != nil {
		return nil, err
	}
	nodes := g.Nodes()
	a := &analysis{g: g, vals: make([][]float64, len(nodes)), errs: make([][]float64, len(nodes))}
	for i, n := range nodes {
		switch n.Op {
		case dataflow.OpInput:
			x, ok := inputs[n.Name]
			if !ok || len(x) != n.Shape.Size() {
				return nil, fmt.Errorf("shimtest: input %q missing or of the wrong length", n.Name)
			}
			a.vals[i], a.errs[i] = x, make([]float64, len(x))
		case dataflow.OpConst:
			a.vals[i] = n.Data
			a.errs[i] = make([]float64, len(n.Data))
			for j, c := range n.Data {
				a.errs[i][j] = constError(c)
			}
		default:
			v, err := apply(n, n.Attrs, a.operands(n, a.vals))
			if err != nil {
				return nil, err
			}
			a.vals[i] = v
			e, err := a.bound(n, m)
			if err != nil {
				return nil, err
			}
			a.errs[i] = e
		}
	}
	return a, nil
}

// constError is the error of a constant on the device: its fp16 rounding,
// or all of it when it rounds below the normal range (flushed or refused),
// +Inf beyond fp16's range.
func constError(c float64) float64 {
	r := fp16.Round64(c)
	switch {
	case math.IsInf(r, 0) || math.IsNaN(r):
		return math.Inf(1)
	case math.Abs(r) < fp16.MinNormal:
		return math.Abs(c)
	}
	return math.Abs(c - r)
}

// operand is one operand of a node: its values (or bounds) and its shape.
type operand struct {
	data  []float64
	shape dataflow.Shape
}

func (a *analysis) operands(n *dataflow.Node, from [][]float64) []operand {
	nodes := a.g.Nodes()
	out := make([]operand, len(n.Inputs))
	for j, id := range n.Inputs {
		out[j] = operand{from[id], nodes[id].Shape}
	}
	return out
}

// apply evaluates n's op with attributes attrs on the given operands with
// dataflow.Eval (one op, so the specification's indexing serves for
// values, bounds and magnitudes alike).
func apply(n *dataflow.Node, attrs dataflow.Attrs, args []operand) ([]float64, error) {
	g := dataflow.New()
	in := make([]dataflow.Value, len(args))
	feed := make(map[string][]float64, len(args))
	for i, x := range args {
		name := fmt.Sprintf("a%d", i)
		in[i] = g.Input(name, x.shape)
		feed[name] = x.data
	}
	a := attrs
	var y dataflow.Value
	switch n.Op {
	case dataflow.OpMatMul:
		y = g.MatMul(in[0], in[1], a.TransposeX, a.TransposeY)
	case dataflow.OpConv2D:
		y = g.Conv2D(in[0], in[1], a.Conv)
	case dataflow.OpReduceSum:
		y = g.ReduceSum(in[0], a.Axes, a.KeepDims)
	case dataflow.OpReduceMean:
		y = g.ReduceMean(in[0], a.Axes, a.KeepDims)
	case dataflow.OpReduceMax:
		y = g.ReduceMax(in[0], a.Axes, a.KeepDims)
	case dataflow.OpSoftmax:
		y = g.Softmax(in[0], a.Axis)
	case dataflow.OpLayerNorm:
		var gamma, beta dataflow.Value
		next := 1
		if a.HasGamma {
			gamma = in[next]
			next++
		}
		if a.HasBeta {
			beta = in[next]
		}
		y = g.LayerNorm(in[0], a.Axes, gamma, beta, a.Epsilon)
	case dataflow.OpReshape:
		y = g.Reshape(in[0], a.Shape)
	case dataflow.OpTranspose:
		y = g.Transpose(in[0], a.Perm)
	case dataflow.OpConcat:
		y = g.Concat(a.Axis, in...)
	case dataflow.OpSlice:
		y = g.Slice(in[0], a.Begin, a.Size)
	case dataflow.OpPad:
		y = g.Pad(in[0], a.Pads, a.PadValue)
	default:
		switch dataflow.ElementwiseArity(n.Op) { // the elementwise ops, by their dataflow descriptors
		case 1:
			y = g.Unary(n.Op, a, in[0])
		case 2:
			y = g.Binary(n.Op, in[0], in[1])
		default:
			return nil, fmt.Errorf("shimtest: no error analysis for op %q: add its rule to the layer bound", n.Op)
		}
	}
	g.Output("y", y)
	out, err := dataflow.Eval(g, feed)
	if err != nil {
		return nil, fmt.Errorf("shimtest: evaluating op %q: %w", n.Op, err)
	}
	return out["y"], nil
}

// ulpsAt is c fp16 ulps at magnitude m, plus the table error of a
// transcendental on an approximate device.
func ulpsAt(op dataflow.Op, c, m float64, num numerics) float64 {
	l := c * ulp16(m)
	if tableOps[op] && num.approx {
		l += lutError * m
	}
	return l
}

// finish adds each element's local allowance to its propagated bound,
// and on an approximate device the subnormal flush of a result within
// its bound of the subnormal range. A nil local marks an op that is exact
// on the values it is given: it adds nothing, not even a flush (its
// operands were flushed already).
func finish(v, prop []float64, local func(i int, mag float64) float64, num numerics) []float64 {
	e := make([]float64, len(v))
	for i := range v {
		e[i] = prop[i]
		if local != nil {
			e[i] += local(i, math.Abs(v[i])+prop[i])
			if num.approx && math.Abs(v[i])-e[i] < fp16.MinNormal {
				e[i] += fp16.MinNormal
			}
		}
		if math.IsNaN(e[i]) {
			e[i] = math.Inf(1)
		}
	}
	return e
}

// bound is node n's error bound from its operands' (a.vals, a.errs).
func (a *analysis) bound(n *dataflow.Node, num numerics) ([]float64, error) {
	vals, errs := a.operands(n, a.vals), a.operands(n, a.errs)
	v := a.vals[n.ID]
	ulps := func(i int, mag float64) float64 { return ulpsAt(n.Op, opULPs[n.Op], mag, num) }
	var none func(int, float64) float64 // exact ops
	if r, ok := elementwiseRuleOf[n.Op]; ok {
		var prop []float64
		if r.binary != nil {
			prop = binaryBound(n, vals, errs)
		} else {
			prop = unaryBound(n.Op, vals[0].data, errs[0].data)
		}
		if r.ulps == 0 {
			return finish(v, prop, none, num), nil
		}
		return finish(v, prop, ulps, num), nil
	}
	switch n.Op {
	case dataflow.OpMatMul, dataflow.OpConv2D:
		return a.dotBound(n, vals, errs, num)
	case dataflow.OpReduceSum, dataflow.OpReduceMean:
		return a.sumBound(n, vals, errs, num)
	case dataflow.OpReduceMax:
		return finish(v, maxBound(n, vals[0], errs[0].data), none, num), nil
	case dataflow.OpSoftmax:
		return finish(v, softmaxBound(n, vals[0], a.softmaxInputBound(n, num)), ulps, num), nil
	case dataflow.OpLayerNorm:
		return finish(v, layerNormBound(n, vals, errs), ulps, num), nil
	case dataflow.OpReshape, dataflow.OpTranspose, dataflow.OpConcat, dataflow.OpSlice, dataflow.OpPad:
		// Data movement: the bounds move with the data; a pad value is a
		// constant and brings its own rounding.
		attrs := n.Attrs
		attrs.PadValue = constError(attrs.PadValue)
		prop, err := apply(n, attrs, errs)
		if err != nil {
			return nil, err
		}
		return finish(v, prop, none, num), nil
	}
	return nil, fmt.Errorf("shimtest: no error analysis for op %q: add its rule to the layer bound", n.Op)
}

// broadcastIndex maps each element of out to the element of an operand
// of shape s (numpy broadcasting, shapes aligned on the right).
func broadcastIndex(out, s dataflow.Shape) []int {
	idx := make([]int, out.Size())
	c := make([]int, len(out))
	for i := range idx {
		r := i
		for d := len(out) - 1; d >= 0; d-- {
			c[d] = r % out[d]
			r /= out[d]
		}
		k, stride := 0, 1
		for d := len(s) - 1; d >= 0; d-- {
			od := d + len(out) - len(s)
			if s[d] != 1 {
				k += c[od] * stride
			}
			stride *= s[d]
		}
		idx[i] = k
	}
	return idx
}

// dotBound bounds a matmul or conv y = Σ aₖbₖ. With A = |a| + ea and B =
// |b| + eb, the operands the device sees satisfy |âₖb̂ₖ| ≤ AₖBₖ, so
//
//	propagated = Σ (|aₖ|·ebₖ + eaₖ·Bₖ)
//	local      = (u + (K−1)·u_acc)·Σ AₖBₖ + ½ulp(|y| + propagated)
//
// (each product rounded to fp16, the K products that may be nonzero summed
// in the accumulator, the
// sum rounded once: the op case's formula), plus (K−1)·2⁻²⁵ when the
// accumulator is fp16 and a partial sum may round in the subnormal range.
// The sums are the op itself applied to the magnitudes.
func (a *analysis) dotBound(n *dataflow.Node, vals, errs []operand, num numerics) ([]float64, error) {
	absA, absB := absOf(vals[0]), absOf(vals[1])
	bigB := operand{addData(absB.data, errs[1].data), absB.shape}
	bigA := operand{addData(absA.data, errs[0].data), absA.shape}
	p1, err := apply(n, n.Attrs, []operand{absA, errs[1]})
	if err != nil {
		return nil, err
	}
	p2, err := apply(n, n.Attrs, []operand{errs[0], bigB})
	if err != nil {
		return nil, err
	}
	mag, err := apply(n, n.Attrs, []operand{bigA, bigB})
	if err != nil {
		return nil, err
	}
	// K counts the products that may be nonzero: adding an exact zero to a
	// running sum is exact (a one-hot row has one term, and no summation
	// error at all).
	k, err := apply(n, n.Attrs, []operand{nonzero(bigA), nonzero(bigB)})
	if err != nil {
		return nil, err
	}
	prop := addData(p1, p2)
	return finish(a.vals[n.ID], prop, func(i int, m float64) float64 {
		terms := max(k[i]-1, 0)
		l := (fp16.UnitRoundoff+terms*num.uAcc)*mag[i] + ulp16(m)/2
		if num.uAcc == fp16.UnitRoundoff {
			l += terms * subnormalHalf
		}
		return l
	}, num), nil
}

// sumBound bounds reduce_sum and reduce_mean, which accumulate in fp16 (a
// last-axis sum lowered to a matmul with ones does better): with S the
// sum (or mean) of |x| + e over the K reduced elements,
//
//	propagated = the sum (mean) of e
//	local      = (K−1)·u·S + ½ulp(|y| + propagated) + (K−1)·2⁻²⁵ (÷K for the mean).
func (a *analysis) sumBound(n *dataflow.Node, vals, errs []operand, num numerics) ([]float64, error) {
	x := absOf(vals[0])
	big := operand{addData(x.data, errs[0].data), x.shape}
	prop, err := apply(n, n.Attrs, []operand{errs[0]})
	if err != nil {
		return nil, err
	}
	mag, err := apply(n, n.Attrs, []operand{big})
	if err != nil {
		return nil, err
	}
	k := vals[0].shape.Size() / max(n.Shape.Size(), 1)
	sub := float64(k-1) * subnormalHalf
	if n.Op == dataflow.OpReduceMean {
		sub /= float64(k)
	}
	return finish(a.vals[n.ID], prop, func(i int, m float64) float64 {
		return float64(k-1)*fp16.UnitRoundoff*mag[i] + ulp16(m)/2 + sub
	}, num), nil
}

// nonzero is 1 where x is nonzero, 0 elsewhere.
func nonzero(x operand) operand {
	out := make([]float64, len(x.data))
	for i, v := range x.data {
		if v != 0 {
			out[i] = 1
		}
	}
	return operand{out, x.shape}
}

func absOf(x operand) operand {
	out := make([]float64, len(x.data))
	for i, v := range x.data {
		out[i] = math.Abs(v)
	}
	return operand{out, x.shape}
}

func addData(x, y []float64) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] + y[i]
	}
	return out
}

// groupIndex gives each element of shape s the index of its group when
// the axes are reduced, and the number of groups.
func groupIndex(s dataflow.Shape, axes []int) ([]int, int) {
	reduced := make([]bool, len(s))
	for _, ax := range axes {
		reduced[ax] = true
	}
	idx := make([]int, s.Size())
	c := make([]int, len(s))
	groups := 1
	for d := range s {
		if !reduced[d] {
			groups *= s[d]
		}
	}
	for i := range idx {
		r := i
		for d := len(s) - 1; d >= 0; d-- {
			c[d] = r % s[d]
			r /= s[d]
		}
		k := 0
		for d := range s {
			if !reduced[d] {
				k = k*s[d] + c[d]
			}
		}
		idx[i] = k
	}
	return idx, groups
}

// maxBound: the device's group maximum lies in [max(xⱼ − eⱼ), max(xⱼ +
// eⱼ)], so it is off by at most the larger distance of those two from the
// exact maximum M (elements far below M weigh nothing, whatever their
// bound).
func maxBound(n *dataflow.Node, x operand, e []float64) []float64 {
	gid, groups := groupIndex(x.shape, n.Attrs.Axes)
	peak, lo, hi := make([]float64, groups), make([]float64, groups), make([]float64, groups)
	for i := range peak {
		peak[i], lo[i], hi[i] = math.Inf(-1), math.Inf(-1), math.Inf(-1)
	}
	for i, v := range x.data {
		g := gid[i]
		peak[g] = math.Max(peak[g], v)
		lo[g] = math.Max(lo[g], v-e[i])
		hi[g] = math.Max(hi[g], v+e[i])
	}
	out := make([]float64, groups)
	for g := range out {
		out[g] = math.Max(hi[g]-peak[g], peak[g]-lo[g])
	}
	return out
}

// softmaxInputBound is the bound on softmax n's operand, except when that
// operand is x − reduce_max(x) over the softmax's axis (nn.Softmax's
// form): softmax is invariant under a shift of its row, and the device's
// maximum is exact on the values it holds, so only x's own bounds and the
// subtraction's rounding count, not the maximum's bound.
func (a *analysis) softmaxInputBound(n *dataflow.Node, num numerics) []float64 {
	nodes := a.g.Nodes()
	in := nodes[n.Inputs[0]]
	e := a.errs[in.ID]
	if in.Op != dataflow.OpSub {
		return e
	}
	x, m := nodes[in.Inputs[0]], nodes[in.Inputs[1]]
	if m.Op != dataflow.OpReduceMax || m.Inputs[0] != x.ID || !m.Attrs.KeepDims ||
		len(m.Attrs.Axes) != 1 || m.Attrs.Axes[0] != n.Attrs.Axis || !x.Shape.Equal(in.Shape) {
		return e
	}
	ex, em := a.errs[x.ID], a.errs[m.ID]
	d := a.vals[in.ID]
	gid, _ := groupIndex(x.Shape, m.Attrs.Axes)
	out := make([]float64, len(d))
	for i := range d {
		// The sub's exact result on the device's operands is within
		// ex + em of d: its rounding is at most 1 ulp there.
		out[i] = ex[i] + ulpsAt(dataflow.OpSub, opULPs[dataflow.OpSub], math.Abs(d[i])+ex[i]+em[gid[i]], num)
	}
	return out
}

// softmaxBound: p′ᵢ/pᵢ = exp(δᵢ)/Σⱼ pⱼ·exp(δⱼ) with |δⱼ| ≤ eⱼ, and the
// denominator lies in [Dlo, Dhi] = [Σ pⱼe^(−eⱼ), Σ pⱼe^(eⱼ)], so
//
//	|p′ᵢ − pᵢ| ≤ pᵢ·max(e^(eᵢ)/Dlo − 1, 1 − e^(−eᵢ)/Dhi)
//
// exactly, with each pⱼ weighted by its own bound (an element whose weight
// is negligible cannot spoil the others). pⱼ is taken as exp(xⱼ − max)/Σ,
// so that masked scores of −2¹⁵ weigh nothing even with a large bound.
func softmaxBound(n *dataflow.Node, x operand, e []float64) []float64 {
	gid, groups := groupIndex(x.shape, []int{n.Attrs.Axis})
	peak := make([]float64, groups)
	for i := range peak {
		peak[i] = math.Inf(-1)
	}
	for i, v := range x.data {
		peak[gid[i]] = math.Max(peak[gid[i]], v)
	}
	sum, lo, hi := make([]float64, groups), make([]float64, groups), make([]float64, groups)
	for i, v := range x.data {
		d := v - peak[gid[i]]
		sum[gid[i]] += math.Exp(d)
		lo[gid[i]] += math.Exp(d - e[i])
		hi[gid[i]] += math.Exp(d + e[i])
	}
	out := make([]float64, len(x.data))
	for i, v := range x.data {
		g := gid[i]
		p := math.Exp(v-peak[g]) / sum[g]
		dlo, dhi := lo[g]/sum[g], hi[g]/sum[g]
		out[i] = p * math.Max(math.Exp(e[i])/dlo-1, 1-math.Exp(-e[i])/dhi)
		if math.IsNaN(out[i]) {
			out[i] = math.Inf(1)
		}
	}
	return out
}

// layerNormBound: with z = (x − μ)/s, s = √(σ² + ε), and input bounds eᵢ
// (E the group's largest, R the root mean square of the group's bounds),
// the centred values move by at most eᵢ + E and s by at most R (s is a
// Euclidean norm of the centred values and √ε, and centring is an
// orthogonal projection), so
//
//	|z′ᵢ − zᵢ| ≤ (eᵢ + E + |zᵢ|·R)/(s − R)   (+Inf when s ≤ R)
//
// and y = z·γ + β adds |γ|·Δz + |z′|·eγ + eβ.
func layerNormBound(n *dataflow.Node, vals, errs []operand) []float64 {
	x, e, xs := vals[0].data, errs[0].data, vals[0].shape
	a := n.Attrs
	gid, groups := groupIndex(xs, a.Axes)
	count := float64(len(x) / groups)
	mean, sq, emax, ems := make([]float64, groups), make([]float64, groups), make([]float64, groups), make([]float64, groups)
	for i, v := range x {
		mean[gid[i]] += v / count
		emax[gid[i]] = math.Max(emax[gid[i]], e[i])
		ems[gid[i]] += e[i] * e[i] / count
	}
	for i, v := range x {
		d := v - mean[gid[i]]
		sq[gid[i]] += d * d / count
	}
	// The parameters' index: the flat index of the coordinates at the axes.
	pShape := make(dataflow.Shape, len(a.Axes))
	for j, ax := range a.Axes {
		pShape[j] = xs[ax]
	}
	var gamma, eg, eb []float64
	next := 1
	if a.HasGamma {
		gamma, eg = vals[next].data, errs[next].data
		next++
	}
	if a.HasBeta {
		eb = errs[next].data
	}
	out := make([]float64, len(x))
	c := make([]int, len(xs))
	for i, v := range x {
		g := gid[i]
		s := math.Sqrt(sq[g] + a.Epsilon)
		r := math.Sqrt(ems[g])
		z := (v - mean[g]) / s
		dz := math.Inf(1)
		if s > r {
			dz = (e[i] + emax[g] + math.Abs(z)*r) / (s - r)
		}
		rr := i
		for d := len(xs) - 1; d >= 0; d-- {
			c[d] = rr % xs[d]
			rr /= xs[d]
		}
		k := 0
		for j, ax := range a.Axes {
			k = k*pShape[j] + c[ax]
		}
		b := dz
		if gamma != nil {
			b = math.Abs(gamma[k])*dz + (math.Abs(z)+dz)*eg[k]
		}
		if eb != nil {
			b += eb[k]
		}
		out[i] = b
	}
	return out
}
