package dataflow

import (
	"math"
	"slices"
)

// broadcast returns the numpy broadcast of a and b: shapes aligned on the
// right, each pair of dims equal or one of them 1.
func broadcast(a, b Shape) (Shape, bool) {
	r := max(len(a), len(b))
	out := make(Shape, r)
	for i := range r {
		da, db := 1, 1
		if j := i - (r - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (r - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// normAxis resolves a possibly negative axis against rank; ok is false when
// it is outside [−rank, rank).
func normAxis(axis, rank int) (int, bool) {
	if axis < -rank || axis >= rank {
		return 0, false
	}
	if axis < 0 {
		axis += rank
	}
	return axis, true
}

// normAxes resolves axes against the shape s of op's operand: negative axes
// are resolved, the result is sorted ascending; empty axes mean all axes.
func normAxes(op Op, axes []int, s Shape) ([]int, error) {
	r := len(s)
	if len(axes) == 0 {
		all := make([]int, r)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	out := make([]int, len(axes))
	for i, a := range axes {
		n, ok := normAxis(a, r)
		if !ok {
			return nil, opError(op, ErrInvalid, "axis %d out of range for shape %v (rank %d)", a, s, r)
		}
		out[i] = n
	}
	slices.Sort(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, opError(op, ErrInvalid, "axes %v name axis %d twice (shape %v)", axes, out[i], s)
		}
	}
	return out, nil
}

// checkNormAxes verifies axes are normalized for rank: in range, strictly
// ascending, and non-empty unless rank is 0.
func checkNormAxes(op Op, axes []int, s Shape) error {
	if len(axes) == 0 && len(s) > 0 {
		return opError(op, ErrInvalid, "no axes for shape %v", s)
	}
	for i, a := range axes {
		if a < 0 || a >= len(s) || (i > 0 && a <= axes[i-1]) {
			return opError(op, ErrInvalid, "axes %v not normalized for shape %v", axes, s)
		}
	}
	return nil
}

// reducedShape is s with the dims at axes (normalized) set to 1 when
// keepDims, removed otherwise.
func reducedShape(s Shape, axes []int, keepDims bool) Shape {
	out := make(Shape, 0, len(s))
	for i, d := range s {
		if slices.Contains(axes, i) {
			if keepDims {
				out = append(out, 1)
			}
			continue
		}
		out = append(out, d)
	}
	return out
}

// axesShape is the shape of s's dims at axes, in axes order.
func axesShape(s Shape, axes []int) Shape {
	out := make(Shape, len(axes))
	for i, a := range axes {
		out[i] = s[a]
	}
	return out
}

// arity is the number of operands each op takes; −1 means variadic, −2
// an unknown op.
func arity(op Op) int {
	if _, ok := binaryOps[op]; ok {
		return 2
	}
	if _, ok := unaryOps[op]; ok {
		return 1
	}
	switch op {
	case OpInput, OpConst:
		return 0
	case OpMatMul, OpConv2D:
		return 2
	case OpReduceSum, OpReduceMean, OpReduceMax, OpSoftmax, OpReshape, OpTranspose, OpSlice, OpPad:
		return 1
	case OpLayerNorm, OpConcat:
		return -1
	}
	return -2
}

// infer checks the operand shapes and dtypes of op against its normalized
// attributes and returns the result shape and dtype. The builders and Verify
// share it, so a graph that Verify accepts is one the builders could have made.
// It does not modify attrs.
func infer(op Op, s []Shape, dt []DType, a *Attrs) (Shape, DType, error) {
	switch n := arity(op); {
	case n == -2:
		return nil, 0, opError(op, ErrInvalid, "unknown op")
	case n == 0:
		return nil, 0, opError(op, ErrInvalid, "%s has no operands to infer from", op)
	case n > 0 && len(s) != n:
		return nil, 0, opError(op, ErrInvalid, "%d operands, want %d", len(s), n)
	case len(s) == 0:
		return nil, 0, opError(op, ErrInvalid, "no operands")
	}
	for i := 1; i < len(dt); i++ {
		if dt[i] != dt[0] {
			return nil, 0, opError(op, ErrInvalid, "operand dtypes %v and %v differ", dt[0], dt[i])
		}
	}
	out, err := inferShape(op, s, a)
	if err != nil {
		return nil, 0, err
	}
	if len(out) > MaxRank {
		return nil, 0, opError(op, ErrShape, "result shape %v has rank %d, more than %d", out, len(out), MaxRank)
	}
	for _, d := range out {
		if d < 1 {
			return nil, 0, opError(op, ErrShape, "result shape %v has an empty dim", out)
		}
	}
	if _, ok := elements(out); !ok {
		return nil, 0, opError(op, ErrShape, "result shape %v has more elements than an int counts (%d)", out, math.MaxInt)
	}
	return out, dt[0], nil
}

// inferShape is infer's shape rule for each op.
func inferShape(op Op, s []Shape, a *Attrs) (Shape, error) {
	if _, ok := binaryOps[op]; ok {
		out, ok := broadcast(s[0], s[1])
		if !ok {
			return nil, opError(op, ErrShape, "shapes %v and %v do not broadcast", s[0], s[1])
		}
		return out, nil
	}
	if d, ok := unaryOps[op]; ok {
		if d.check != nil {
			if err := d.check(op, a); err != nil {
				return nil, err
			}
		}
		return s[0].Clone(), nil
	}
	switch op {
	case OpMatMul:
		return inferMatMul(s[0], s[1], a)

	case OpConv2D:
		return inferConv2D(s[0], s[1], &a.Conv)

	case OpReduceSum, OpReduceMean, OpReduceMax:
		if err := checkNormAxes(op, a.Axes, s[0]); err != nil {
			return nil, err
		}
		return reducedShape(s[0], a.Axes, a.KeepDims), nil

	case OpSoftmax:
		if a.Axis < 0 || a.Axis >= len(s[0]) {
			return nil, opError(op, ErrInvalid, "axis %d out of range for shape %v", a.Axis, s[0])
		}
		return s[0].Clone(), nil

	case OpLayerNorm:
		return inferLayerNorm(s, a)

	case OpReshape:
		if p := shapeProblem(a.Shape); p != "" {
			return nil, opError(op, ErrShape, "target %s", p)
		}
		if a.Shape.Size() != s[0].Size() {
			return nil, opError(op, ErrShape, "cannot reshape %v (%d elements) to %v (%d elements)",
				s[0], s[0].Size(), a.Shape, a.Shape.Size())
		}
		return a.Shape.Clone(), nil

	case OpTranspose:
		x := s[0]
		if len(a.Perm) != len(x) {
			return nil, opError(op, ErrInvalid, "perm %v has %d entries, shape %v has rank %d", a.Perm, len(a.Perm), x, len(x))
		}
		seen := make([]bool, len(x))
		out := make(Shape, len(x))
		for i, p := range a.Perm {
			if p < 0 || p >= len(x) || seen[p] {
				return nil, opError(op, ErrInvalid, "perm %v is not a permutation of the axes of %v", a.Perm, x)
			}
			seen[p] = true
			out[i] = x[p]
		}
		return out, nil

	case OpConcat:
		first := s[0]
		if len(first) == 0 {
			return nil, opError(op, ErrShape, "cannot concatenate rank-0 values")
		}
		if a.Axis < 0 || a.Axis >= len(first) {
			return nil, opError(op, ErrInvalid, "axis %d out of range for shape %v", a.Axis, first)
		}
		out := first.Clone()
		for _, t := range s[1:] {
			if len(t) != len(first) {
				return nil, opError(op, ErrShape, "shapes %v and %v differ in rank", first, t)
			}
			for i := range t {
				if i != a.Axis && t[i] != first[i] {
					return nil, opError(op, ErrShape, "shapes %v and %v differ off axis %d", first, t, a.Axis)
				}
			}
			if !addFits(out[a.Axis], t[a.Axis]) {
				return nil, opError(op, ErrShape, "axis %d of the result is longer than an int counts (%d)", a.Axis, math.MaxInt)
			}
			out[a.Axis] += t[a.Axis]
		}
		return out, nil

	case OpSlice:
		x := s[0]
		if len(a.Begin) != len(x) || len(a.Size) != len(x) {
			return nil, opError(op, ErrInvalid, "begin %v and size %v need %d entries each for shape %v", a.Begin, a.Size, len(x), x)
		}
		for i := range x {
			b, n := a.Begin[i], a.Size[i]
			if b < 0 || n < 1 || b >= x[i] || n > x[i]-b {
				return nil, opError(op, ErrShape, "begin %v size %v out of bounds for shape %v on axis %d", a.Begin, a.Size, x, i)
			}
		}
		return Shape(a.Size).Clone(), nil

	case OpPad:
		x := s[0]
		if len(a.Pads) != 2*len(x) {
			return nil, opError(op, ErrInvalid, "pads %v has %d entries, shape %v needs %d", a.Pads, len(a.Pads), x, 2*len(x))
		}
		out := x.Clone()
		for i := range x {
			if a.Pads[2*i] < 0 || a.Pads[2*i+1] < 0 {
				return nil, opError(op, ErrInvalid, "pads %v has a negative entry", a.Pads)
			}
			if !addFits(a.Pads[2*i], a.Pads[2*i+1]) || !addFits(out[i], a.Pads[2*i]+a.Pads[2*i+1]) {
				return nil, opError(op, ErrShape, "pads %v make axis %d of %v longer than an int counts (%d)", a.Pads, i, x, math.MaxInt)
			}
			out[i] += a.Pads[2*i] + a.Pads[2*i+1]
		}
		return out, nil
	}
	return nil, opError(op, ErrInvalid, "unknown op")
}

// inferMatMul: both operands rank ≥ 2, the transposes swap the last two
// dims, batch dims broadcast.
func inferMatMul(x, y Shape, a *Attrs) (Shape, error) {
	if len(x) < 2 || len(y) < 2 {
		return nil, opError(OpMatMul, ErrShape,
			"shapes %v and %v: both operands need rank ≥ 2 (a rank-1 matmul fails on the device; reshape to [1 K] or [K 1])", x, y)
	}
	rx, ry := len(x), len(y)
	m, kx := x[rx-2], x[rx-1]
	if a.TransposeX {
		m, kx = kx, m
	}
	ky, n := y[ry-2], y[ry-1]
	if a.TransposeY {
		ky, n = n, ky
	}
	if kx != ky {
		return nil, opError(OpMatMul, ErrShape,
			"shapes %v (transpose_x=%v) and %v (transpose_y=%v): inner dims %d and %d differ",
			x, a.TransposeX, y, a.TransposeY, kx, ky)
	}
	batch, ok := broadcast(x[:rx-2], y[:ry-2])
	if !ok {
		return nil, opError(OpMatMul, ErrShape, "shapes %v and %v: batch dims do not broadcast", x, y)
	}
	return append(batch, m, n), nil
}

// inferConv2D: x [N, Cin, H, W], w [Cout, Cin/groups, KH, KW], options
// with defaults filled in.
func inferConv2D(x, w Shape, c *Conv2DOptions) (Shape, error) {
	if len(x) != 4 || len(w) != 4 {
		return nil, opError(OpConv2D, ErrShape, "shapes %v and %v: want x [N Cin H W] and weight [Cout Cin/groups KH KW]", x, w)
	}
	for i := range 2 {
		if c.Strides[i] < 1 || c.Dilations[i] < 1 {
			return nil, opError(OpConv2D, ErrInvalid, "strides %v and dilations %v must be ≥ 1", c.Strides, c.Dilations)
		}
	}
	for _, p := range c.Pads {
		if p < 0 {
			return nil, opError(OpConv2D, ErrInvalid, "pads %v has a negative entry", c.Pads)
		}
	}
	if c.Groups < 1 {
		return nil, opError(OpConv2D, ErrInvalid, "groups %d must be ≥ 1", c.Groups)
	}
	g := c.Groups
	if x[1]%g != 0 || w[0]%g != 0 {
		return nil, opError(OpConv2D, ErrShape, "shapes %v and %v: channels %d in and %d out are not divisible by groups %d", x, w, x[1], w[0], g)
	}
	if w[1] != x[1]/g {
		return nil, opError(OpConv2D, ErrShape, "shapes %v and %v: weight has %d input channels, want Cin/groups = %d/%d = %d", x, w, w[1], x[1], g, x[1]/g)
	}
	out := Shape{x[0], w[0], 0, 0}
	for i := range 2 {
		if !addFits(c.Pads[2*i], c.Pads[2*i+1]) || !addFits(x[2+i], c.Pads[2*i]+c.Pads[2*i+1]) || !mulFits(w[2+i]-1, c.Dilations[i]) {
			return nil, opError(OpConv2D, ErrShape, "shapes %v and %v: pads %v or dilations %v make spatial axis %d longer than an int counts (%d)", x, w, c.Pads, c.Dilations, i, math.MaxInt)
		}
		in := x[2+i] + c.Pads[2*i] + c.Pads[2*i+1]
		keff := (w[2+i]-1)*c.Dilations[i] + 1
		if in < keff {
			return nil, opError(OpConv2D, ErrShape, "shapes %v and %v: padded input %d is smaller than the dilated kernel %d on spatial axis %d", x, w, in, keff, i)
		}
		out[2+i] = (in-keff)/c.Strides[i] + 1
	}
	return out, nil
}

// inferLayerNorm: x, then gamma and beta as the flags say; each of them has
// the shape of x's dims at axes.
func inferLayerNorm(s []Shape, a *Attrs) (Shape, error) {
	want := 1
	if a.HasGamma {
		want++
	}
	if a.HasBeta {
		want++
	}
	if len(s) != want {
		return nil, opError(OpLayerNorm, ErrInvalid, "%d operands, but gamma=%v beta=%v needs %d", len(s), a.HasGamma, a.HasBeta, want)
	}
	x := s[0]
	if err := checkNormAxes(OpLayerNorm, a.Axes, x); err != nil {
		return nil, err
	}
	if math.IsNaN(a.Epsilon) || math.IsInf(a.Epsilon, 0) || a.Epsilon < 0 {
		return nil, opError(OpLayerNorm, ErrInvalid, "epsilon %g must be finite and ≥ 0", a.Epsilon)
	}
	p := axesShape(x, a.Axes)
	i := 1
	for _, has := range []struct {
		name string
		ok   bool
	}{{"gamma", a.HasGamma}, {"beta", a.HasBeta}} {
		if !has.ok {
			continue
		}
		if !s[i].Equal(p) {
			return nil, opError(OpLayerNorm, ErrShape, "%s shape %v does not match x %v at axes %v (want %v)", has.name, s[i], x, a.Axes, p)
		}
		i++
	}
	return x.Clone(), nil
}
