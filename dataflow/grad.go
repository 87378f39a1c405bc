package dataflow

import (
	"fmt"
	"math"
	"slices"
)

// GradOptions tune the backward pass Grad appends.
type GradOptions struct {
	// Saturate > 0 clamps the output of every contraction the backward
	// pass emits (matmul and conv with more than one term per output) to
	// [−Saturate, Saturate]. With Saturate at the engine's cliff (32752)
	// the clamp changes no finite output and turns an overflow (±Inf)
	// into a finite value, so a later 0·Inf (a relu mask) cannot make a
	// NaN, and a device-computed maximum still reports the overflow.
	Saturate float64
}

// Grad appends to g the reverse-mode derivative of the scalar y (a value
// of one element) with respect to each of xs, and returns the gradients,
// each of its x's shape. Only the nodes on a path from some x to y are
// differentiated. An x that y does not depend on gets a zero constant.
// Errors are sticky as for every builder call: an op without a rule (gelu
// in EXACT mode, the weight of a grouped conv), a y of more than one
// element, or a Value of another graph records an error wrapping
// ErrInvalid or ErrShape, and the result is a slice of zero Values.
//
// Every sum the rules need (the gradient of a broadcast operand, a
// softmax's row sums) is a matmul against ones, never a reduce_sum, and
// every step function (relu's, max's) is built from relu, mul and minimum
// on fp16 values: pos(d) = min(relu(d)·2¹²·2¹², 1) is exactly [d > 0]
// for every fp16 d, as no nonzero fp16 magnitude is below 2⁻²⁴.
func (g *Graph) Grad(y Value, xs ...Value) []Value {
	return g.GradWith(GradOptions{}, y, xs...)
}

// GradWith is Grad with options.
func (g *Graph) GradWith(opts GradOptions, y Value, xs ...Value) []Value {
	out := make([]Value, len(xs))
	const op Op = "grad"
	if _, ok := g.operands(op, []string{"y"}, y); !ok {
		return out
	}
	if _, ok := g.operands(op, nil, xs...); !ok {
		return out
	}
	ys := g.nodes[y.id].Shape
	if ys.Size() != 1 {
		g.failf(op, ErrShape, "y has shape %v; the gradient is of a scalar (one element): reduce it first", ys)
		return out
	}
	if !(opts.Saturate >= 0) || math.IsInf(opts.Saturate, 0) {
		g.failf(op, ErrInvalid, "saturation %g must be finite and ≥ 0", opts.Saturate)
		return out
	}
	b := &gradder{g: g, opts: opts, consts: map[string]Value{}}
	last := y.id
	// needed[i]: node i lies on a path from some x to y.
	from := make([]bool, last+1)
	for _, x := range xs {
		if x.id <= last {
			from[x.id] = true
		}
	}
	for i := 0; i <= last; i++ {
		for _, in := range g.nodes[i].Inputs {
			if from[in] {
				from[i] = true
			}
		}
	}
	needed := make([]bool, last+1)
	if from[last] {
		needed[last] = true
	}
	for i := last; i >= 0; i-- {
		if needed[i] {
			for _, in := range g.nodes[i].Inputs {
				if from[in] {
					needed[in] = true
				}
			}
		}
	}
	adj := make([]Value, last+1)
	if needed[last] {
		adj[last] = g.Scalar(1)
		if len(ys) > 0 {
			adj[last] = g.Reshape(adj[last], ys)
		}
	}
	for i := last; i >= 0 && g.usable(); i-- {
		n := g.nodes[i]
		if !needed[i] || !adj[i].Valid() || len(n.Inputs) == 0 {
			continue
		}
		want := make([]bool, len(n.Inputs))
		some := false
		for j, in := range n.Inputs {
			want[j] = needed[in]
			some = some || want[j]
		}
		if !some {
			continue
		}
		grads := b.rule(n, adj[i], want)
		if !g.usable() {
			break
		}
		for j, in := range n.Inputs {
			if !want[j] || !grads[j].Valid() {
				continue
			}
			if adj[in].Valid() {
				adj[in] = g.Add(adj[in], grads[j])
			} else {
				adj[in] = grads[j]
			}
		}
	}
	if !g.usable() {
		return make([]Value, len(xs))
	}
	for k, x := range xs {
		if x.id <= last && adj[x.id].Valid() {
			out[k] = adj[x.id]
			continue
		}
		s := g.nodes[x.id].Shape
		out[k] = b.constant("grad_zero", s, make([]float64, s.Size()))
	}
	if !g.usable() {
		return make([]Value, len(xs))
	}
	return out
}

// gradder holds the state of one Grad call.
type gradder struct {
	g      *Graph
	opts   GradOptions
	consts map[string]Value
}

// constant returns a named constant under a fresh name derived from base,
// shared between the uses of one Grad call with the same key.
func (b *gradder) constant(base string, shape Shape, data []float64) Value {
	key := fmt.Sprint(base, shape, data)
	if len(data) > 64 {
		key = "" // large constants are not shared
	}
	if v, ok := b.consts[key]; ok && key != "" {
		return v
	}
	name := base
	for i := 1; ; i++ {
		if _, taken := b.g.names[name]; !taken {
			break
		}
		name = fmt.Sprintf("%s_%d", base, i)
	}
	v := b.g.Const(name, shape, data)
	if key != "" {
		b.consts[key] = v
	}
	return v
}

func ones(n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = 1
	}
	return d
}

// sat clamps a contraction's output when the options ask for it.
func (b *gradder) sat(v Value) Value {
	if b.opts.Saturate == 0 {
		return v
	}
	g := b.g
	return g.Minimum(g.Maximum(v, g.Scalar(-b.opts.Saturate)), g.Scalar(b.opts.Saturate))
}

// pos is [d > 0] on fp16 values (see Grad).
func (b *gradder) pos(d Value) Value {
	g := b.g
	s := g.Scalar(4096)
	return g.Minimum(g.Mul(g.Mul(g.Relu(d), s), s), g.Scalar(1))
}

// sign is sign(x) on fp16 values: clamp(x·2²⁴, −1, 1).
func (b *gradder) sign(x Value) Value {
	g := b.g
	s := g.Scalar(4096)
	return g.Minimum(g.Maximum(g.Mul(g.Mul(x, s), s), g.Scalar(-1)), g.Scalar(1))
}

func (b *gradder) shape(v Value) Shape { return b.g.nodes[v.id].Shape }

// sumAxes sums v over axes (ascending, normalized) by matmuls against
// ones, keeping the reduced dims as 1. Each run of adjacent axes is one
// matmul: v seen as [A, K, C] (K the run's elements) is ones[1, K]·v, or
// v·ones[K, 1] when C = 1, so that no tensor is reshaped wider than v's
// own dims are.
func (b *gradder) sumAxes(v Value, axes []int) Value {
	g := b.g
	for len(axes) > 0 {
		// The last run of adjacent axes.
		j := len(axes) - 1
		i := j
		for i > 0 && axes[i-1] == axes[i]-1 {
			i--
		}
		lo, hi := axes[i], axes[j]
		axes = axes[:i]
		s := b.shape(v)
		kept := s.Clone()
		a, k, c := 1, 1, 1
		for d, n := range s {
			switch {
			case d < lo:
				a *= n
			case d <= hi:
				k *= n
				kept[d] = 1
			default:
				c *= n
			}
		}
		if k == 1 {
			v = g.Reshape(v, kept)
			continue
		}
		var m Value
		switch {
		case c == 1:
			m = g.MatMul(g.Reshape(v, Shape{a, k}), b.constant("grad_ones", Shape{k, 1}, ones(k)), false, false)
		case a == 1:
			m = g.MatMul(b.constant("grad_ones", Shape{1, k}, ones(k)), g.Reshape(v, Shape{k, c}), false, false)
		default:
			m = g.MatMul(b.constant("grad_ones", Shape{1, k}, ones(k)), g.Reshape(v, Shape{a, k, c}), false, false)
		}
		v = g.Reshape(b.sat(m), kept)
	}
	return v
}

// sumTo sums v (of a broadcast shape) down to shape t, which broadcasts to
// v's shape (numpy's rules: aligned on the right).
func (b *gradder) sumTo(v Value, t Shape) Value {
	s := b.shape(v)
	if s.Equal(t) {
		return v
	}
	off := len(s) - len(t)
	var axes []int
	for i := range s {
		if i < off || (t[i-off] == 1 && s[i] != 1) {
			axes = append(axes, i)
		}
	}
	return b.g.Reshape(b.sumAxes(v, axes), t)
}

// broadcastTo materializes v, whose shape has t's rank and broadcasts to
// t, at shape t: an outer product with ones (exact).
func (b *gradder) broadcastTo(v Value, t Shape) Value {
	g := b.g
	s := b.shape(v)
	if s.Equal(t) {
		return v
	}
	var keep, bc []int
	k := 1
	for i := range t {
		if s[i] == 1 && t[i] != 1 {
			bc = append(bc, i)
			k *= t[i]
		} else {
			keep = append(keep, i)
		}
	}
	r := t.Size() / k
	perm := append(append([]int{}, keep...), bc...)
	m := g.MatMul(g.Reshape(v, Shape{r, 1}), b.constant("grad_ones", Shape{1, k}, ones(k)), false, false)
	pshape := make(Shape, len(t))
	for i, p := range perm {
		pshape[i] = t[p]
	}
	m = g.Reshape(m, pshape)
	if slices.IsSorted(perm) {
		return m
	}
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[p] = i
	}
	return g.Transpose(m, inv)
}

// keptShape is x's shape with the dims at axes set to 1.
func keptShape(s Shape, axes []int) Shape { return reducedShape(s, axes, true) }

// rule returns the adjoints of n's inputs from the adjoint gy of its
// output (want[j]: input j needs one; the others may be the zero Value).
func (b *gradder) rule(n *Node, gy Value, want []bool) []Value {
	g := b.g
	in := make([]Value, len(n.Inputs))
	shapes := make([]Shape, len(n.Inputs))
	for j, id := range n.Inputs {
		in[j] = Value{g: g, id: id}
		shapes[j] = g.nodes[id].Shape
	}
	out := Value{g: g, id: n.ID}
	res := make([]Value, len(in))
	a := &n.Attrs
	unb := func(j int, v Value) {
		if want[j] {
			res[j] = b.sumTo(v, shapes[j])
		}
	}
	if d, ok := binaryOps[n.Op]; ok && d.grad != nil {
		d.grad(b, in[0], in[1], out, gy, want, unb)
		return res
	}
	if d, ok := unaryOps[n.Op]; ok && d.grad != nil {
		res[0] = d.grad(b, in[0], out, gy, a)
		return res
	}
	switch n.Op {
	case OpMatMul:
		b.matmul(in, shapes, gy, want, a, res)
	case OpConv2D:
		b.conv(in, shapes, gy, want, &a.Conv, res)
	case OpReduceSum, OpReduceMean:
		k := g.Reshape(gy, keptShape(shapes[0], a.Axes))
		if n.Op == OpReduceMean {
			cnt := shapes[0].Size() / out.Shape().Size()
			k = g.Mul(k, g.Scalar(1/float64(cnt)))
		}
		res[0] = b.broadcastTo(k, shapes[0])
	case OpReduceMax:
		kept := keptShape(shapes[0], a.Axes)
		k := g.Reshape(gy, kept)
		m := g.Reshape(out, kept)
		// [x ≥ max] = 1 − [max − x > 0]; ties all get the gradient.
		mask := g.Sub(g.Scalar(1), b.pos(g.Sub(m, in[0])))
		res[0] = g.Mul(k, mask)
	case OpSoftmax:
		gs := g.Mul(gy, out)
		res[0] = g.Mul(out, g.Sub(gy, b.sumAxes(gs, []int{a.Axis})))
	case OpLayerNorm:
		b.layerNorm(n, in, shapes, gy, want, res)
	case OpReshape:
		res[0] = g.Reshape(gy, shapes[0])
	case OpTranspose:
		inv := make([]int, len(a.Perm))
		for i, p := range a.Perm {
			inv[p] = i
		}
		res[0] = g.Transpose(gy, inv)
	case OpConcat:
		off := 0
		for j, s := range shapes {
			if want[j] {
				begin := make([]int, len(s))
				size := slices.Clone([]int(s))
				begin[a.Axis] = off
				res[j] = g.Slice(gy, begin, size)
			}
			off += s[a.Axis]
		}
	case OpSlice:
		s := shapes[0]
		pads := make([]int, 2*len(s))
		for i := range s {
			pads[2*i] = a.Begin[i]
			pads[2*i+1] = s[i] - a.Begin[i] - a.Size[i]
		}
		res[0] = g.Pad(gy, pads, 0)
	case OpPad:
		s := shapes[0]
		begin := make([]int, len(s))
		for i := range s {
			begin[i] = a.Pads[2*i]
		}
		res[0] = g.Slice(gy, begin, slices.Clone([]int(s)))
	default:
		g.failf("grad", ErrInvalid, "node %d: op %s has no gradient rule", n.ID, n.Op)
	}
	return res
}

// matmul: with X = op(x) [M, K] and Y = op(y) [K, N], dX = gy·Yᵀ and
// dY = Xᵀ·gy, each transposed back when its operand was.
func (b *gradder) matmul(in []Value, shapes []Shape, gy Value, want []bool, a *Attrs, res []Value) {
	g := b.g
	x, y := in[0], in[1]
	tx, ty := a.TransposeX, a.TransposeY
	if want[0] {
		var d Value
		switch {
		case !tx && !ty:
			d = g.MatMul(gy, y, false, true)
		case !tx && ty:
			d = g.MatMul(gy, y, false, false)
		case tx && !ty:
			d = g.MatMul(y, gy, false, true)
		default:
			d = g.MatMul(y, gy, true, true)
		}
		res[0] = b.sumTo(b.sat(d), shapes[0])
	}
	if want[1] {
		var d Value
		switch {
		case !tx && !ty:
			d = g.MatMul(x, gy, true, false)
		case !tx && ty:
			d = g.MatMul(gy, x, true, false)
		case tx && !ty:
			d = g.MatMul(x, gy, false, false)
		default:
			d = g.MatMul(gy, x, true, true)
		}
		res[1] = b.sumTo(b.sat(d), shapes[1])
	}
}

// padCrop pads (before, after > 0) or crops (< 0) axis of v with zeros.
func (b *gradder) padCrop(v Value, axis, before, after int) Value {
	g := b.g
	s := b.shape(v)
	if before < 0 || after < 0 {
		begin := make([]int, len(s))
		size := slices.Clone([]int(s))
		cb, ca := max(-before, 0), max(-after, 0)
		begin[axis] = cb
		size[axis] = s[axis] - cb - ca
		v = g.Slice(v, begin, size)
	}
	if before > 0 || after > 0 {
		pads := make([]int, 2*len(s))
		pads[2*axis], pads[2*axis+1] = max(before, 0), max(after, 0)
		v = g.Pad(v, pads, 0)
	}
	return v
}

// conv: dx is the transposed convolution of gy (zeros inserted between its
// elements for a stride, padded, convolved with the flipped weight whose
// channel axes are swapped within each group); dw (one group only) is a
// convolution of x with gy as the kernel, over the batch.
func (b *gradder) conv(in []Value, shapes []Shape, gy Value, want []bool, o *Conv2DOptions, res []Value) {
	g := b.g
	xs, ws := shapes[0], shapes[1]
	n, cin, h, w := xs[0], xs[1], xs[2], xs[3]
	cout, cg, kh, kw := ws[0], ws[1], ws[2], ws[3]
	gys := b.shape(gy)
	ho, wo := gys[2], gys[3]
	groups := o.Groups
	if want[0] {
		z := gy
		sh, sw := o.Strides[0], o.Strides[1]
		if sh > 1 {
			z = g.Reshape(z, Shape{n * cout, ho, 1, wo})
			z = g.Pad(z, []int{0, 0, 0, 0, 0, sh - 1, 0, 0}, 0)
			z = g.Reshape(z, Shape{n, cout, ho * sh, wo})
		}
		lh := ho * sh
		if sw > 1 {
			z = g.Reshape(z, Shape{n * cout * lh, wo, 1})
			z = g.Pad(z, []int{0, 0, 0, 0, 0, sw - 1}, 0)
			z = g.Reshape(z, Shape{n, cout, lh, wo * sw})
		}
		lw := wo * sw
		eh, ew := o.Dilations[0]*(kh-1), o.Dilations[1]*(kw-1)
		bh, bw := eh-o.Pads[0], ew-o.Pads[2]
		z = b.padCrop(z, 2, bh, h+eh-bh-lh)
		z = b.padCrop(z, 3, bw, w+ew-bw-lw)
		wt := in[1]
		if kh*kw > 1 {
			j := make([]float64, kh*kw*kh*kw)
			for r := range kh * kw {
				j[r*kh*kw+(kh*kw-1-r)] = 1
			}
			wt = g.MatMul(g.Reshape(wt, Shape{groups, cout / groups, cg, kh * kw}), b.constant("grad_flip", Shape{kh * kw, kh * kw}, j), false, false)
		} else {
			wt = g.Reshape(wt, Shape{groups, cout / groups, cg, 1})
		}
		wt = g.Transpose(wt, []int{0, 2, 1, 3})
		wt = g.Reshape(wt, Shape{cin, cout / groups, kh, kw})
		dx := g.Conv2D(z, wt, Conv2DOptions{Dilations: o.Dilations, Groups: groups})
		res[0] = b.sat(dx)
	}
	if want[1] {
		if groups != 1 {
			g.failf("grad", ErrInvalid, "the weight of a conv with %d groups has no gradient rule (only one group): make the weight a constant or use groups = 1", groups)
			return
		}
		if o.Strides == [2]int{1, 1} {
			res[1] = b.convWeightByOffsets(in[0], gy, o, ws)
			return
		}
		xt := g.Transpose(in[0], []int{1, 0, 2, 3})
		gt := g.Transpose(gy, []int{1, 0, 2, 3})
		r := g.Conv2D(xt, gt, Conv2DOptions{Strides: o.Dilations, Pads: o.Pads, Dilations: o.Strides})
		r = b.sat(r)
		if rs := b.shape(r); rs[2] != kh || rs[3] != kw {
			r = g.Slice(r, []int{0, 0, 0, 0}, []int{cin, cout, kh, kw})
		}
		res[1] = g.Transpose(r, []int{1, 0, 2, 3})
	}
}

// convWeightByOffsets is a stride-1 conv's weight gradient one kernel
// offset at a time: dw[:, :, p, q] = Σ_n gy[n]·x_pad[n, :, p·dh…, q·dw…]ᵀ,
// a batched matmul contracting over the output positions and a sum over
// the batch against ones. Unlike the conv form it needs no kernel as
// large as the output, which the engine's kernel limit would refuse.
func (b *gradder) convWeightByOffsets(x, gy Value, o *Conv2DOptions, ws Shape) Value {
	g := b.g
	xs, gys := b.shape(x), b.shape(gy)
	n, cin := xs[0], xs[1]
	cout, kh, kw := ws[0], ws[2], ws[3]
	ho, wo := gys[2], gys[3]
	xp := x
	if o.Pads != [4]int{} {
		xp = g.Pad(x, []int{0, 0, 0, 0, o.Pads[0], o.Pads[1], o.Pads[2], o.Pads[3]}, 0)
	}
	gr := g.Reshape(gy, Shape{n, cout, ho * wo})
	cols := make([]Value, 0, kh*kw)
	for p := range kh {
		for q := range kw {
			sl := g.Slice(xp, []int{0, 0, p * o.Dilations[0], q * o.Dilations[1]}, []int{n, cin, ho, wo})
			m := b.sat(g.MatMul(gr, g.Reshape(sl, Shape{n, cin, ho * wo}), false, true)) // [N, Cout, Cin]
			cols = append(cols, g.Reshape(b.sumAxes(m, []int{0}), Shape{cout, cin, 1}))
		}
	}
	d := cols[0]
	if len(cols) > 1 {
		d = g.Concat(2, cols...)
	}
	return g.Reshape(d, Shape{cout, cin, kh, kw})
}

// layerNorm: with x̂ = (x−μ)·r, r = 1/√(σ²+ε), n the normalized count and
// ĝ = gy·γ: dx = r·(ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)), dγ = Σ gy·x̂ and
// dβ = Σ gy over the other axes.
func (b *gradder) layerNorm(nd *Node, in []Value, shapes []Shape, gy Value, want []bool, res []Value) {
	g := b.g
	a := &nd.Attrs
	xs := shapes[0]
	x := in[0]
	cnt := float64(axesShape(xs, a.Axes).Size())
	inv := g.Scalar(1 / cnt)
	mu := g.Mul(b.sumAxes(x, a.Axes), inv)
	xc := g.Sub(x, mu)
	variance := g.Mul(b.sumAxes(g.Square(xc), a.Axes), inv)
	r := g.Rsqrt(g.Add(variance, g.Scalar(a.Epsilon)))
	xh := g.Mul(xc, r)
	// γ and β as broadcastable to x: their dims at axes, 1 elsewhere.
	pshape := make(Shape, len(xs))
	isAxis := map[int]bool{}
	for _, ax := range a.Axes {
		isAxis[ax] = true
	}
	var other []int
	for i := range xs {
		if isAxis[i] {
			pshape[i] = xs[i]
		} else {
			pshape[i] = 1
			other = append(other, i)
		}
	}
	next := 1
	gh := gy
	if a.HasGamma {
		gam := g.Reshape(in[next], pshape)
		gh = g.Mul(gy, gam)
		if want[next] {
			res[next] = g.Reshape(b.sumAxes(g.Mul(gy, xh), other), shapes[next])
		}
		next++
	}
	if a.HasBeta && want[next] {
		res[next] = g.Reshape(b.sumAxes(gy, other), shapes[next])
	}
	if want[0] {
		m1 := g.Mul(b.sumAxes(gh, a.Axes), inv)
		m2 := g.Mul(b.sumAxes(g.Mul(gh, xh), a.Axes), inv)
		res[0] = g.Mul(r, g.Sub(g.Sub(gh, m1), g.Mul(xh, m2)))
	}
}
