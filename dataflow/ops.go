package dataflow

import (
	"math"
	"slices"
)

var (
	labelsXY = []string{"x", "y"}
	labelsX  = []string{"x"}
)

// MatMul is the matrix product of x and y. Both must have rank ≥ 2 (a rank-1
// matmul fails on the device, so it is rejected here; reshape to [1 K] or
// [K 1]). transposeX and transposeY swap the last two dims of their operand
// first; then x is [..., M, K], y is [..., K, N], the batch dims (all but
// the last two) broadcast numpy-style, and the result is
// broadcast(batch_x, batch_y) + [M, N]. Attrs: TransposeX, TransposeY.
func (g *Graph) MatMul(x, y Value, transposeX, transposeY bool) Value {
	s, ok := g.operands(OpMatMul, labelsXY, x, y)
	if !ok {
		return Value{}
	}
	return g.emit(OpMatMul, Attrs{TransposeX: transposeX, TransposeY: transposeY}, s, x, y)
}

// Conv2D is the 2-D cross-correlation (no kernel flip) of x [N, Cin, H, W]
// with the weight w [Cout, Cin/groups, KH, KW], zero-padded:
//
//	y[n, co, i, j] = Σ_{ci ∈ group(co)} Σ_{kh, kw} w[co, ci−g·Cin/G, kh, kw] ·
//	                 x_padded[n, ci, i·sh + kh·dh, j·sw + kw·dw]
//
// where group g = co / (Cout/G) reads input channels [g·Cin/G, (g+1)·Cin/G).
// Each output spatial size is floor((in + pad_before + pad_after − ((k−1)·d+1))/s) + 1
// and must be ≥ 1. Cin and Cout must be divisible by groups. A zero stride,
// dilation or groups entry in opts means 1; Attrs.Conv holds opts with these
// defaults filled in.
func (g *Graph) Conv2D(x, w Value, opts Conv2DOptions) Value {
	s, ok := g.operands(OpConv2D, []string{"x", "weight"}, x, w)
	if !ok {
		return Value{}
	}
	for i := range 2 {
		if opts.Strides[i] == 0 {
			opts.Strides[i] = 1
		}
		if opts.Dilations[i] == 0 {
			opts.Dilations[i] = 1
		}
	}
	if opts.Groups == 0 {
		opts.Groups = 1
	}
	return g.emit(OpConv2D, Attrs{Conv: opts}, s, x, w)
}

// reduce builds a reduction.
func (g *Graph) reduce(op Op, x Value, axes []int, keepDims bool) Value {
	s, ok := g.operands(op, labelsX, x)
	if !ok {
		return Value{}
	}
	norm, err := normAxes(op, axes, s[0])
	if err != nil {
		g.fail(err)
		return Value{}
	}
	return g.emit(op, Attrs{Axes: norm, KeepDims: keepDims}, s, x)
}

// ReduceSum sums x over axes. Axes may be negative (counted from the end);
// nil or empty axes mean all axes; duplicates are rejected. With keepDims the
// reduced dims become 1, otherwise they are removed (removing all gives a
// rank-0 result). Attrs.Axes holds the axes normalized to [0, rank),
// ascending.
func (g *Graph) ReduceSum(x Value, axes []int, keepDims bool) Value {
	return g.reduce(OpReduceSum, x, axes, keepDims)
}

// ReduceMean is the arithmetic mean (sum / count) of x over axes, with axes
// and keepDims as in ReduceSum.
func (g *Graph) ReduceMean(x Value, axes []int, keepDims bool) Value {
	return g.reduce(OpReduceMean, x, axes, keepDims)
}

// ReduceMax is the maximum of x over axes (NaN propagates), with axes and
// keepDims as in ReduceSum.
func (g *Graph) ReduceMax(x Value, axes []int, keepDims bool) Value {
	return g.reduce(OpReduceMax, x, axes, keepDims)
}

// Softmax is exp(x) / Σ_axis exp(x) along axis (negative counts from the
// end; x must have rank ≥ 1). Attrs.Axis holds the axis normalized to
// [0, rank).
func (g *Graph) Softmax(x Value, axis int) Value {
	s, ok := g.operands(OpSoftmax, labelsX, x)
	if !ok {
		return Value{}
	}
	a, ok := normAxis(axis, len(s[0]))
	if !ok {
		g.failf(OpSoftmax, ErrInvalid, "axis %d out of range for shape %v", axis, s[0])
		return Value{}
	}
	return g.emit(OpSoftmax, Attrs{Axis: a}, s, x)
}

// LayerNorm normalizes x over axes (negative allowed; nil or empty means all
// axes):
//
//	μ = mean_axes(x), σ² = mean_axes((x−μ)²)  (biased variance)
//	y = (x − μ) / √(σ² + ε) · γ + β
//
// gamma and beta are optional: the zero Value means ones and zeros. When
// given, each must have the shape of x's dims at the axes in ascending order
// (x [B, T, C] with axes [-1] takes gamma [C]). epsilon must be finite and
// ≥ 0. The node's Inputs are x, then gamma if Attrs.HasGamma, then beta if
// Attrs.HasBeta; Attrs.Axes holds the normalized axes and Attrs.Epsilon ε.
func (g *Graph) LayerNorm(x Value, axes []int, gamma, beta Value, epsilon float64) Value {
	vals := []Value{x}
	labels := []string{"x"}
	if gamma.Valid() {
		vals = append(vals, gamma)
		labels = append(labels, "gamma")
	}
	if beta.Valid() {
		vals = append(vals, beta)
		labels = append(labels, "beta")
	}
	s, ok := g.operands(OpLayerNorm, labels, vals...)
	if !ok {
		return Value{}
	}
	norm, err := normAxes(OpLayerNorm, axes, s[0])
	if err != nil {
		g.fail(err)
		return Value{}
	}
	a := Attrs{Axes: norm, Epsilon: epsilon, HasGamma: gamma.Valid(), HasBeta: beta.Valid()}
	return g.emit(OpLayerNorm, a, s, vals...)
}

// Reshape gives x a new shape with the same number of elements; the
// row-major order of the data is unchanged. One entry of shape may be −1: it
// is inferred from the others. Attrs.Shape holds the resolved shape.
func (g *Graph) Reshape(x Value, shape Shape) Value {
	s, ok := g.operands(OpReshape, labelsX, x)
	if !ok {
		return Value{}
	}
	out := cloneShape(shape)
	infer, known := -1, 1
	for i, d := range out {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d == -1:
			g.failf(OpReshape, ErrInvalid, "shape %v has more than one -1", shape)
			return Value{}
		case d < 1:
			g.failf(OpReshape, ErrShape, "shape %v has dim %d = %d, want ≥ 1 or -1", shape, i, d)
			return Value{}
		case !mulFits(known, d):
			g.failf(OpReshape, ErrShape, "cannot reshape %v (%d elements) to %v, whose dims multiply past what an int counts (%d)", s[0], s[0].Size(), shape, math.MaxInt)
			return Value{}
		default:
			known *= d
		}
	}
	if infer >= 0 {
		size := s[0].Size()
		if size%known != 0 {
			g.failf(OpReshape, ErrShape, "cannot reshape %v (%d elements) to %v", s[0], size, shape)
			return Value{}
		}
		out[infer] = size / known
	}
	return g.emit(OpReshape, Attrs{Shape: out}, s, x)
}

// Transpose permutes the axes of x: result dim i is x's dim perm[i]
// (numpy transpose). Entries of perm may be negative (counted from the end);
// Attrs.Perm holds them normalized.
func (g *Graph) Transpose(x Value, perm []int) Value {
	s, ok := g.operands(OpTranspose, labelsX, x)
	if !ok {
		return Value{}
	}
	p := make([]int, len(perm))
	for i, a := range perm {
		n, ok := normAxis(a, len(s[0]))
		if !ok {
			g.failf(OpTranspose, ErrInvalid, "perm %v: axis %d out of range for shape %v", perm, a, s[0])
			return Value{}
		}
		p[i] = n
	}
	return g.emit(OpTranspose, Attrs{Perm: p}, s, x)
}

// Concat joins xs (at least one, all of the same rank ≥ 1) back to back
// along axis (negative counts from the end); all other dims must be equal.
// Attrs.Axis holds the normalized axis.
func (g *Graph) Concat(axis int, xs ...Value) Value {
	if !g.usable() {
		return Value{}
	}
	if len(xs) == 0 {
		g.failf(OpConcat, ErrInvalid, "no values to concatenate")
		return Value{}
	}
	s, ok := g.operands(OpConcat, nil, xs...)
	if !ok {
		return Value{}
	}
	if len(s[0]) == 0 {
		g.failf(OpConcat, ErrShape, "cannot concatenate rank-0 values (reshape them to [1] first)")
		return Value{}
	}
	a, ok := normAxis(axis, len(s[0]))
	if !ok {
		g.failf(OpConcat, ErrInvalid, "axis %d out of range for shape %v", axis, s[0])
		return Value{}
	}
	return g.emit(OpConcat, Attrs{Axis: a}, s, xs...)
}

// Slice takes the block x[begin[i] : begin[i]+size[i]] on every axis i.
// begin and size have one entry per axis; begin[i] ≥ 0; size[i] == −1 means
// to the end of the axis, otherwise size[i] ≥ 1 and the block must lie
// inside x. Attrs.Begin and Attrs.Size hold the resolved values.
func (g *Graph) Slice(x Value, begin, size []int) Value {
	s, ok := g.operands(OpSlice, labelsX, x)
	if !ok {
		return Value{}
	}
	sh := s[0]
	if len(begin) != len(sh) || len(size) != len(sh) {
		g.failf(OpSlice, ErrInvalid, "begin %v and size %v need %d entries each for shape %v", begin, size, len(sh), sh)
		return Value{}
	}
	b, n := slices.Clone(begin), slices.Clone(size)
	for i := range sh {
		if b[i] < 0 || b[i] >= sh[i] {
			g.failf(OpSlice, ErrShape, "begin %v out of bounds for shape %v on axis %d", begin, sh, i)
			return Value{}
		}
		if n[i] == -1 {
			n[i] = sh[i] - b[i]
		}
	}
	return g.emit(OpSlice, Attrs{Begin: b, Size: n}, s, x)
}

// Pad surrounds x with the constant value: pads has 2·rank entries, the
// count before and after for every axis in axis order
// ([before_0, after_0, before_1, after_1, …]), each ≥ 0. Attrs.Pads and
// Attrs.PadValue hold them.
func (g *Graph) Pad(x Value, pads []int, value float64) Value {
	s, ok := g.operands(OpPad, labelsX, x)
	if !ok {
		return Value{}
	}
	return g.emit(OpPad, Attrs{Pads: slices.Clone(pads), PadValue: value}, s, x)
}
