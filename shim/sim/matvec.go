package sim

import (
	"math"
	mathbits "math/bits"

	"gonum.org/v1/gonum/blas/gonum"
)

// Fast paths for the shapes the solvers run: matrix-vector products (a 1×1
// conv on a [1, K, 1, 1] input, a matmul with one side of at most four rows)
// and small-kernel convs (the 3×3 stencil). They compute exactly the model
// of gemm.go, bit for bit, with the products summed in their natural order;
// they differ only in how a product is rounded to fp16:
//
//   - roundSum rounds every product below overflowBound, subnormal or not,
//     without a branch, so no mask of small elements is needed.
//   - When bounds prove every nonzero product normal (the smallest nonzero
//     magnitudes of the two operands multiply to at least 2⁻¹⁴), the
//     cheaper split rounds them.
//   - Per-row maxima prove that no product reaches overflowBound; a row (or a
//     conv) they do not clear runs the exact path (dotExact, or the generic
//     kernel). Those bounds also prove both operands finite, and then a zero
//     weight or a padding position contributes a product of ±0, which adds
//     nothing to a running sum that is never −0 (it starts at +0, and in
//     round-to-nearest a sum is −0 only when both addends are): the fast
//     paths skip them.

// roundSum rounds p, a product of two fp16 values with |p| < overflowBound,
// to fp16, for a running sum: a zero result may be +0 where r16 gives −0,
// which a sum cannot tell apart (see above). It adds and subtracts c =
// 1.5·2^(E+13), E = max(exponent of p, −14): p + c lies in c's binade, whose
// float32 spacing 2^(E−10) is fp16's spacing at p (2⁻²⁴ for subnormals), so
// float32's round-to-nearest-even rounds p as fp16 does (c is an even
// multiple of that spacing, so ties go to the same side), and subtracting c
// is exact.
func roundSum(p float32) float32 {
	c := math.Float32frombits(max(math.Float32bits(p)&0x7f800000, minNormalBits) + (13<<23 | 1<<22))
	return float32(p+c) - c
}

// hiLo returns the largest magnitude in xs (+Inf if xs holds a NaN) and the
// smallest nonzero one (+Inf if there is none).
func hiLo(xs []float32) (hi, lo float64) {
	// Two chains each, so that the loop is not bound by their latency; on
	// the bit patterns, a zero wraps to the top when 1 is subtracted.
	var m, m1 uint32
	l, l1 := uint32(math.MaxUint32), uint32(math.MaxUint32)
	i := 0
	for ; i+1 < len(xs); i += 2 {
		a, b := math.Float32bits(xs[i])&0x7fffffff, math.Float32bits(xs[i+1])&0x7fffffff
		m, m1 = max(m, a), max(m1, b)
		l, l1 = min(l, a-1), min(l1, b-1)
	}
	if i < len(xs) {
		a := math.Float32bits(xs[i]) & 0x7fffffff
		m, l = max(m, a), min(l, a-1)
	}
	m, l = max(m, m1), min(l, l1)
	hi = float64(math.Float32frombits(m))
	if m > 0x7f800000 {
		hi = math.Inf(1)
	}
	lo = math.Inf(1)
	if l != math.MaxUint32 {
		lo = float64(math.Float32frombits(l + 1))
	}
	return hi, lo
}

// mvGroup is the number of rows a matrix-vector kernel handles at once.
const mvGroup = 4

// mvRows are the rows of a matrix-vector product: row i is
// data[i·ld : i·ld+k]. For a const matrix (constRows) they carry each row's
// largest and smallest nonzero magnitudes and, per group of mvGroup rows,
// the column ranges [start, end) outside which every row of the group is
// zero. Rows of a matrix that changes from run to run (useRows) have no
// bounds: they run checked kernels, which track the largest product
// exponent and recompute a group exactly when a product may have reached
// overflowBound or is not finite.
type mvRows struct {
	data   []float32
	n, k   int
	ld     int
	hi, lo []float64
	spans  [][]int32

	// For the exact-product path (see exactProducts), with a const
	// matrix: wgrid[g][t] describes group g's rows over its span t.
	wgrid [][]grid
}

// gridBlock is the number of consecutive elements of x that matvec
// describes together for the exact-product path: a span is checked against
// the blocks it overlaps, a superset of it, which only makes the check more
// conservative.
const gridBlock = 64

// combine describes the union of the values g and h describe.
func (g grid) combine(h grid) grid {
	return grid{max: max(g.max, h.max), exp: min(g.exp, h.exp), width: max(g.width, h.width)}
}

// grid describes values: their largest magnitude, the exponent of the grid
// they lie on (every value is an integer multiple of 2^exp) and the width
// of the widest significand (the bits from its leading to its last set
// bit; 1 for a power of two).
type grid struct {
	max   float64 // +Inf with an Inf or NaN
	exp   int     // math.MaxInt32 when every value is zero
	width int
}

// gridOf describes xs.
func gridOf(xs []float32) grid {
	var m uint32
	e, width := math.MaxInt32, 0
	for _, v := range xs {
		a := math.Float32bits(v) & 0x7fffffff
		if a == 0 {
			continue
		}
		m = max(m, a)
		// |v| = sig·2^(ex−150): its lowest set bit is at ex − 150 + tz(sig).
		sig, ex := a&(1<<23-1), int(a>>23)
		if ex == 0 {
			ex = 1 // float32 subnormal: no implicit bit
		} else {
			sig |= 1 << 23
		}
		tz := mathbits.TrailingZeros32(sig)
		e = min(e, ex-150+tz)
		width = max(width, mathbits.Len32(sig)-tz)
	}
	g := grid{max: float64(math.Float32frombits(m)), exp: e, width: width}
	if m >= 0x7f800000 {
		g.max = math.Inf(1)
	}
	return g
}

// exactProducts reports whether every product of a value described by w
// with one described by x is an fp16 value, so that rounding it changes
// nothing. The significand of a product is the product of the operands'
// significands, whose width is at most the sum of theirs (exactly the
// other's when one is a power of two); at most 11 bits wide, it fits fp16's
// precision. The product is a multiple of 2^(w.exp+x.exp) ≥ 2⁻²⁴, so that
// below 2⁻¹⁴ it is an fp16 subnormal; below overflowBound, a value of at
// most 11 bits is at most 65504. (All values are finite: the caller's
// bound says so.)
func exactProducts(w, x grid) bool {
	if w.exp == math.MaxInt32 || x.exp == math.MaxInt32 {
		return true // every product is ±0
	}
	return w.max*x.max < overflowBound && w.exp+x.exp >= -24 &&
		(w.width+x.width <= 11 || w.width == 1 && x.width <= 11 || x.width == 1 && w.width <= 11)
}

// useRows points r at n rows without computing bounds: matvec runs the
// checked kernels on them.
func (r *mvRows) useRows(data []float32, n, k, ld int) {
	r.data, r.n, r.k, r.ld, r.spans = data, n, k, ld, nil
	r.hi, r.lo = nil, nil
}

// spanGap is the shortest run of zero columns worth skipping.
const spanGap = 16

// constRows prepares the rows of a const matrix once: their bounds and the
// column spans of each group.
func constRows(data []float32, n, k, ld int) *mvRows {
	r := &mvRows{data: data, n: n, k: k, ld: ld, hi: make([]float64, n), lo: make([]float64, n)}
	forRows(n, k, func(i int) { r.hi[i], r.lo[i] = hiLo(data[i*ld : i*ld+k]) })
	for g0 := 0; g0 < n; g0 += mvGroup {
		rows := min(mvGroup, n-g0)
		var spans []int32
		start, zeros := -1, 0
		for j := range k {
			nz := false
			for i := range rows {
				if data[(g0+i)*ld+j] != 0 {
					nz = true
				}
			}
			switch {
			case nz && start < 0:
				start = j
			case nz && zeros >= spanGap:
				spans = append(spans, int32(start), int32(j-zeros))
				start = j
			}
			if nz {
				zeros = 0
			} else {
				zeros++
			}
		}
		if start >= 0 {
			spans = append(spans, int32(start), int32(k-zeros))
		}
		r.spans = append(r.spans, spans)
	}
	buf := make([]float32, 0, mvGroup*k)
	for g, spans := range r.spans {
		var wg []grid
		for t := 0; t < len(spans); t += 2 {
			buf = buf[:0]
			for i := g * mvGroup; i < min(n, (g+1)*mvGroup); i++ {
				buf = append(buf, data[i*ld+int(spans[t]):i*ld+int(spans[t+1])]...)
			}
			wg = append(wg, gridOf(buf))
		}
		r.wgrid = append(r.wgrid, wg)
	}
	return r
}

// mvGrain is the work (multiply-adds) per parallel task.
const mvGrain = 1 << 15

// matvec writes out[i·os] = the fp16 dot product of row i of w with x, for
// every row, exactly as dotExact computes it. xhi and xlo are x's largest
// and smallest nonzero magnitudes (hiLo).
func matvec(w *mvRows, x []float32, xhi, xlo float64, out []float32, os int, narrow bool) {
	x = x[:w.k]
	var xg []grid // x's grid blocks
	if w.wgrid != nil && !narrow {
		xg = make([]grid, (len(x)+gridBlock-1)/gridBlock)
		for i := range xg {
			xg[i] = gridOf(x[i*gridBlock : min(len(x), (i+1)*gridBlock)])
		}
	}
	groups := (w.n + mvGroup - 1) / mvGroup
	per := max(1, mvGrain/max(1, mvGroup*w.k))
	if groups*mvGroup*w.k < 2*mvGrain || groups <= per {
		for g := range groups {
			mvGroupRows(w, g, x, xhi, xlo, xg, out, os, narrow)
		}
		return
	}
	parallel((groups+per-1)/per, func(_, t int) {
		for g := t * per; g < min(groups, (t+1)*per); g++ {
			mvGroupRows(w, g, x, xhi, xlo, xg, out, os, narrow)
		}
	})
}

// fullSpan is the span list of a group without known zero columns.
func fullSpan(buf *[2]int32, k int) []int32 {
	buf[0], buf[1] = 0, int32(k)
	return buf[:]
}

// mvGroupRows computes the outputs of group g of w's rows; xg describes x's
// blocks of gridBlock elements (nil: no exact-product path).
func mvGroupRows(w *mvRows, g int, x []float32, xhi, xlo float64, xg []grid, out []float32, os int, narrow bool) {
	i0 := g * mvGroup
	rows := min(mvGroup, w.n-i0)
	if w.hi == nil {
		mvGroupChecked(w, i0, rows, x, out, os, narrow)
		return
	}
	k, ld := w.k, w.ld
	row := func(i int) []float32 { return w.data[i*ld : i*ld+k] }
	ghi, glo := 0.0, math.Inf(1)
	for i := i0; i < i0+rows; i++ {
		ghi, glo = max(ghi, w.hi[i]), min(glo, w.lo[i])
	}
	var buf [2]int32
	full := fullSpan(&buf, k)
	if !(ghi*xhi < overflowBound) {
		// Some product may overflow (or an operand is not finite): the
		// rows the bound does not clear take the exact path.
		for i := i0; i < i0+rows; i++ {
			if w.hi[i]*xhi < overflowBound {
				out[i*os] = dotRow(row(i), x, full, w.lo[i]*xlo >= minNormal, narrow)
			} else {
				out[i*os] = dotExact(row(i), x, narrow)
			}
		}
		return
	}
	spans := full
	if w.spans != nil {
		spans = w.spans[g]
	}
	if xg != nil && exactSum(w, g, xg) {
		// Any order gives the same sum: gonum's vectorized dot products.
		var blas gonum.Implementation
		for i := i0; i < i0+rows; i++ {
			r := row(i)
			var s float32
			for t := 0; t < len(spans); t += 2 {
				a, b := spans[t], spans[t+1]
				s += blas.Sdot(int(b-a), r[a:b], 1, x[a:b], 1)
			}
			out[i*os] = mmRound(s)
		}
		return
	}
	split := glo*xlo >= minNormal
	if rows < mvGroup {
		for i := i0; i < i0+rows; i++ {
			out[i*os] = dotRow(row(i), x, spans, split, narrow)
		}
		return
	}
	w0, w1, w2, w3 := row(i0), row(i0+1), row(i0+2), row(i0+3)
	var s0, s1, s2, s3 float32
	for t := 0; t < len(spans); t += 2 {
		a, b := spans[t], spans[t+1]
		xs := x[a:b]
		v0, v1, v2, v3 := w0[a:b], w1[a:b], w2[a:b], w3[a:b]
		switch {
		case narrow:
			s0, s1, s2, s3 = mv4Narrow(v0, v1, v2, v3, xs, s0, s1, s2, s3)
		case xg != nil && exactProducts(w.wgrid[g][t/2], spanGrid(xg, int(a), int(b))):
			s0, s1, s2, s3 = mv4Exact(v0, v1, v2, v3, xs, s0, s1, s2, s3)
		case split:
			s0, s1, s2, s3 = mv4Split(v0, v1, v2, v3, xs, s0, s1, s2, s3)
		default:
			s0, s1, s2, s3 = mv4Round(v0, v1, v2, v3, xs, s0, s1, s2, s3)
		}
	}
	s0, s1, s2, s3 = mmRound(s0), mmRound(s1), mmRound(s2), mmRound(s3)
	out[i0*os], out[(i0+1)*os], out[(i0+2)*os], out[(i0+3)*os] = s0, s1, s2, s3
}

// checkedExp is the float32 exponent field of 2¹⁵: a product whose field
// is below it has magnitude below 32768, short of overflowBound.
const checkedExp = 0x47000000

// mvGroupChecked computes rows i0 … i0+rows−1 with the checked kernels.
func mvGroupChecked(w *mvRows, i0, rows int, x []float32, out []float32, os int, narrow bool) {
	k, ld := w.k, w.ld
	row := func(i int) []float32 { return w.data[i*ld : i*ld+k] }
	if rows == mvGroup {
		w0, w1, w2, w3 := row(i0), row(i0+1), row(i0+2), row(i0+3)
		var s0, s1, s2, s3 float32
		var mx uint32
		if narrow {
			s0, s1, s2, s3, mx = mv4NarrowChecked(w0, w1, w2, w3, x)
		} else {
			s0, s1, s2, s3, mx = mv4RoundChecked(w0, w1, w2, w3, x)
		}
		s0, s1, s2, s3 = mmRound(s0), mmRound(s1), mmRound(s2), mmRound(s3)
		if mx < checkedExp {
			out[i0*os], out[(i0+1)*os], out[(i0+2)*os], out[(i0+3)*os] = s0, s1, s2, s3
			return
		}
		for i := i0; i < i0+rows; i++ {
			out[i*os] = dotExact(row(i), x, narrow)
		}
		return
	}
	i := i0
	for ; i+1 < i0+rows && !narrow; i += 2 {
		s0, s1, mx := mv2RoundChecked(row(i), row(i+1), x)
		if mx < checkedExp {
			out[i*os], out[(i+1)*os] = mmRound(s0), mmRound(s1)
		} else {
			out[i*os], out[(i+1)*os] = dotExact(row(i), x, false), dotExact(row(i+1), x, false)
		}
	}
	for ; i < i0+rows; i++ {
		var s float32
		var mx uint32
		if narrow {
			s, mx = mv1NarrowChecked(row(i), x)
		} else {
			s, mx = mv1RoundChecked(row(i), x)
		}
		s = mmRound(s)
		if mx >= checkedExp {
			s = dotExact(row(i), x, narrow)
		}
		out[i*os] = s
	}
}

// dotRow is one output of the fast path: no product may reach
// overflowBound; split says every nonzero product is normal.
func dotRow(w, x []float32, spans []int32, split, narrow bool) float32 {
	var s float32
	for t := 0; t < len(spans); t += 2 {
		a, b := spans[t], spans[t+1]
		switch {
		case narrow:
			s = mv1Narrow(w[a:b], x[a:b], s)
		case split:
			s = mv1Split(w[a:b], x[a:b], s)
		default:
			s = mv1Round(w[a:b], x[a:b], s)
		}
	}
	return mmRound(s)
}

// The kernels continue float32 running sums (fp16 ones under Narrow) over
// the products of w rows with x. Every explicit float32 conversion is there
// to keep arm64 from fusing a product into the following add or subtract.

func mv4Round(w0, w1, w2, w3, x []float32, s0, s1, s2, s3 float32) (float32, float32, float32, float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for k, v := range x {
		s0 += roundSum(float32(w0[k] * v))
		s1 += roundSum(float32(w1[k] * v))
		s2 += roundSum(float32(w2[k] * v))
		s3 += roundSum(float32(w3[k] * v))
	}
	return s0, s1, s2, s3
}

// exactSum reports whether the products of group g's rows with x are fp16
// values (exactProducts, span by span) and so are their float32 sums in any
// order: every product is a multiple of 2^e, e the smallest grid exponent
// of the spans' products, and so is every partial sum; bounded by the sum
// of all magnitudes, at most 2^(23+e), it has at most 23 significant bits
// and float32 holds it exactly (e ≥ −24, far above float32's subnormals;
// the factor 2 to float32's 2^(24+e) covers the rounding of the bound in
// float64). Then every addition is exact, and the sum is the same in any
// order.
func exactSum(w *mvRows, g int, xg []grid) bool {
	spans := w.spans[g]
	bound, e := 0.0, math.MaxInt32
	for t := 0; t < len(spans); t += 2 {
		wg, sg := w.wgrid[g][t/2], spanGrid(xg, int(spans[t]), int(spans[t+1]))
		if !exactProducts(wg, sg) {
			return false
		}
		if wg.exp == math.MaxInt32 || sg.exp == math.MaxInt32 {
			continue // products ±0
		}
		bound += float64(spans[t+1]-spans[t]) * wg.max * sg.max
		e = min(e, wg.exp+sg.exp)
	}
	return e == math.MaxInt32 || bound <= math.Ldexp(1, 23+e)
}

// spanGrid describes x[a:b] (a superset) from its blocks' grids.
func spanGrid(xg []grid, a, b int) grid {
	g := grid{exp: math.MaxInt32}
	for _, h := range xg[a/gridBlock : (b-1)/gridBlock+1] {
		g = g.combine(h)
	}
	return g
}

// mv4Exact sums products that are fp16 values (exactProducts) as they are.
func mv4Exact(w0, w1, w2, w3, x []float32, s0, s1, s2, s3 float32) (float32, float32, float32, float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for k, v := range x {
		s0 += float32(w0[k] * v)
		s1 += float32(w1[k] * v)
		s2 += float32(w2[k] * v)
		s3 += float32(w3[k] * v)
	}
	return s0, s1, s2, s3
}

func mv4Split(w0, w1, w2, w3, x []float32, s0, s1, s2, s3 float32) (float32, float32, float32, float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for k, v := range x {
		p := float32(w0[k] * v)
		t := float32(p * 8193)
		s0 += t - float32(t-p)
		p = float32(w1[k] * v)
		t = float32(p * 8193)
		s1 += t - float32(t-p)
		p = float32(w2[k] * v)
		t = float32(p * 8193)
		s2 += t - float32(t-p)
		p = float32(w3[k] * v)
		t = float32(p * 8193)
		s3 += t - float32(t-p)
	}
	return s0, s1, s2, s3
}

func mv4Narrow(w0, w1, w2, w3, x []float32, s0, s1, s2, s3 float32) (float32, float32, float32, float32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for k, v := range x {
		s0 = r16(s0 + roundSum(float32(w0[k]*v)))
		s1 = r16(s1 + roundSum(float32(w1[k]*v)))
		s2 = r16(s2 + roundSum(float32(w2[k]*v)))
		s3 = r16(s3 + roundSum(float32(w3[k]*v)))
	}
	return s0, s1, s2, s3
}

func mv1Round(w, x []float32, s float32) float32 {
	w = w[:len(x)]
	for k, v := range x {
		s += roundSum(float32(w[k] * v))
	}
	return s
}

func mv1Split(w, x []float32, s float32) float32 {
	w = w[:len(x)]
	for k, v := range x {
		p := float32(w[k] * v)
		t := float32(p * 8193)
		s += t - float32(t-p)
	}
	return s
}

func mv1Narrow(w, x []float32, s float32) float32 {
	w = w[:len(x)]
	for k, v := range x {
		s = r16(s + roundSum(float32(w[k]*v)))
	}
	return s
}

// The checked kernels also return the largest exponent field of their
// products (see mvGroupChecked); roundSum is written out so that the field
// is extracted once.

func mv4RoundChecked(w0, w1, w2, w3, x []float32) (s0, s1, s2, s3 float32, mx uint32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for k, v := range x {
		p0, p1, p2, p3 := float32(w0[k]*v), float32(w1[k]*v), float32(w2[k]*v), float32(w3[k]*v)
		e0, e1 := math.Float32bits(p0)&0x7f800000, math.Float32bits(p1)&0x7f800000
		e2, e3 := math.Float32bits(p2)&0x7f800000, math.Float32bits(p3)&0x7f800000
		mx = max(mx, e0, e1, e2, e3)
		c0 := math.Float32frombits(max(e0, minNormalBits) + (13<<23 | 1<<22))
		c1 := math.Float32frombits(max(e1, minNormalBits) + (13<<23 | 1<<22))
		c2 := math.Float32frombits(max(e2, minNormalBits) + (13<<23 | 1<<22))
		c3 := math.Float32frombits(max(e3, minNormalBits) + (13<<23 | 1<<22))
		s0 += float32(p0+c0) - c0
		s1 += float32(p1+c1) - c1
		s2 += float32(p2+c2) - c2
		s3 += float32(p3+c3) - c3
	}
	return s0, s1, s2, s3, mx
}

func mv4NarrowChecked(w0, w1, w2, w3, x []float32) (s0, s1, s2, s3 float32, mx uint32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for k, v := range x {
		p0, p1, p2, p3 := float32(w0[k]*v), float32(w1[k]*v), float32(w2[k]*v), float32(w3[k]*v)
		mx = max(mx, math.Float32bits(p0)&0x7f800000, math.Float32bits(p1)&0x7f800000,
			math.Float32bits(p2)&0x7f800000, math.Float32bits(p3)&0x7f800000)
		s0 = r16(s0 + roundSum(p0))
		s1 = r16(s1 + roundSum(p1))
		s2 = r16(s2 + roundSum(p2))
		s3 = r16(s3 + roundSum(p3))
	}
	return s0, s1, s2, s3, mx
}

func mv1RoundChecked(w, x []float32) (s float32, mx uint32) {
	w = w[:len(x)]
	for k, v := range x {
		p := float32(w[k] * v)
		e := math.Float32bits(p) & 0x7f800000
		mx = max(mx, e)
		c := math.Float32frombits(max(e, minNormalBits) + (13<<23 | 1<<22))
		s += float32(p+c) - c
	}
	return s, mx
}

func mv1NarrowChecked(w, x []float32) (s float32, mx uint32) {
	w = w[:len(x)]
	for k, v := range x {
		p := float32(w[k] * v)
		mx = max(mx, math.Float32bits(p)&0x7f800000)
		s = r16(s + roundSum(p))
	}
	return s, mx
}

func mv2RoundChecked(w0, w1, x []float32) (s0, s1 float32, mx uint32) {
	n := len(x)
	w0, w1 = w0[:n], w1[:n]
	for k, v := range x {
		p0, p1 := float32(w0[k]*v), float32(w1[k]*v)
		e0, e1 := math.Float32bits(p0)&0x7f800000, math.Float32bits(p1)&0x7f800000
		mx = max(mx, e0, e1)
		c0 := math.Float32frombits(max(e0, minNormalBits) + (13<<23 | 1<<22))
		c1 := math.Float32frombits(max(e1, minNormalBits) + (13<<23 | 1<<22))
		s0 += float32(p0+c0) - c0
		s1 += float32(p1+c1) - c1
	}
	return s0, s1, mx
}

// dot2x2Checked is the Wide model of the four dot products of rows a0, a1
// with rows b0, b1, checked as mvGroupChecked does: c[2i+j] = a_i·b_j.
func dot2x2Checked(a0, a1, b0, b1 []float32, c *[4]float32) {
	n := len(a0)
	a1, b0, b1 = a1[:n], b0[:n], b1[:n]
	var s00, s01, s10, s11 float32
	var mx uint32
	for k, x0 := range a0 {
		x1, y0, y1 := a1[k], b0[k], b1[k]
		p00, p01, p10, p11 := float32(x0*y0), float32(x0*y1), float32(x1*y0), float32(x1*y1)
		e00, e01 := math.Float32bits(p00)&0x7f800000, math.Float32bits(p01)&0x7f800000
		e10, e11 := math.Float32bits(p10)&0x7f800000, math.Float32bits(p11)&0x7f800000
		mx = max(mx, e00, e01, e10, e11)
		c00 := math.Float32frombits(max(e00, minNormalBits) + (13<<23 | 1<<22))
		c01 := math.Float32frombits(max(e01, minNormalBits) + (13<<23 | 1<<22))
		c10 := math.Float32frombits(max(e10, minNormalBits) + (13<<23 | 1<<22))
		c11 := math.Float32frombits(max(e11, minNormalBits) + (13<<23 | 1<<22))
		s00 += float32(p00+c00) - c00
		s01 += float32(p01+c01) - c01
		s10 += float32(p10+c10) - c10
		s11 += float32(p11+c11) - c11
	}
	if mx < checkedExp {
		*c = [4]float32{mmRound(s00), mmRound(s01), mmRound(s10), mmRound(s11)}
		return
	}
	*c = [4]float32{dotExact(a0, b0, false), dotExact(a0, b1, false), dotExact(a1, b0, false), dotExact(a1, b1, false)}
}
