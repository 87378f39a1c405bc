package sim

import (
	"math"
	mathbits "math/bits"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/anemone-go/anemone/fp16"
)

// The dot-product kernels of matmul and conv. Every output is the fp16 dot
// product of a row of A and a row of B (B holds the right operand
// transposed, so both rows are contiguous):
//
//	c = round16( Σ_{k=0…K−1} round16(a_k · b_k) )          (Wide: float32 sum)
//	c = s_K,  s_k = round16(s_{k−1} + round16(a_k · b_k))  (Narrow)
//
// The float32 product of two fp16 values is exact (22 significant bits), so
// rounding it to fp16 rounds the product once. That costs three flops
// (split) when the product is 0 or lies in fp16's normal range, and the
// kernels are built so that this is the only case in their inner loops:
//
//   - Overflow: per-row maxima bound every product of a 2×2 tile of outputs;
//     a tile whose bound reaches overflowBound runs a checked kernel that
//     falls back to the exact path at the first product out of range.
//   - Subnormal products: an element is "small" when 0 < |x| < τ, with
//     τ_A·τ_B = 2⁻¹⁴ chosen per product from the operands' magnitudes; a
//     product of two elements that are not small is 0 or at least 2⁻¹⁴.
//     Each row carries a bitmask of its small elements; the tile's dot
//     products run the fast loop between the flagged positions and round
//     the products at those positions with roundProduct, which also
//     handles subnormals; the summation order is the natural one throughout.
//   - Narrow partial sums: the sum of two fp16 values below 2⁻¹⁴ is a
//     multiple of 2⁻²⁴ and exact, so only overflow needs a check there.
//
// Fused multiply-adds: on targets that have them (arm64) the compiler fuses
// a product into a following add or subtract unless an explicit float32
// conversion intervenes. Every split writes float32(p·8193) and
// float32(t − p) for that reason; the products that remain fusable are
// products of two fp16 values, which are exact in float32, so fusing them
// changes nothing.

// operand holds rows of length k with stride ld, and per row the largest
// magnitude (+Inf if a NaN is present) and the bitmask of small elements.
type operand struct {
	data  []float32
	ld    int
	hi    []float64
	mask  []uint64 // words per row
	words int
}

// maxAbs returns the largest magnitude in xs, +Inf if xs holds a NaN. It
// compares the bit patterns of |x|, which order like the values.
func maxAbs(xs []float32) float64 {
	var m uint32
	for _, v := range xs {
		m = max(m, math.Float32bits(v)&0x7fffffff)
	}
	if m > 0x7f800000 { // NaN
		return math.Inf(1)
	}
	return float64(math.Float32frombits(m))
}

// smallThresholds returns τ_A and τ_B with τ_A·τ_B = 2⁻¹⁴. For operands of
// similar scale both are 2⁻⁷; when B's largest magnitude is 2^(2e) times
// A's, τ_A is 2^(−7−e) and τ_B is 2^(−7+e), so that few elements of either
// count as small.
func smallThresholds(maxA, maxB float64) (float32, float32) {
	e := 0
	if maxA > 0 && maxB > 0 && !math.IsInf(maxA, 0) && !math.IsInf(maxB, 0) {
		_, ea := math.Frexp(maxA)
		_, eb := math.Frexp(maxB)
		e = (eb - ea) / 2
	}
	e = max(-7, min(7, e))
	return float32(math.Ldexp(1, -7-e)), float32(math.Ldexp(1, -7+e))
}

// newOperand describes rows of length k: their maxima now, their masks of
// small elements when markSmall is called.
func newOperand(rows, k int, data []float32, ld int) operand {
	words := (k + 63) / 64
	o := operand{data: data, ld: ld, hi: make([]float64, rows), mask: make([]uint64, rows*words), words: words}
	forRows(rows, k, func(i int) { o.hi[i] = maxAbs(data[i*ld : i*ld+k]) })
	return o
}

// markSmall sets the mask bit of every element with 0 < |x| < tau.
func (o operand) markSmall(k int, tau float32) {
	tb := int64(math.Float32bits(tau)) - 1
	forRows(len(o.hi), k, func(i int) {
		row := o.data[i*o.ld : i*o.ld+k]
		m := o.mask[i*o.words : (i+1)*o.words]
		for w := range m {
			var bits uint64
			for j, v := range row[w<<6 : min(len(row), (w+1)<<6)] {
				// |x| − 1 < tau − 1 on the bit patterns: 0 wraps to the top.
				d := int64(uint32(math.Float32bits(v)&0x7fffffff-1)) - tb
				bits |= uint64(d) >> 63 << j
			}
			m[w] = bits
		}
	})
}

// maxHi is the largest row maximum of the operands.
func maxHi(ops ...operand) float64 {
	m := 0.0
	for _, o := range ops {
		for _, h := range o.hi {
			m = max(m, h)
		}
	}
	return m
}

// forRows runs f on every row index, over the cores when the rows hold
// enough elements to pay for it.
func forRows(rows, k int, f func(i int)) {
	const grain = 1 << 15 // elements per task
	per := max(1, grain/max(k, 1))
	if rows*k < 2*grain {
		for i := range rows {
			f(i)
		}
		return
	}
	parallel((rows+per-1)/per, func(_, t int) {
		for i := t * per; i < min(rows, (t+1)*per); i++ {
			f(i)
		}
	})
}

// from returns the operand's rows from r on.
func (o operand) from(r int) operand {
	return operand{data: o.data[r*o.ld:], ld: o.ld, hi: o.hi[r:], mask: o.mask[r*o.words:], words: o.words}
}

func (o operand) row(i, k int) []float32 { return o.data[i*o.ld : i*o.ld+k] }

func (o operand) rowMask(i int) []uint64 { return o.mask[i*o.words : (i+1)*o.words] }

// dotExact is the reference for one output, on the exact rounding path.
func dotExact(a, b []float32, narrow bool) float32 {
	b = b[:len(a)]
	var s float32
	for k, x := range a {
		p := r16(x * b[k])
		if narrow {
			s = r16(s + p)
		} else {
			s += p
		}
	}
	return mmRound(s)
}

// roundProduct rounds a product of two fp16 values whose magnitude is below
// overflowBound to fp16, without a call: by splitting when it is normal,
// and for |p| < 2⁻¹⁴ by adding and subtracting 0.75, whose float32 spacing
// is 2⁻²⁴, the spacing of fp16 subnormals. (A tiny negative p gives +0,
// not −0; the running sums start at +0 and never become −0 in
// round-to-nearest, so the sign of a zero product never shows.)
func roundProduct(p float32) float32 {
	if math.Float32bits(p)&0x7fffffff >= minNormalBits {
		t := float32(p * 8193)
		return t - float32(t-p)
	}
	return float32(p+0.75) - 0.75
}

// wide2x2 sums the products of rows a0, a1 with rows b0, b1 in float32,
// each rounded to fp16 by split, except at the positions listed in flags
// (ascending, ending with the sentinel len(a0)), where roundProduct
// handles subnormal products. No product may reach overflowBound, and
// every product off the flagged positions must be 0 or normal.
func wide2x2(a0, a1, b0, b1 []float32, flags []int32) (s00, s01, s10, s11 float32) {
	n := len(a0)
	a1, b0, b1 = a1[:n], b0[:n], b1[:n]
	k := 0
	for _, f := range flags {
		end := min(int(f), n)
		for ; k < end; k++ {
			x0, x1, y0, y1 := a0[k], a1[k], b0[k], b1[k]
			p := x0 * y0
			t := float32(p * 8193)
			s00 += t - float32(t-p)
			p = x0 * y1
			t = float32(p * 8193)
			s01 += t - float32(t-p)
			p = x1 * y0
			t = float32(p * 8193)
			s10 += t - float32(t-p)
			p = x1 * y1
			t = float32(p * 8193)
			s11 += t - float32(t-p)
		}
		if k >= n {
			break
		}
		x0, x1, y0, y1 := a0[k], a1[k], b0[k], b1[k]
		s00 += roundProduct(x0 * y0)
		s01 += roundProduct(x0 * y1)
		s10 += roundProduct(x1 * y0)
		s11 += roundProduct(x1 * y1)
		k++
	}
	return s00, s01, s10, s11
}

// narrow2x2 is wide2x2 with every partial sum rounded to fp16. When check
// is set, ok is false as soon as a partial sum reaches overflowBound;
// without it, no partial sum may.
func narrow2x2(a0, a1, b0, b1 []float32, flags []int32, check bool) (s00, s01, s10, s11 float32, ok bool) {
	n := len(a0)
	a1, b0, b1 = a1[:n], b0[:n], b1[:n]
	k := 0
	for _, f := range flags {
		end := min(int(f), n)
		if check {
			for ; k < end; k++ {
				x0, x1, y0, y1 := a0[k], a1[k], b0[k], b1[k]
				v00 := s00 + split(x0*y0)
				v01 := s01 + split(x0*y1)
				v10 := s10 + split(x1*y0)
				v11 := s11 + split(x1*y1)
				if tooBig(v00) || tooBig(v01) || tooBig(v10) || tooBig(v11) {
					return 0, 0, 0, 0, false
				}
				s00, s01, s10, s11 = split(v00), split(v01), split(v10), split(v11)
			}
		} else {
			for ; k < end; k++ {
				x0, x1, y0, y1 := a0[k], a1[k], b0[k], b1[k]
				s00 = split(s00 + split(x0*y0))
				s01 = split(s01 + split(x0*y1))
				s10 = split(s10 + split(x1*y0))
				s11 = split(s11 + split(x1*y1))
			}
		}
		if k >= n {
			break
		}
		x0, x1, y0, y1 := a0[k], a1[k], b0[k], b1[k]
		v00 := s00 + roundProduct(x0*y0)
		v01 := s01 + roundProduct(x0*y1)
		v10 := s10 + roundProduct(x1*y0)
		v11 := s11 + roundProduct(x1*y1)
		if tooBig(v00) || tooBig(v01) || tooBig(v10) || tooBig(v11) {
			return 0, 0, 0, 0, false
		}
		s00, s01, s10, s11 = split(v00), split(v01), split(v10), split(v11)
		k++
	}
	return s00, s01, s10, s11, true
}

// tooBig reports whether |v| ≥ overflowBound or v is NaN.
func tooBig(v float32) bool { return math.Float32bits(v)&0x7fffffff >= overflowBits }

// outside reports whether a nonzero p lies outside [minNormal, overflowBound)
// in magnitude (or is NaN).
func outside(p float32) bool {
	return math.Float32bits(p)&0x7fffffff-minNormalBits >= fastSpan && p != 0
}

// dot1 computes one output on a checked loop that falls back to the exact
// path at the first product (or Narrow partial sum) out of range.
func dot1(a, b []float32, narrow bool) float32 {
	b = b[:len(a)]
	var s float32
	for k, x := range a {
		p := x * b[k]
		if outside(p) {
			return dotExact(a, b, narrow)
		}
		if !narrow {
			s += split(p)
			continue
		}
		v := s + split(p)
		if tooBig(v) {
			return dotExact(a, b, true)
		}
		s = split(v)
	}
	return mmRound(s)
}

// flagged lists, into buf, the positions where one of the masks has a bit
// set (a small element in one of the tile's four rows), ascending, then
// the sentinel k. (Testing the products there to keep only the subnormal
// ones costs more than it saves: the loads from B stall the scan.)
func flagged(buf []int32, k int, m0, m1, m2, m3 []uint64) []int32 {
	buf = buf[:0]
	m1, m2, m3 = m1[:len(m0)], m2[:len(m0)], m3[:len(m0)]
	for w, bits0 := range m0 {
		for bits := bits0 | m1[w] | m2[w] | m3[w]; bits != 0; bits &= bits - 1 {
			buf = append(buf, int32(w<<6+mathbits.TrailingZeros64(bits)))
		}
	}
	return append(buf, int32(k))
}

// dotBlock computes c[i·ldc + j] for i < m, j < n: the fp16 dot product of
// row i of a and row j of b, each of length k. scratch is reused for the
// flagged positions of each tile; the possibly grown buffer is returned.
func dotBlock(m, n, k int, a, b operand, c []float32, ldc int, narrow bool, scratch []int32) []int32 {
	flags := scratch[:0]
	growth := math.Pow(1+fp16.UnitRoundoff, float64(k+1)) // also covers rounding P up
	i := 0
	for ; i+1 < m; i += 2 {
		a0, a1 := a.row(i, k), a.row(i+1, k)
		ma0, ma1 := a.rowMask(i), a.rowMask(i+1)
		c0, c1 := c[i*ldc:i*ldc+n], c[(i+1)*ldc:(i+1)*ldc+n]
		ahi := max(a.hi[i], a.hi[i+1])
		j := 0
		for ; j+1 < n; j += 2 {
			b0, b1 := b.row(j, k), b.row(j+1, k)
			ok := false
			var s00, s01, s10, s11 float32
			if ahi*max(b.hi[j], b.hi[j+1]) < overflowBound {
				flags = flagged(flags, k, ma0, ma1, b.rowMask(j), b.rowMask(j+1))
				if narrow {
					// Rounding is monotonic, so |s_k| ≤ (|s_{k−1}| + P)(1 + u)
					// with P ≥ every rounded product: |s_k| ≤ k·P·(1 + u)^k.
					// Below overflowBound the kernel need not check.
					check := float64(k)*ahi*max(b.hi[j], b.hi[j+1])*growth >= overflowBound
					s00, s01, s10, s11, ok = narrow2x2(a0, a1, b0, b1, flags, check)
				} else {
					s00, s01, s10, s11 = wide2x2(a0, a1, b0, b1, flags)
					ok = true
				}
				s00, s01, s10, s11 = mmRound(s00), mmRound(s01), mmRound(s10), mmRound(s11)
			}
			if !ok {
				s00, s01, s10, s11 = dot1(a0, b0, narrow), dot1(a0, b1, narrow), dot1(a1, b0, narrow), dot1(a1, b1, narrow)
			}
			c0[j], c0[j+1], c1[j], c1[j+1] = s00, s01, s10, s11
		}
		if j < n {
			b0 := b.row(j, k)
			c0[j], c1[j] = dot1(a0, b0, narrow), dot1(a1, b0, narrow)
		}
	}
	if i < m {
		a0 := a.row(i, k)
		for j := range n {
			c[i*ldc+j] = dot1(a0, b.row(j, k), narrow)
		}
	}
	return flags
}

// parallel runs f(worker, i) for i in [0, n) on up to GOMAXPROCS goroutines.
// worker is in [0, workers(n)).
func parallel(n int, f func(worker, i int)) {
	w := workers(n)
	if w <= 1 {
		for i := range n {
			f(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for wk := range w {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(wk, i)
			}
		})
	}
	wg.Wait()
}

func workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }

// gemmJob is one product C = A·Bᵀ: A is m×k, B is n×k, C is m×n with row
// stride ldc.
type gemmJob struct {
	m, n, k  int
	a, b     operand
	c        []float32
	ldc      int
	rowTiles int // ⌈m / gemmRows⌉
	colTiles int // ⌈n / panel⌉
	panel    int // columns of C (rows of B) per task
}

// gemmRows is the number of rows of A per task; panels of B are sized so
// that one panel stays in a core's L2 cache.
const (
	gemmRows   = 16
	panelBytes = 128 << 10
)

func (j *gemmJob) plan() {
	j.panel = max(2, (panelBytes/(4*j.k))&^1)
	j.rowTiles = (j.m + gemmRows - 1) / gemmRows
	j.colTiles = (j.n + j.panel - 1) / j.panel
}

func (j *gemmJob) task(t int, narrow bool, scratch []int32) []int32 {
	ct, rt := t/j.rowTiles, t%j.rowTiles
	i0, j0 := rt*gemmRows, ct*j.panel
	m, n := min(gemmRows, j.m-i0), min(j.panel, j.n-j0)
	return dotBlock(m, n, j.k, j.a.from(i0), j.b.from(j0), j.c[i0*j.ldc+j0:], j.ldc, narrow, scratch)
}

// runGemms computes every job, spreading tiles over the cores.
func runGemms(jobs []gemmJob, narrow bool) {
	start := make([]int, len(jobs)+1)
	for i := range jobs {
		jobs[i].plan()
		start[i+1] = start[i] + jobs[i].rowTiles*jobs[i].colTiles
	}
	scratch := make([][]int32, workers(start[len(jobs)]))
	parallel(start[len(jobs)], func(w, t int) {
		ji := sort.SearchInts(start, t+1) - 1
		scratch[w] = jobs[ji].task(t-start[ji], narrow, scratch[w])
	})
}
