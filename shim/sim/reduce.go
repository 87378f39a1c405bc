package sim

import (
	"math"
	"slices"
)

type redKind uint8

const (
	redSum redKind = iota
	redMean
	redMax
)

func reduceSpec(k redKind) opSpec {
	return opSpec{
		params: []param{{"x", kData, true}, {"axes", kInts, false}, {"keep_dims", kBool, false}},
		build: func(c *compiler, a *args) (built, error) {
			x := a.data("x")
			rank := len(x.shape)
			var axes []int
			if a.has("axes") {
				var err error
				if axes, err = sortedAxes(a, a.ints("axes"), rank); err != nil {
					return built{}, err
				}
			} else {
				for i := range rank {
					axes = append(axes, i)
				}
			}
			keep := a.bool("keep_dims", false)
			outer, inner, shape := splitAxes(x.shape, axes, keep)
			count := len(inner)
			xs := x.slot
			contiguous := !c.reference // the reduced elements of an output are consecutive
			for i, off := range inner {
				contiguous = contiguous && off == i
			}
			return built{shape: shape, run: func(b [][]float32, out []float32, _ bool) {
				X := b[xs]
				if contiguous {
					for o, base := range outer {
						out[o] = reduceRow(k, X[base:base+count])
					}
					return
				}
				for o, base := range outer {
					switch k {
					case redSum, redMean:
						// The narrow running sum: every partial sum is
						// rounded to fp16, in index order.
						var s float32
						for _, off := range inner {
							s = r16(s + X[base+off])
						}
						if k == redMean {
							// float64 quotient then fp16: innocuous, the
							// count has at most 30 bits.
							s = round64(float64(s) / float64(count))
						}
						out[o] = s
					case redMax:
						m := X[base+inner[0]]
						for _, off := range inner[1:] {
							if v := X[base+off]; v > m || v != v {
								m = v
							}
						}
						out[o] = m
					}
				}
			}}, nil
		},
	}
}

// reduceRow is the reduction of consecutive elements, as the general loop
// computes it.
func reduceRow(k redKind, row []float32) float32 {
	switch k {
	case redMax:
		m := row[0]
		for _, v := range row[1:] {
			if v > m || v != v {
				m = v
			}
		}
		return m
	default:
		var s float32
		for _, v := range row {
			s = r16(s + v)
		}
		if k == redMean {
			s = round64(float64(s) / float64(len(row)))
		}
		return s
	}
}

// splitAxes returns the offsets of the kept positions (outer, row-major
// over the kept dims) and of the reduced ones relative to them (inner,
// row-major over the reduced dims), and the output shape.
func splitAxes(shape, axes []int, keep bool) (outer, inner, out []int) {
	st := stridesOf(shape)
	var ks, kst, rs, rst []int
	for i, d := range shape {
		if slices.Contains(axes, i) {
			rs, rst = append(rs, d), append(rst, st[i])
			if keep {
				out = append(out, 1)
			}
		} else {
			ks, kst = append(ks, d), append(kst, st[i])
			out = append(out, d)
		}
	}
	if out == nil {
		out = []int{}
	}
	return offsetsOver(ks, kst), offsetsOver(rs, rst), out
}

func buildSoftmax(c *compiler, a *args) (built, error) {
	x := a.data("x")
	rank := len(x.shape)
	if rank == 0 {
		return built{}, a.errorf("x is a scalar")
	}
	ax, ok := normAxis(a.int("axis", -1), rank)
	if !ok {
		return built{}, a.errorf("axis %d out of range for rank %d", a.int("axis", -1), rank)
	}
	outer, inner, _ := splitAxes(x.shape, []int{ax}, true)
	xs := x.slot
	return built{shape: x.shape, run: func(b [][]float32, out []float32, _ bool) {
		X := b[xs]
		e := make([]float32, len(inner))
		for _, base := range outer {
			m := X[base+inner[0]]
			for _, off := range inner[1:] {
				m = max(m, X[base+off])
			}
			var sum float32
			for j, off := range inner {
				e[j] = f32(math.Exp(float64(X[base+off] - m)))
				sum += e[j]
			}
			for j, off := range inner {
				out[base+off] = r16(e[j] / sum)
			}
		}
	}}, nil
}

func buildLayerNorm(c *compiler, a *args) (built, error) {
	x := a.data("x")
	rank := len(x.shape)
	var axes []int
	if a.has("axes") {
		var err error
		if axes, err = sortedAxes(a, a.ints("axes"), rank); err != nil {
			return built{}, err
		}
	} else {
		for i := range rank {
			axes = append(axes, i)
		}
	}
	if len(axes) == 0 {
		return built{}, a.errorf("axes is empty")
	}
	nshape := make([]int, len(axes))
	for i, ax := range axes {
		nshape[i] = x.shape[ax]
	}
	param := func(name string, def float32) ([]float32, error) {
		v := a.data(name)
		if v == nil {
			p := make([]float32, numel(nshape))
			for i := range p {
				p[i] = def
			}
			return p, nil
		}
		if !equalShapes(v.shape, nshape) {
			return nil, a.errorf("%s has shape %s, want x's dims at axes %v: %s", name, shapeString(v.shape), axes, shapeString(nshape))
		}
		return v.halfs, nil
	}
	gamma, err := param("gamma", 1)
	if err != nil {
		return built{}, err
	}
	beta, err := param("beta", 0)
	if err != nil {
		return built{}, err
	}
	eps := a.half("epsilon", defaultLayerNormEpsilon)
	outer, inner, _ := splitAxes(x.shape, axes, true)
	n := float32(len(inner))
	xs := x.slot
	return built{shape: x.shape, run: func(b [][]float32, out []float32, _ bool) {
		X := b[xs]
		for _, base := range outer {
			var sum float32
			for _, off := range inner {
				sum += X[base+off]
			}
			mean := sum / n
			var sq float32
			for _, off := range inner {
				d := X[base+off] - mean
				sq += float32(d * d)
			}
			rstd := 1 / f32(math.Sqrt(float64(sq/n+eps)))
			for j, off := range inner {
				y := float32(float32((X[base+off]-mean)*rstd) * gamma[j])
				out[base+off] = r16(y + beta[j])
			}
		}
	}}, nil
}
