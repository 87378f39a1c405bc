package dataflow

import (
	"math"
	"slices"
)

// Eval computes every output of g in float64 from named inputs (row-major,
// len == the input's Shape.Size()). It is the specification of every op.
//
// Eval first runs Verify. Every input of g must be given, with exactly its
// size (a wrong length wraps ErrShape and names the input, the expected and
// the actual length); a name that is not an input of g is rejected (wrapping
// ErrInvalid). The result maps every output name to a fresh slice: it never
// aliases the inputs, the graph's constants, or another output. Only the
// nodes that some output depends on are computed. Eval does not modify g,
// so several goroutines may Eval one finished graph at once.
//
// Eval holds every computed node in memory as float64: a graph with a live
// node of more than 2⁴⁰ elements (8 TiB) is refused with an error wrapping
// ErrShape that names the node, before anything is allocated.
func Eval(g *Graph, inputs map[string][]float64) (map[string][]float64, error) {
	if err := Verify(g); err != nil {
		return nil, err
	}
	const op Op = "eval"
	known := make(map[string]int, len(g.inputs))
	for _, id := range g.inputs {
		known[g.nodes[id].Name] = id
	}
	var unknown []string
	for name := range inputs {
		if _, ok := known[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, opError(op, ErrInvalid, "unknown input %q (the graph's inputs are %v)", unknown[0], inputNames(g))
	}
	vals := make([][]float64, len(g.nodes))
	for _, id := range g.inputs {
		n := g.nodes[id]
		data, ok := inputs[n.Name]
		if !ok {
			return nil, opError(op, ErrInvalid, "missing input %q (shape %v)", n.Name, n.Shape)
		}
		if len(data) != n.Shape.Size() {
			return nil, opError(op, ErrShape, "input %q has length %d, want %d (shape %v)", n.Name, len(data), n.Shape.Size(), n.Shape)
		}
		vals[id] = slices.Clone(data)
	}

	// Mark the nodes the outputs depend on; inputs precede their readers, so
	// one backward sweep suffices.
	live := make([]bool, len(g.nodes))
	for _, o := range g.outputs {
		live[o.Node] = true
	}
	for i := len(g.nodes) - 1; i >= 0; i-- {
		if live[i] {
			for _, id := range g.nodes[i].Inputs {
				live[id] = true
			}
		}
	}
	for i, n := range g.nodes {
		if live[i] && n.Shape.Size() > evalMaxElements {
			return nil, opError(op, ErrShape, "node %d (%s) has shape %v, %d elements: more than the %d (2⁴⁰) Eval computes in float64 memory",
				i, n.Op, n.Shape, n.Shape.Size(), evalMaxElements)
		}
	}

	for i, n := range g.nodes {
		if !live[i] || n.Op == OpInput {
			continue
		}
		args := make([][]float64, len(n.Inputs))
		shapes := make([]Shape, len(n.Inputs))
		for j, id := range n.Inputs {
			args[j] = vals[id]
			shapes[j] = g.nodes[id].Shape
		}
		v, ok := evalNode(n, args, shapes)
		if !ok {
			return nil, opError(op, ErrInvalid, "node %d: op %q has no evaluator", i, n.Op)
		}
		vals[i] = v
	}

	out := make(map[string][]float64, len(g.outputs))
	for _, o := range g.outputs {
		out[o.Name] = slices.Clone(vals[o.Node])
	}
	return out, nil
}

// evalMaxElements is the largest node Eval computes: 2⁴⁰ float64s are
// 8 TiB, beyond any memory; a larger allocation would crash the process
// (an out-of-memory abort or a makeslice panic) instead of failing.
const evalMaxElements = 1 << 40

// inputNames lists g's input names in creation order.
func inputNames(g *Graph) []string {
	names := make([]string, len(g.inputs))
	for i, id := range g.inputs {
		names[i] = g.nodes[id].Name
	}
	return names
}

// evalNode computes one verified node from its operands' values and shapes;
// it reports false for an op it does not know.
func evalNode(n *Node, x [][]float64, s []Shape) ([]float64, bool) {
	r := evalOp(n, x, s)
	return r, r != nil
}

// evalOp is evalNode's body; nil means an unknown op.
func evalOp(n *Node, x [][]float64, s []Shape) []float64 {
	a := &n.Attrs
	if d, ok := binaryOps[n.Op]; ok {
		return evalBinary(n.Shape, x[0], s[0], x[1], s[1], d.eval)
	}
	if d, ok := unaryOps[n.Op]; ok {
		return evalUnary(x[0], d.eval(a))
	}
	switch n.Op {
	case OpConst:
		return slices.Clone(n.Data)
	case OpMatMul:
		return evalMatMul(n.Shape, x[0], s[0], x[1], s[1], a.TransposeX, a.TransposeY)
	case OpConv2D:
		return evalConv2D(n.Shape, x[0], s[0], x[1], s[1], &a.Conv)
	case OpReduceSum, OpReduceMean, OpReduceMax:
		return evalReduce(n.Op, x[0], s[0], a.Axes)
	case OpSoftmax:
		return evalSoftmax(x[0], s[0], a.Axis)
	case OpLayerNorm:
		return evalLayerNorm(x, s, a)
	case OpReshape:
		return slices.Clone(x[0])
	case OpTranspose:
		return evalTranspose(n.Shape, x[0], s[0], a.Perm)
	case OpConcat:
		return evalConcat(n.Shape, x, s, a.Axis)
	case OpSlice:
		return evalSlice(n.Shape, x[0], s[0], a.Begin)
	case OpPad:
		return evalPad(n.Shape, x[0], s[0], a.Pads, a.PadValue)
	}
	return nil
}

// strides are the row-major strides of s.
func strides(s Shape) []int {
	st := make([]int, len(s))
	k := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = k
		k *= s[i]
	}
	return st
}

// unravel writes the coordinates of flat index i in shape s into c.
func unravel(i int, s Shape, c []int) {
	for d := len(s) - 1; d >= 0; d-- {
		c[d] = i % s[d]
		i /= s[d]
	}
}

// broadcastIndex maps the coordinates c of a value of rank len(c) to the
// flat index of the operand of shape s broadcast to it (s aligned on the
// right; dims of size 1 repeat).
func broadcastIndex(c []int, s Shape, st []int) int {
	off := len(c) - len(s)
	k := 0
	for d := range s {
		if s[d] != 1 {
			k += c[off+d] * st[d]
		}
	}
	return k
}

func evalUnary(x []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = f(v)
	}
	return out
}

func evalBinary(out Shape, x []float64, xs Shape, y []float64, ys Shape, f func(p, q float64) float64) []float64 {
	r := make([]float64, out.Size())
	// Fast paths, element for element the general loop below: operands of
	// the result's shape, or one of a single element.
	switch {
	case len(x) == len(r) && len(y) == len(r) && xs.Equal(out) && ys.Equal(out):
		for i := range r {
			r[i] = f(x[i], y[i])
		}
		return r
	case len(x) == len(r) && xs.Equal(out) && len(y) == 1:
		for i := range r {
			r[i] = f(x[i], y[0])
		}
		return r
	case len(y) == len(r) && ys.Equal(out) && len(x) == 1:
		for i := range r {
			r[i] = f(x[0], y[i])
		}
		return r
	}
	c := make([]int, len(out))
	xst, yst := strides(xs), strides(ys)
	for i := range r {
		unravel(i, out, c)
		r[i] = f(x[broadcastIndex(c, xs, xst)], y[broadcastIndex(c, ys, yst)])
	}
	return r
}

func evalMatMul(out Shape, x []float64, xs Shape, y []float64, ys Shape, tx, ty bool) []float64 {
	rx, ry, ro := len(xs), len(ys), len(out)
	m, n := out[ro-2], out[ro-1]
	k := xs[rx-1]
	if tx {
		k = xs[rx-2]
	}
	// x[b, i, l] is at xb + i·xi + l·xl; y[b, l, j] at yb + l·yl + j·yj.
	xi, xl := xs[rx-1], 1
	if tx {
		xi, xl = 1, xs[rx-1]
	}
	yl, yj := ys[ry-1], 1
	if ty {
		yl, yj = 1, ys[ry-1]
	}
	batch, bx, by := out[:ro-2], xs[:rx-2], ys[:ry-2]
	bxst, byst := strides(bx), strides(by)
	c := make([]int, len(batch))
	r := make([]float64, out.Size())
	for b := range batch.Size() {
		unravel(b, batch, c)
		xb := broadcastIndex(c, bx, bxst) * xs[rx-2] * xs[rx-1]
		yb := broadcastIndex(c, by, byst) * ys[ry-2] * ys[ry-1]
		if yj == 1 {
			// The same sums in the same order (l = 0…k−1 for every
			// output), with y's rows read contiguously.
			for i := range m {
				row := r[(b*m+i)*n : (b*m+i+1)*n]
				for l := range k {
					a := x[xb+i*xi+l*xl]
					yr := y[yb+l*yl : yb+l*yl+n]
					for j, v := range yr {
						row[j] += a * v
					}
				}
			}
			continue
		}
		for i := range m {
			for j := range n {
				sum := 0.0
				for l := range k {
					sum += x[xb+i*xi+l*xl] * y[yb+l*yl+j*yj]
				}
				r[(b*m+i)*n+j] = sum
			}
		}
	}
	return r
}

func evalConv2D(out Shape, x []float64, xs Shape, w []float64, ws Shape, o *Conv2DOptions) []float64 {
	cin, h, wd := xs[1], xs[2], xs[3]
	cout, cg, kh, kw := ws[0], ws[1], ws[2], ws[3]
	oh, ow := out[2], out[3]
	perGroup := cout / o.Groups
	r := make([]float64, out.Size())
	for n := range xs[0] {
		for co := range cout {
			g := co / perGroup
			for i := range oh {
				for j := range ow {
					sum := 0.0
					for cl := range cg {
						ci := g*cg + cl
						for p := range kh {
							hi := i*o.Strides[0] - o.Pads[0] + p*o.Dilations[0]
							if hi < 0 || hi >= h {
								continue
							}
							for q := range kw {
								wi := j*o.Strides[1] - o.Pads[2] + q*o.Dilations[1]
								if wi < 0 || wi >= wd {
									continue
								}
								sum += x[((n*cin+ci)*h+hi)*wd+wi] * w[((co*cg+cl)*kh+p)*kw+q]
							}
						}
					}
					r[((n*cout+co)*oh+i)*ow+j] = sum
				}
			}
		}
	}
	return r
}

// keptIndex maps each flat index of shape s to the flat index of s with the
// dims at axes set to 1 (the keep-dims reduced shape, whose row-major order
// is also that of the reduced shape without those dims).
func keptIndex(s Shape, axes []int) (idx []int, groups int) {
	kept := reducedShape(s, axes, true)
	kst := strides(kept)
	idx = make([]int, s.Size())
	c := make([]int, len(s))
	for i := range idx {
		unravel(i, s, c)
		k := 0
		for d := range s {
			if kept[d] != 1 {
				k += c[d] * kst[d]
			}
		}
		idx[i] = k
	}
	return idx, kept.Size()
}

func evalReduce(op Op, x []float64, xs Shape, axes []int) []float64 {
	idx, groups := keptIndex(xs, axes)
	r := make([]float64, groups)
	if op == OpReduceMax {
		for i := range r {
			r[i] = math.Inf(-1)
		}
	}
	for i, v := range x {
		if op == OpReduceMax {
			r[idx[i]] = math.Max(r[idx[i]], v)
		} else {
			r[idx[i]] += v
		}
	}
	if op == OpReduceMean {
		count := float64(len(x) / groups)
		for i := range r {
			r[i] /= count
		}
	}
	return r
}

func evalSoftmax(x []float64, xs Shape, axis int) []float64 {
	d := xs[axis]
	inner := Shape(xs[axis+1:]).Size()
	outer := Shape(xs[:axis]).Size()
	r := make([]float64, len(x))
	for o := range outer {
		for in := range inner {
			at := func(k int) int { return (o*d+k)*inner + in }
			m := math.Inf(-1)
			for k := range d {
				m = math.Max(m, x[at(k)])
			}
			sum := 0.0
			for k := range d {
				e := math.Exp(x[at(k)] - m)
				r[at(k)] = e
				sum += e
			}
			for k := range d {
				r[at(k)] /= sum
			}
		}
	}
	return r
}

func evalLayerNorm(x [][]float64, s []Shape, a *Attrs) []float64 {
	xs := s[0]
	idx, groups := keptIndex(xs, a.Axes)
	// pidx maps each element to its index in gamma/beta: the flat index of
	// its coordinates at axes.
	p := axesShape(xs, a.Axes)
	pst := strides(p)
	pidx := make([]int, len(x[0]))
	c := make([]int, len(xs))
	for i := range pidx {
		unravel(i, xs, c)
		k := 0
		for j, ax := range a.Axes {
			k += c[ax] * pst[j]
		}
		pidx[i] = k
	}
	count := float64(p.Size())
	mean := make([]float64, groups)
	for i, v := range x[0] {
		mean[idx[i]] += v
	}
	for i := range mean {
		mean[i] /= count
	}
	variance := make([]float64, groups)
	for i, v := range x[0] {
		d := v - mean[idx[i]]
		variance[idx[i]] += d * d
	}
	for i := range variance {
		variance[i] /= count
	}
	var gamma, beta []float64
	next := 1
	if a.HasGamma {
		gamma = x[next]
		next++
	}
	if a.HasBeta {
		beta = x[next]
	}
	r := make([]float64, len(x[0]))
	for i, v := range x[0] {
		y := (v - mean[idx[i]]) / math.Sqrt(variance[idx[i]]+a.Epsilon)
		if gamma != nil {
			y *= gamma[pidx[i]]
		}
		if beta != nil {
			y += beta[pidx[i]]
		}
		r[i] = y
	}
	return r
}

func evalTranspose(out Shape, x []float64, xs Shape, perm []int) []float64 {
	xst := strides(xs)
	r := make([]float64, out.Size())
	c := make([]int, len(out))
	for i := range r {
		unravel(i, out, c)
		k := 0
		for d, p := range perm {
			k += c[d] * xst[p] // out axis d is x axis perm[d]
		}
		r[i] = x[k]
	}
	return r
}

func evalConcat(out Shape, x [][]float64, s []Shape, axis int) []float64 {
	outer := Shape(out[:axis]).Size()
	inner := Shape(out[axis+1:]).Size()
	r := make([]float64, 0, out.Size())
	for o := range outer {
		for j, v := range x {
			block := s[j][axis] * inner
			r = append(r, v[o*block:(o+1)*block]...)
		}
	}
	return r
}

func evalSlice(out Shape, x []float64, xs Shape, begin []int) []float64 {
	xst := strides(xs)
	r := make([]float64, out.Size())
	c := make([]int, len(out))
	for i := range r {
		unravel(i, out, c)
		k := 0
		for d := range c {
			k += (c[d] + begin[d]) * xst[d]
		}
		r[i] = x[k]
	}
	return r
}

func evalPad(out Shape, x []float64, xs Shape, pads []int, value float64) []float64 {
	xst := strides(xs)
	r := make([]float64, out.Size())
	c := make([]int, len(out))
	for i := range r {
		unravel(i, out, c)
		k, inside := 0, true
		for d := range c {
			xc := c[d] - pads[2*d]
			if xc < 0 || xc >= xs[d] {
				inside = false
				break
			}
			k += xc * xst[d]
		}
		if inside {
			r[i] = x[k]
		} else {
			r[i] = value
		}
	}
	return r
}
