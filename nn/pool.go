package nn

import (
	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
)

// poolPad is the value max pooling pads with: fp16's most negative finite
// value, below every activation the engine can hold.
const poolPad = -engine.MaxValue

// MaxPool2D is max pooling of x [N, C, H, W] with a k×k window, stride s
// and padding p on every side (PyTorch's MaxPool2d(k, s, p)); the output
// is [N, C, Ho, Wo] with Ho = ⌊(H + 2p − k)/s⌋ + 1. The engine has no
// max-pool op: it is built one axis at a time from pad, reshape, exact
// reduce_max and slices, and every slice on the last axis starts at
// offset 0 (a slice at a nonzero last-axis offset saturates |x| > 4094 on
// M1–M4).
func MaxPool2D(g *dataflow.Graph, x dataflow.Value, k, s, p int) dataflow.Value {
	if !poolArgs(g, "max_pool", x, k, s, p) {
		return dataflow.Value{}
	}
	return maxPool1D(g, maxPool1D(g, x, 3, k, s, p), 2, k, s, p)
}

// poolArgs checks a pooling layer's operands.
func poolArgs(g *dataflow.Graph, op string, x dataflow.Value, k, s, p int) bool {
	if !ok(g, x) {
		return false
	}
	xs := x.Shape()
	if len(xs) != 4 {
		fail(g, ErrShape, "%s: input of shape %v, want [N, C, H, W]", op, xs)
		return false
	}
	if k < 1 || s < 1 || p < 0 || 2*p > k {
		fail(g, ErrShape, "%s: window %d, stride %d, padding %d: want k ≥ 1, s ≥ 1 and 0 ≤ p ≤ k/2", op, k, s, p)
		return false
	}
	for _, n := range xs[2:] {
		if n+2*p < k {
			fail(g, ErrShape, "%s: input of shape %v is smaller than the %d-wide window with padding %d", op, xs, k, p)
			return false
		}
	}
	return true
}

// maxPool1D pools x [N, C, H, W] along axis (2 or 3): out[i] =
// max_{t<k} xp[s·i + t] with xp the padded axis. Writing s·i + t =
// s·(i+q) + r, the padded axis is reshaped to [L, s] and, for each q, the
// maximum over the first min(s, k − q·s) columns is shifted by q rows.
func maxPool1D(g *dataflow.Graph, x dataflow.Value, axis, k, s, p int) dataflow.Value {
	xs := x.Shape()
	n := xs[axis]
	ho := (n+2*p-k)/s + 1
	groups := (k + s - 1) / s
	l := ho + groups - 1
	total := l * s // padded length the reshape needs
	pads := make([]int, 8)
	pads[2*axis] = p
	after := total - n - p
	if after < 0 {
		begin, size := []int{0, 0, 0, 0}, []int{-1, -1, -1, -1}
		size[axis] = total - p
		x = g.Slice(x, begin, size)
		after = 0
	}
	pads[2*axis+1] = after
	if p > 0 || after > 0 {
		x = g.Pad(x, pads, poolPad)
	}
	var shape5 dataflow.Shape
	if axis == 3 {
		shape5 = dataflow.Shape{xs[0], xs[1], xs[2], l, s} // pair axis last
	} else {
		shape5 = dataflow.Shape{xs[0], xs[1], l, s, xs[3]} // pair axis 3
	}
	r := g.Reshape(x, shape5)
	pair, rowAxis := axis+1, axis
	var out dataflow.Value
	for q := range groups {
		cnt := min(s, k-q*s)
		part := r
		if cnt < s {
			begin, size := []int{0, 0, 0, 0, 0}, []int{-1, -1, -1, -1, -1}
			size[pair] = cnt // offset 0 on the pair axis
			part = g.Slice(part, begin, size)
		}
		if cnt > 1 {
			part = g.ReduceMax(part, []int{pair}, true)
		}
		if l > ho || q > 0 {
			begin, size := []int{0, 0, 0, 0, 0}, []int{-1, -1, -1, -1, -1}
			begin[rowAxis], size[rowAxis] = q, ho
			part = g.Slice(part, begin, size)
		}
		if out.Valid() {
			out = g.Maximum(out, part)
		} else {
			out = part
		}
	}
	res := xs.Clone()
	res[axis] = ho
	return g.Reshape(out, res)
}

// AvgPool2D is average pooling of x [N, C, H, W] with a k×k window, stride
// s and zero padding p, the padding counted in the average (PyTorch's
// AvgPool2d default): a depthwise conv with weights 1/k², so its sums use
// the wide accumulator and never exceed the largest |x|.
func AvgPool2D(g *dataflow.Graph, x dataflow.Value, k, s, p int) dataflow.Value {
	if !poolArgs(g, "avg_pool", x, k, s, p) {
		return dataflow.Value{}
	}
	c := x.Shape()[1]
	w := make([]float64, c*k*k)
	for i := range w {
		w[i] = 1 / float64(k*k)
	}
	wc := constant(g, "avg_pool", dataflow.Shape{c, 1, k, k}, w)
	return g.Conv2D(x, wc, dataflow.Conv2DOptions{Strides: [2]int{s, s}, Pads: [4]int{p, p, p, p}, Groups: c})
}

// GlobalAvgPool is the mean of x [N, C, H, W] over H and W, as [N, C, 1, 1]:
// a matmul with a constant 1/(H·W) column (wide accumulator; the result
// never exceeds the largest |x|).
func GlobalAvgPool(g *dataflow.Graph, x dataflow.Value) dataflow.Value {
	if !ok(g, x) {
		return dataflow.Value{}
	}
	xs := x.Shape()
	if len(xs) != 4 {
		return fail(g, ErrShape, "global_avg_pool: input of shape %v, want [N, C, H, W]", xs)
	}
	hw := xs[2] * xs[3]
	if hw == 1 {
		return x
	}
	w := make([]float64, hw)
	for i := range w {
		w[i] = 1 / float64(hw)
	}
	m := g.MatMul(g.Reshape(x, dataflow.Shape{xs[0] * xs[1], hw}), constant(g, "global_avg_pool", dataflow.Shape{hw, 1}, w), false, false)
	return g.Reshape(m, dataflow.Shape{xs[0], xs[1], 1, 1})
}
