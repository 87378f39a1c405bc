package sim

import (
	"math"
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
//	c = round16( Σ_{k=0…K−1} round16(a_k · b_k) )      (Wide: float32 sum)
//	c = s_K,  s_k = round16(s_{k−1} + round16(a_k · b_k))  (Narrow)
//
// The float32 product of two fp16 values is exact (22 significant bits), so
// round16 of it is the product rounded once. Rounding a product costs three
// flops (split) when it lies in fp16's normal range; per-row magnitude
// bounds decide for each 2×2 tile of outputs whether every product of the
// tile is 0 or normal, and such a tile runs the unchecked kernel. Other tiles
// run a checked kernel that bails out to the exact path at the first product
// (or, Narrow, running sum) outside that range.

// rowBounds holds, for each row of an operand, the largest magnitude and the
// smallest nonzero magnitude (+Inf for an all-zero row; a NaN makes the
// largest +Inf).
type rowBounds struct {
	hi, lo []float64
}

func boundsOf(rows, k int, a []float32, lda int) rowBounds {
	rb := rowBounds{hi: make([]float64, rows), lo: make([]float64, rows)}
	for i := range rows {
		hi, lo := 0.0, math.Inf(1)
		for _, v := range a[i*lda : i*lda+k] {
			x := math.Abs(float64(v))
			if x > hi {
				hi = x
			}
			if x != 0 && x < lo {
				lo = x
			}
			if x != x {
				hi = math.Inf(1)
			}
		}
		rb.hi[i], rb.lo[i] = hi, lo
	}
	return rb
}

// normalProducts reports whether every product of an element of rows ai of
// A with an element of rows bj of B is zero or has a magnitude in
// [minNormal, overflowBound). The float64 products are exact.
func normalProducts(a rowBounds, a0, a1 int, b rowBounds, b0, b1 int) bool {
	hi := max(a.hi[a0], a.hi[a1]) * max(b.hi[b0], b.hi[b1])
	lo := min(a.lo[a0], a.lo[a1]) * min(b.lo[b0], b.lo[b1])
	return hi < overflowBound && lo >= minNormal
}

// dotExact is the reference for one output, on the exact rounding path.
func dotExact(a, b []float32, narrow bool) float32 {
	b = b[:len(a)]
	var s float32
	for k, x := range a {
		p := fp16.Round32(x * b[k])
		if narrow {
			s = fp16.Round32(s + p)
		} else {
			s += p
		}
	}
	return fp16.Round32(s)
}

// wide2x2 sums the split products of rows a0, a1 with rows b0, b1 in
// float32. Every product must be 0 or normal.
func wide2x2(a0, a1, b0, b1 []float32) (s00, s01, s10, s11 float32) {
	n := len(a0)
	a1, b0, b1 = a1[:n], b0[:n], b1[:n]
	for k := 0; k < n; k++ {
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
	return
}

// outside reports whether a nonzero p lies outside [minNormal, overflowBound)
// in magnitude (or is NaN).
func outside(p float32) bool {
	return math.Float32bits(p)&0x7fffffff-minNormalBits >= fastSpan && p != 0
}

// wide2x2Checked is wide2x2 for arbitrary operands; ok is false if a product
// needs the exact path.
func wide2x2Checked(a0, a1, b0, b1 []float32) (s00, s01, s10, s11 float32, ok bool) {
	n := len(a0)
	a1, b0, b1 = a1[:n], b0[:n], b1[:n]
	for k := 0; k < n; k++ {
		x0, x1, y0, y1 := a0[k], a1[k], b0[k], b1[k]
		p00, p01, p10, p11 := x0*y0, x0*y1, x1*y0, x1*y1
		if outside(p00) || outside(p01) || outside(p10) || outside(p11) {
			return 0, 0, 0, 0, false
		}
		s00 += split(p00)
		s01 += split(p01)
		s10 += split(p10)
		s11 += split(p11)
	}
	return s00, s01, s10, s11, true
}

// narrow2x2 rounds every partial sum to fp16 too. ok is false if a product
// (when check is set) or a partial sum needs the exact path. A partial sum
// of two fp16 values below minNormal is a multiple of 2⁻²⁴ and exact, so only
// overflow needs checking there.
func narrow2x2(a0, a1, b0, b1 []float32, check bool) (s00, s01, s10, s11 float32, ok bool) {
	n := len(a0)
	a1, b0, b1 = a1[:n], b0[:n], b1[:n]
	for k := 0; k < n; k++ {
		x0, x1, y0, y1 := a0[k], a1[k], b0[k], b1[k]
		p00, p01, p10, p11 := x0*y0, x0*y1, x1*y0, x1*y1
		if check && (outside(p00) || outside(p01) || outside(p10) || outside(p11)) {
			return 0, 0, 0, 0, false
		}
		v00 := s00 + split(p00)
		v01 := s01 + split(p01)
		v10 := s10 + split(p10)
		v11 := s11 + split(p11)
		if math.Float32bits(v00)&0x7fffffff >= overflowBits || math.Float32bits(v01)&0x7fffffff >= overflowBits ||
			math.Float32bits(v10)&0x7fffffff >= overflowBits || math.Float32bits(v11)&0x7fffffff >= overflowBits {
			return 0, 0, 0, 0, false
		}
		s00, s01, s10, s11 = split(v00), split(v01), split(v10), split(v11)
	}
	return s00, s01, s10, s11, true
}

// dot1 computes one output with the same fast and checked paths.
func dot1(a, b []float32, fast, narrow bool) float32 {
	b = b[:len(a)]
	var s float32
	if !narrow {
		if fast {
			for k, x := range a {
				s += split(x * b[k])
			}
			return r16(s)
		}
		for k, x := range a {
			p := x * b[k]
			if outside(p) {
				return dotExact(a, b, false)
			}
			s += split(p)
		}
		return r16(s)
	}
	for k, x := range a {
		p := x * b[k]
		if !fast && outside(p) {
			return dotExact(a, b, true)
		}
		v := s + split(p)
		if math.Float32bits(v)&0x7fffffff >= overflowBits {
			return dotExact(a, b, true)
		}
		s = split(v)
	}
	return s
}

// dotBlock computes c[i·ldc + j] for i < m, j < n: the fp16 dot product of
// a[i·lda:][:k] and b[j·ldb:][:k]. ab and bb are the operands' row bounds,
// indexed from the block's first row.
func dotBlock(m, n, k int, a []float32, lda int, ab rowBounds, b []float32, ldb int, bb rowBounds, c []float32, ldc int, narrow bool) {
	i := 0
	for ; i+1 < m; i += 2 {
		a0, a1 := a[i*lda:i*lda+k], a[(i+1)*lda:(i+1)*lda+k]
		c0, c1 := c[i*ldc:i*ldc+n], c[(i+1)*ldc:(i+1)*ldc+n]
		j := 0
		for ; j+1 < n; j += 2 {
			b0, b1 := b[j*ldb:j*ldb+k], b[(j+1)*ldb:(j+1)*ldb+k]
			fast := normalProducts(ab, i, i+1, bb, j, j+1)
			var s00, s01, s10, s11 float32
			ok := true
			switch {
			case narrow:
				s00, s01, s10, s11, ok = narrow2x2(a0, a1, b0, b1, !fast)
			case fast:
				s00, s01, s10, s11 = wide2x2(a0, a1, b0, b1)
			default:
				s00, s01, s10, s11, ok = wide2x2Checked(a0, a1, b0, b1)
			}
			if !ok {
				c0[j], c0[j+1] = dotExact(a0, b0, narrow), dotExact(a0, b1, narrow)
				c1[j], c1[j+1] = dotExact(a1, b0, narrow), dotExact(a1, b1, narrow)
				continue
			}
			if !narrow {
				s00, s01, s10, s11 = r16(s00), r16(s01), r16(s10), r16(s11)
			}
			c0[j], c0[j+1], c1[j], c1[j+1] = s00, s01, s10, s11
		}
		if j < n {
			b0 := b[j*ldb : j*ldb+k]
			c0[j] = dot1(a0, b0, normalProducts(ab, i, i, bb, j, j), narrow)
			c1[j] = dot1(a1, b0, normalProducts(ab, i+1, i+1, bb, j, j), narrow)
		}
	}
	if i < m {
		a0 := a[i*lda : i*lda+k]
		for j := range n {
			c[i*ldc+j] = dot1(a0, b[j*ldb:j*ldb+k], normalProducts(ab, i, i, bb, j, j), narrow)
		}
	}
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

// gemmJob is one product C = A·Bᵀ: A is m×k with row stride lda, B is n×k
// with row stride ldb, C is m×n with row stride ldc.
type gemmJob struct {
	m, n, k  int
	a        []float32
	lda      int
	b        []float32
	ldb      int
	c        []float32
	ldc      int
	ab, bb   rowBounds
	rowTiles int // ⌈m / gemmRows⌉
	colTiles int // ⌈n / panel⌉
	panel    int // columns of C (rows of B) per task
}

// gemmRows is the number of rows of A per task; panels of B are sized so
// that one panel stays in a core's L2 cache (about 128 KiB).
const (
	gemmRows   = 32
	panelBytes = 128 << 10
)

func (j *gemmJob) plan() {
	j.panel = max(2, (panelBytes/(4*j.k))&^1)
	j.rowTiles = (j.m + gemmRows - 1) / gemmRows
	j.colTiles = (j.n + j.panel - 1) / j.panel
}

func (j *gemmJob) task(t int, narrow bool) {
	ct, rt := t/j.rowTiles, t%j.rowTiles
	i0, j0 := rt*gemmRows, ct*j.panel
	m, n := min(gemmRows, j.m-i0), min(j.panel, j.n-j0)
	ab := rowBounds{hi: j.ab.hi[i0:], lo: j.ab.lo[i0:]}
	bb := rowBounds{hi: j.bb.hi[j0:], lo: j.bb.lo[j0:]}
	dotBlock(m, n, j.k, j.a[i0*j.lda:], j.lda, ab, j.b[j0*j.ldb:], j.ldb, bb, j.c[i0*j.ldc+j0:], j.ldc, narrow)
}

// runGemms computes every job, spreading tiles over the cores.
func runGemms(jobs []gemmJob, narrow bool) {
	start := make([]int, len(jobs)+1)
	for i := range jobs {
		j := &jobs[i]
		if j.ab.hi == nil {
			j.ab = boundsOf(j.m, j.k, j.a, j.lda)
		}
		if j.bb.hi == nil {
			j.bb = boundsOf(j.n, j.k, j.b, j.ldb)
		}
		j.plan()
		start[i+1] = start[i] + j.rowTiles*j.colTiles
	}
	parallel(start[len(jobs)], func(_, t int) {
		ji := sort.SearchInts(start, t+1) - 1
		jobs[ji].task(t-start[ji], narrow)
	})
}
