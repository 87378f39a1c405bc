package sim

import (
	"slices"
)

func buildReshape(c *compiler, a *args) (built, error) {
	x := a.data("x")
	spec := a.ints("shape")
	shape := make([]int, len(spec))
	infer := -1
	known := 1
	for i, d := range spec {
		switch {
		case d == -1:
			if infer >= 0 {
				return built{}, a.errorf("shape %v has more than one -1", spec)
			}
			infer = i
			continue
		case d == 0:
			// iOS17+: copy x's dim at the same position counted from the
			// right; 1 where x has no such dim.
			j := len(x.shape) - (len(spec) - i)
			d = 1
			if j >= 0 {
				d = x.shape[j]
			}
		case d < 0:
			return built{}, a.errorf("shape %v has a negative entry", spec)
		}
		shape[i] = d
		known *= d
	}
	total := numel(x.shape)
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return built{}, a.errorf("cannot infer the -1 in shape %v for %d elements", spec, total)
		}
		shape[infer] = total / known
	}
	if numel(shape) != total {
		return built{}, a.errorf("shape %v has %d elements, x %s has %d", spec, numel(shape), shapeString(x.shape), total)
	}
	return built{shape: shape, alias: x}, nil
}

func buildTranspose(c *compiler, a *args) (built, error) {
	x := a.data("x")
	rank := len(x.shape)
	perm := a.ints("perm")
	if len(perm) != rank {
		return built{}, a.errorf("perm %v has %d entries, x has rank %d", perm, len(perm), rank)
	}
	seen := make([]bool, rank)
	p := make([]int, rank)
	for i, v := range perm {
		n, ok := normAxis(v, rank)
		if !ok || seen[n] {
			return built{}, a.errorf("perm %v is not a permutation of 0…%d", perm, rank-1)
		}
		seen[n], p[i] = true, n
	}
	xst := stridesOf(x.shape)
	shape := make([]int, rank)
	ist := make([]int, rank) // input stride of each output dim
	for i, d := range p {
		shape[i], ist[i] = x.shape[d], xst[d]
	}
	if rank == 0 {
		return built{shape: shape, alias: x}, nil
	}
	rows := rowOffsets(shape, ist)
	last, ls := shape[rank-1], ist[rank-1]
	xs := x.slot
	return built{shape: shape, run: func(b [][]float32, out []float32, _ bool) {
		X := b[xs]
		for r, off := range rows {
			row := out[r*last : (r+1)*last]
			for j := range row {
				row[j] = X[off+j*ls]
			}
		}
	}}, nil
}

func buildConcat(c *compiler, a *args) (built, error) {
	vals := a.tuples["values"]
	if len(vals) > 2 {
		return built{}, unsupportedf(a.op.Pos, "concat of %d inputs: the engine's concat is reported to take exactly two; nest binary concats", len(vals))
	}
	first := vals[0]
	rank := len(first.shape)
	if rank == 0 {
		return built{}, a.errorf("values are scalars")
	}
	ax, ok := normAxis(a.int("axis", 0), rank)
	if !ok {
		return built{}, a.errorf("axis %d out of range for rank %d", a.int("axis", 0), rank)
	}
	interleave := a.bool("interleave", false)
	shape := slices.Clone(first.shape)
	shape[ax] = 0
	for _, v := range vals {
		if len(v.shape) != rank {
			return built{}, a.errorf("values have ranks %d and %d", rank, len(v.shape))
		}
		for i := range rank {
			if i != ax && v.shape[i] != first.shape[i] {
				return built{}, a.errorf("values have shapes %s and %s, which differ off axis %d", shapeString(first.shape), shapeString(v.shape), ax)
			}
		}
		if interleave && v.shape[ax] != first.shape[ax] {
			return built{}, a.errorf("interleave needs equal shapes; got %s and %s", shapeString(first.shape), shapeString(v.shape))
		}
		shape[ax] += v.shape[ax]
	}
	outer := numel(shape[:ax])
	inner := numel(shape[ax+1:])
	slots := make([]int, len(vals))
	dims := make([]int, len(vals))
	for i, v := range vals {
		slots[i], dims[i] = v.slot, v.shape[ax]
	}
	return built{shape: shape, run: func(b [][]float32, out []float32, _ bool) {
		pos := 0
		if !interleave {
			for o := range outer {
				for i, s := range slots {
					n := dims[i] * inner
					pos += copy(out[pos:pos+n], b[s][o*n:(o+1)*n])
				}
			}
			return
		}
		d := dims[0]
		for o := range outer {
			for k := range d {
				for _, s := range slots {
					src := (o*d + k) * inner
					pos += copy(out[pos:pos+inner], b[s][src:src+inner])
				}
			}
		}
	}}, nil
}

func buildSlice(c *compiler, a *args) (built, error) {
	x := a.data("x")
	rank := len(x.shape)
	begin, size := a.ints("begin"), a.ints("size")
	if len(begin) != rank || len(size) != rank {
		return built{}, a.errorf("begin %v and size %v must have one entry per dimension of x %s", begin, size, shapeString(x.shape))
	}
	if rank == 0 {
		return built{}, a.errorf("x is a scalar")
	}
	shape := make([]int, rank)
	xst := stridesOf(x.shape)
	base := 0
	for i, d := range x.shape {
		bg, sz := begin[i], size[i]
		if bg < 0 || bg >= d {
			return built{}, a.errorf("begin %v is out of range for x %s (negative begins are not accepted)", begin, shapeString(x.shape))
		}
		if sz == -1 {
			sz = d - bg
		}
		if sz < 1 || bg+sz > d {
			return built{}, a.errorf("begin %v with size %v is out of range for x %s", begin, size, shapeString(x.shape))
		}
		shape[i] = sz
		base += bg * xst[i]
	}
	rows := rowOffsets(shape, xst)
	last := shape[rank-1]
	xs := x.slot
	if c.t.WidthSliceClamp && begin[rank-1] != 0 {
		// The width-slice clamp: a slice at a nonzero last-axis offset
		// turns |x| > sliceCliff into ±Inf.
		return built{shape: shape, cliff: sliceCliff, run: func(b [][]float32, out []float32, _ bool) {
			X := b[xs]
			for r, off := range rows {
				row := out[r*last : (r+1)*last]
				for i, v := range X[base+off : base+off+last] {
					row[i] = clampSlice(v)
				}
			}
		}}, nil
	}
	return built{shape: shape, run: func(b [][]float32, out []float32, _ bool) {
		X := b[xs]
		for r, off := range rows {
			copy(out[r*last:(r+1)*last], X[base+off:base+off+last])
		}
	}}, nil
}

func buildPad(c *compiler, a *args) (built, error) {
	x := a.data("x")
	rank := len(x.shape)
	switch mode := a.str("mode", "constant"); mode {
	case "constant":
	case "reflect", "replicate":
		return built{}, unsupportedf(a.op.Pos, "pad: mode %q is not supported (only constant)", mode)
	default:
		return built{}, a.errorf("mode %q is not one of constant, reflect, replicate", mode)
	}
	pad := a.ints("pad")
	if len(pad)%2 != 0 || len(pad) == 0 || len(pad)/2 > rank {
		return built{}, a.errorf("pad %v must hold 2·N entries with 1 ≤ N ≤ rank %d", pad, rank)
	}
	if slices.Min(pad) < 0 {
		return built{}, a.errorf("pad %v has a negative entry", pad)
	}
	cv := a.half("constant_val", 0)
	shape := slices.Clone(x.shape)
	before := make([]int, rank)
	first := rank - len(pad)/2
	for i := first; i < rank; i++ {
		before[i] = pad[2*(i-first)]
		shape[i] += pad[2*(i-first)] + pad[2*(i-first)+1]
	}
	ost := stridesOf(shape)
	base := 0
	for i := range rank {
		base += before[i] * ost[i]
	}
	rows := rowOffsets(x.shape, ost)
	last := x.shape[rank-1]
	xs := x.slot
	return built{shape: shape, run: func(b [][]float32, out []float32, _ bool) {
		X := b[xs]
		for i := range out {
			out[i] = cv
		}
		for r, off := range rows {
			copy(out[base+off:base+off+last], X[r*last:(r+1)*last])
		}
	}}, nil
}
