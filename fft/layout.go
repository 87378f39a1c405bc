package fft

import (
	"fmt"
	"math"
	"math/cmplx"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/parallel"
)

// stage is one dense DFT block of a transform. A transform over dims
// n_1 × … × n_d (row-major, n_1 outermost) on B signals is a sequence of
// stages: the factors of n_1 (factorize), then those of n_2, and so on.
// Before stage i the data is the tensor [1, 2·f, P, Q] (channels: real
// parts then imaginary parts of the f values of the index the stage
// contracts; P: the signal and the frequency digits already computed; Q:
// the index digits still to come); the stage is a 1×1 conv over the
// channels, that is, a matmul whose contraction is the stage's 2·f real
// terms.
type stage struct {
	f     int // block length
	rest  int // product of the later factors of the same dimension
	later int // product of the lengths of the later dimensions
	p, q  int // the P and Q extents before the stage
	// outStride is what the stage's frequency digit k is worth in the
	// natural (row-major) output index.
	outStride int
	shift     int // the stage matrix is DFT_f·2^−shift
}

// twiddled reports whether a twiddle multiply follows the stage (it does
// when the same dimension has later factors: the four-step FFT).
func (s stage) twiddled() bool { return s.rest > 1 }

// layout is the schedule of one transform program.
type layout struct {
	dims   []int
	total  int // product of dims
	batch  int
	stages []stage
	// inExp: the host scales every signal so that its largest complex
	// modulus lies in [2^inExp, 2^(inExp+1)).
	inExp int
	// outShift: the device output times 2^outShift is the transform of the
	// scaled input.
	outShift int
	// roots[d][m] = exp(−2πi·m/dims[d]), for the host's check.
	roots [][]complex128
	// natOf maps the device output order (k_m, then k_1 … k_(m−1), the
	// last fastest) to the natural output index.
	natOf []int
}

// stageBound is the bound every stage output is kept under: half the
// engine's matmul cliff 2¹⁴, leaving a factor 2 for rounding (the fp16
// entries of a DFT row have modulus ≤ 1 + 2⁻¹¹, and a narrow accumulator
// adds at most a factor (1 + 2⁻¹¹)^512 < 1.3 on the way).
const (
	stageBound    = 1 << stageBoundExp
	stageBoundExp = 13
)

// newLayout schedules a transform of the given dims on batch signals.
func newLayout(dims []int, batch, maxBlock int) *layout {
	l := &layout{dims: append([]int(nil), dims...), batch: batch, total: 1}
	for _, d := range dims {
		l.total *= d
	}
	p, q := batch, l.total
	for di, d := range dims {
		later := 1
		for _, e := range dims[di+1:] {
			later *= e
		}
		fs := factorize(d, maxBlock)
		earlier := 1
		for i, f := range fs {
			rest := 1
			for _, g := range fs[i+1:] {
				rest *= g
			}
			q /= f
			l.stages = append(l.stages, stage{f: f, rest: rest, later: later, p: p, q: q,
				outStride: earlier * later, shift: blockShift(f)})
			p *= f
			earlier *= f
		}
	}
	// Growth bound: a stage multiplies the largest modulus by at most
	// f·2^−shift, a twiddle by at most 1 (rounded entries: 1 + 2⁻¹¹, inside
	// the margin of stageBound).
	growth, worst := 1.0, 1.0
	l.outShift = 0
	for _, s := range l.stages {
		growth *= float64(s.f) * math.Ldexp(1, -s.shift)
		worst = max(worst, growth)
		l.outShift += s.shift
	}
	// Largest modulus ≤ 2^(inExp+1) and 2^(inExp+1)·worst ≤ stageBound.
	_, e := math.Frexp(worst) // worst ∈ [2^(e−1), 2^e)
	l.inExp = stageBoundExp - 1 - e
	if worst == math.Ldexp(1, e-1) {
		l.inExp++ // worst a power of two
	}
	for _, d := range dims {
		w := make([]complex128, d)
		for m := range w {
			w[m] = complex(cosTurn(m, d), -sinTurn(m, d))
		}
		l.roots = append(l.roots, w)
	}
	m := len(l.stages)
	r := l.total / l.stages[m-1].f
	l.natOf = make([]int, l.total)
	digits := make([]int, m)
	for t := range l.natOf {
		// t = k_m·r + (k_1 … k_(m−1) in mixed radix, k_(m−1) fastest).
		km, rr := t/r, t%r
		for i := m - 2; i >= 0; i-- {
			digits[i] = rr % l.stages[i].f
			rr /= l.stages[i].f
		}
		digits[m-1] = km
		nat := 0
		for i, s := range l.stages {
			nat += digits[i] * s.outStride
		}
		l.natOf[t] = nat
	}
	return l
}

// blockShift is the power of two a block of length f is scaled by: 1/f
// rounded up to a power of two, so that a stage does not grow the largest
// modulus, unless that would make a nonzero entry an fp16 subnormal (the
// ANE may flush those); the growth left over is then taken from the input
// scaling.
func blockShift(f int) int {
	s := 0
	for 1<<s < f {
		s++
	}
	small := 1.0
	for m := 1; m < f; m++ {
		for _, v := range []float64{cosTurn(m, f), sinTurn(m, f)} {
			if a := math.Abs(v); a > 1e-12 && a < small {
				small = a
			}
		}
	}
	for s > 0 && math.Ldexp(small, -s) < fp16.MinNormal {
		s--
	}
	return s
}

// cosTurn and sinTurn are cos(2π·m/n) and sin(2π·m/n) with m reduced
// exactly modulo n first, so the angle is accurate to float64 rounding.
func cosTurn(m, n int) float64 {
	m %= n
	if m < 0 {
		m += n
	}
	return math.Cos(2 * math.Pi * float64(m) / float64(n))
}

func sinTurn(m, n int) float64 {
	m %= n
	if m < 0 {
		m += n
	}
	return math.Sin(2 * math.Pi * float64(m) / float64(n))
}

// dftBlock returns the real 2f×2f matrix of the f-point DFT with the given
// sign (−1 forward, +1 inverse), row (part_out, k), column (part_in, j):
//
//	[ c  −σs ]   c = cos(2πjk/f), s = sin(2πjk/f), σ = sign
//	[ σs   c ]
//
// so that out_re = Σ c·x_re − σs·x_im and out_im = Σ σs·x_re + c·x_im.
func dftBlock(f, sign int) []float64 {
	n := 2 * f
	w := make([]float64, n*n)
	sg := float64(sign)
	for k := range f {
		for j := range f {
			c, s := cosTurn(j*k, f), sg*sinTurn(j*k, f)
			w[k*n+j] = c
			w[k*n+f+j] = -s
			w[(f+k)*n+j] = s
			w[(f+k)*n+f+j] = c
		}
	}
	return w
}

// twiddle returns the real and imaginary parts of exp(σ·2πi·k·qd/(f·rest))
// on the [f, Q] grid after stage s, q = qd·later + ql.
func twiddle(s stage, sign int) (re, im []float64) {
	re = make([]float64, s.f*s.q)
	im = make([]float64, s.f*s.q)
	sub := s.f * s.rest
	for k := range s.f {
		for q := range s.q {
			qd := q / s.later
			re[k*s.q+q] = cosTurn(k*qd, sub)
			im[k*s.q+q] = float64(sign) * sinTurn(k*qd, sub)
		}
	}
	return re, im
}

// rowShape picks a 2-D shape [rows, cols] for size elements with cols the
// largest divisor of size not above the target's row limit: the program's
// inputs and outputs are declared in this shape and reshaped inside.
func rowShape(size, limit int) dataflow.Shape {
	best := 1
	for c := 1; c*c <= size; c++ {
		if size%c != 0 {
			continue
		}
		if c <= limit {
			best = max(best, c)
		}
		if d := size / c; d <= limit {
			best = max(best, d)
		}
	}
	return dataflow.Shape{size / best, best}
}

// spatial picks [H, W] with H·W = hw and W the largest divisor of hw not
// above limit, for a 1×1 conv whose spatial split does not matter.
func spatial(hw, limit int) (h, w int) {
	s := rowShape(hw, limit)
	return s[0], s[1]
}

// roundConst rounds v to fp16 and flushes a result that would be an fp16
// subnormal to zero. The callers' constants are DFT entries and twiddles
// scaled by at most 2^−8, so a flushed entry is below 2⁻¹⁴ in magnitude
// where the row's largest is at least 2^−8·(1 − 2⁻¹¹): the lost term is
// under 2⁻⁶ of an fp16 ulp of that row's result (blockShift keeps every
// nonzero entry normal for lengths up to MaxBlock; only 2¹⁸-point twiddles
// sin(2π/2¹⁸) ≈ 2.4e-5 are ever flushed, a relative change of 2.4e-5 in
// one product, a tenth of the product's own fp16 rounding).
func roundConst(v float64) float64 {
	r := fp16.Round64(v)
	if math.Abs(r) < fp16.MinNormal {
		return 0
	}
	return r
}

// The single-stage (dense) FP16 program removes the rounding of the input,
// of the DFT entries and of the products, leaving the rounding of the
// result: the host splits each scaled input value x into x_h (5
// significant bits) and x_l = fp16(x − x_h), and each entry W into W_h (6
// significant bits) and W_l = fp16(W − W_h). The conv contracts the three
// copies [x_l | x_h·2⁻¹¹ | x_h] against [W_h | W_l·2¹¹ | W_h] (all times
// the block's 2^−shift): x_h·W_h has at most 11 significant bits and is
// exact in fp16, the two small terms are 2⁻⁶ and 2⁻⁵ of it, so their
// roundings (and the dropped x_l·W_l, 2⁻¹¹) are below 2⁻¹⁶ relative, and
// the wide accumulator adds everything before the one rounding to fp16.
// The small terms come first in the contraction. (On an fp16 running sum
// the package runs digit programs instead; see schemeFor.)
// (W_l·2¹¹ and x_h·2⁻¹¹ keep both factors normal: |W_l| ≥ 2⁻¹⁷ before the
// shift is kept, a smaller one is flushed, a relative change below 2⁻¹⁷.)
const (
	splitCopies  = 3
	splitLoShift = 11
)

// split reports whether the program uses the split operands: single-stage
// transforms only, where the input comes straight from the host.
func (l *layout) split() bool { return len(l.stages) == 1 }

// roundBits rounds v to the nearest value with the given number of
// significant bits (ties to even).
func roundBits(v float64, bits int) float64 {
	if v == 0 {
		return 0
	}
	_, e := math.Frexp(v) // |v| ∈ [2^(e−1), 2^e)
	q := e - bits
	return math.Ldexp(math.RoundToEven(math.Ldexp(v, -q)), q)
}

// splitInput splits a scaled input value (|v| < 2¹⁴) into its 5-bit head
// and the fp16 rounding of the tail; subnormal parts are flushed (they are
// 2²⁶ below the largest input).
func splitInput(v float64) (hi, lo float32) {
	h := roundBits(v, 5)
	if math.Abs(h) < fp16.MinNormal {
		return 0, put(v, 0)
	}
	return float32(h), put(v-h, 0)
}

// splitBlock is the weight [2f, 3·2f] of the split dense stage.
func splitBlock(s stage, sign int) []float64 {
	blk := dftBlock(s.f, sign)
	c := 2 * s.f
	w := make([]float64, c*splitCopies*c)
	for o := range c {
		for i := range c {
			v := blk[o*c+i]
			h := roundBits(v, 6)
			l := v - h
			row := w[o*splitCopies*c:]
			row[i] = roundConst(math.Ldexp(h, -s.shift))
			row[c+i] = roundConst(math.Ldexp(l, splitLoShift-s.shift))
			row[2*c+i] = row[i]
		}
	}
	return w
}

// checkFactor is the gap at which the host's check calls a device result
// wrong (see check).
const checkFactor = 0.25

// check compares the device's transform y of x with what the host can
// verify in O(n) float64 work: Parseval's identity Σ|y_k|² = n·Σ|x_j|², and
// two output bins recomputed by their defining sums. A correct device
// misses by at most about 1e-3 of ‖y‖ in relative L2 (the FP16 bound of
// the staged transforms), so by about 2e-3 on Parseval and, per bin, by a
// few times 1e-3 of the RMS bin magnitude √(Σ|y|²/n) = √(Σ|x|²). A gap of
// checkFactor = 0.25 on either is a failing device: zeros fail Parseval,
// and noise of the right norm fails a bin but for a chance of about 0.1%.
//
// Both sides are first multiplied by 2^e, the power of two the host scaled
// x by for the device (inputScale; exactly, as the transform is linear),
// so the sums of squares neither overflow (|x| ≳ 1e152) nor underflow
// (subnormal x) whatever the scale of x: scaled, |x_j| < 2¹⁴ and
// |y_k| < 2¹⁴·n, so Σ|y|² < 2²⁸·n³. 2^e is applied as two factors, each a
// normal float64 where 2^e itself is not. The messages give unscaled
// values.
func (l *layout) check(x, y []complex128, e int) error {
	return l.verify(y, e, math.NaN(), l.sums(x, e))
}

// checkSums is what check needs of the input: Σ|x·2^e|² and the two bins
// checkBins of the transform of x·2^e, in float64.
type checkSums struct {
	ex   float64
	want [2]complex128
}

// sums computes check's sums of x, which may then be overwritten
// (a transform in place).
func (l *layout) sums(x []complex128, e int) (r checkSums) {
	ks := l.checkBins()
	if len(l.dims) == 1 {
		r.ex, r.want = l.bins1D(x, ks[0], e)
		return r
	}
	f1, f2 := math.Ldexp(1, e/2), math.Ldexp(1, e-e/2)
	for _, v := range x {
		xr, xi := real(v)*f1*f2, imag(v)*f1*f2
		r.ex += xr*xr + xi*xi
	}
	for i, k := range ks {
		r.want[i] = l.bin(x, k, f1, f2)
	}
	return r
}

// verify is check of the device's y against ref, given Σ|y|² as sumY2
// when the caller summed it on the way (it must then be far inside
// float64's range; NaN: verify sums it, scaled).
func (l *layout) verify(y []complex128, e int, sumY2 float64, ref checkSums) error {
	f1, f2 := math.Ldexp(1, e/2), math.Ldexp(1, e-e/2)
	ey := sumY2 * f1 * f1 * f2 * f2
	if sumY2 != sumY2 {
		ey = 0
		for _, v := range y {
			yr, yi := real(v)*f1*f2, imag(v)*f1*f2
			ey += yr*yr + yi*yi
		}
	}
	ex, want := ref.ex, ref.want
	if ex == 0 {
		return nil
	}
	if math.IsInf(ey, 0) {
		// Finite inputs scaled into the device's range give finite
		// device values, so an infinite y is the unscaling passing
		// float64's largest value: a transform within the mode's rounding
		// of it (inputScale lets through every transform whose exact
		// value is finite).
		for k, v := range y {
			if cmplx.IsInf(v) {
				return fmt.Errorf("bin %d is %w", k, roundedPastMax("transform", v))
			}
		}
	}
	n := float64(l.total)
	if !(math.Abs(ey-n*ex) <= checkFactor*n*ex) {
		return fmt.Errorf("Σ|X|² = %.6g·4^%d where Parseval's identity wants n·Σ|x|² = %.6g·4^%d: %w", ey, -e, n*ex, -e, ErrDevice)
	}
	// The RMS bin magnitude is √(Σ|X|²/n) = √(Σ|x|²).
	rms := math.Sqrt(ex)
	for i, k := range l.checkBins() {
		got := complex(real(y[k])*f1*f2, imag(y[k])*f1*f2)
		if d := cmplxAbs(got - want[i]); !(d <= checkFactor*rms) {
			return fmt.Errorf("bin %d is %v, the host's float64 sum gives %v (difference %.3g of the RMS bin): %w",
				k, y[k], complex(math.Ldexp(real(want[i]), -e), math.Ldexp(imag(want[i]), -e)), d/rms, ErrDevice)
		}
	}
	return nil
}

// roundedPastMax is the ErrRange of a result value v that rounding took
// past float64's largest value (what names the result: "transform",
// "inverse"); its text follows the value's position in the caller's
// message.
func roundedPastMax(what string, v complex128) error {
	return fmt.Errorf("%v: the %s lies within the rounding of this precision mode of float64's largest value %g and was rounded past it; scale the input down (by 2 suffices): %w", v, what, math.MaxFloat64, ErrRange)
}

// checkBins are the two bins check recomputes: k, fixed but far from any
// pattern of the staged layout, and its mirror total − k, whose roots are
// the conjugates of k's, so that one root sequence serves both bins of a
// 1-D signal.
func (l *layout) checkBins() [2]int {
	if l.total < 2 {
		return [2]int{0, 0}
	}
	k := 1 + (7919*l.total/11)%(l.total-1)
	return [2]int{k, l.total - k}
}

// bins1D is Σ|x·2^e|² and bins k and n − k of the 1-D transform of
// x·2^e, in one pass: what check needs of a 1-D signal. Where x·2^e is
// the device's input of a signal of moderate scale the sums are formed on
// x and scaled after (as two normal factors); at extreme scales on a
// scaled copy, so that no square overflows or underflows.
func (l *layout) bins1D(x []complex128, k, e int) (ex float64, out [2]complex128) {
	f1, f2 := math.Ldexp(1, e/2), math.Ldexp(1, e-e/2)
	if e < -400 || e > 400 {
		s := make([]complex128, len(x))
		for i, v := range x {
			s[i] = complex(real(v)*f1*f2, imag(v)*f1*f2)
		}
		x, f1, f2 = s, 1, 1
	}
	// Long signals in parts, one per core, each from its own first roots.
	p := parts(len(x), len(x))
	type partial struct {
		ex     float64
		s0, s1 complex128
	}
	sums := make([]partial, p)
	parallel.Ranges(len(x), p, func(i, lo, hi int) {
		pt := &sums[i]
		pt.ex, pt.s0, pt.s1 = l.bins1DFrom(x[lo:hi], lo, k)
	})
	for _, pt := range sums {
		ex, out[0], out[1] = ex+pt.ex, out[0]+pt.s0, out[1]+pt.s1
	}
	ex = ex * f1 * f1 * f2 * f2
	for i, v := range out {
		out[i] = complex(real(v)*f1*f2, imag(v)*f1*f2)
	}
	return ex, out
}

// binsPart is the fewest elements bins1D gives a core.
const binsPart = 1 << 14

// bins1DFrom is bins1D's unscaled sums over x = signal[j0 : j0+len(x)]:
// Σ|x_j|², Σ x_j·ω^(jk) and Σ x_j·ω^(−jk). The roots ω^(jk) are stepped by
// a complex product, ω^((j+1)k) = ω^(jk)·ω^k, and taken afresh from the
// table every rootResync elements, so that their error stays below
// rootResync·2⁻⁵² (far below the check's fp16 tolerance) while the table,
// read at stride k, is touched once per rootResync elements rather than
// once per element (a cache miss each for a long signal). With a = Re x,
// b = Im x and w = ω^(jk), the two bins share four products:
// x·w = (a·Re w − b·Im w) + i(a·Im w + b·Re w) and
// x·conj(w) = (a·Re w + b·Im w) + i(b·Re w − a·Im w).
func (l *layout) bins1DFrom(x []complex128, j0, k int) (ex float64, s0, s1 complex128) {
	w, n := l.roots[0], l.dims[0]
	k %= n
	// Two elements a step: the roots of the even ones advance by ω^(2k),
	// each odd one's is its even neighbour's times ω^k, so the product
	// chain that bounds the loop's speed is half as long.
	sr, si := real(w[k]), imag(w[k])
	s2 := w[2*k%n]
	s2r, s2i := real(s2), imag(s2)
	var wr, wi, arwr, biwi, aiwi, brwr float64
	j := 0
	for ; j+1 < len(x); j += 2 {
		if j%rootResync == 0 {
			r := w[(j0+j)%n*k%n]
			wr, wi = real(r), imag(r)
		}
		vr, vi := wr*sr-wi*si, wr*si+wi*sr // the odd element's root
		a, b := real(x[j]), imag(x[j])
		c, d := real(x[j+1]), imag(x[j+1])
		ex += a*a + b*b + c*c + d*d
		arwr += a*wr + c*vr
		biwi += b*wi + d*vi
		aiwi += a*wi + c*vi
		brwr += b*wr + d*vr
		wr, wi = wr*s2r-wi*s2i, wr*s2i+wi*s2r
	}
	if j < len(x) { // an odd length's last element
		if j%rootResync == 0 {
			r := w[(j0+j)%n*k%n]
			wr, wi = real(r), imag(r)
		}
		a, b := real(x[j]), imag(x[j])
		ex += a*a + b*b
		arwr += a * wr
		biwi += b * wi
		aiwi += a * wi
		brwr += b * wr
	}
	return ex, complex(arwr-biwi, aiwi+brwr), complex(arwr+biwi, brwr-aiwi)
}

// rootResync is how many roots bins1D steps by products between reads
// of the table.
const rootResync = 64

// bin is output k of the transform of x·f1·f2 by its defining sum (row-major
// multi-dimensional indices), in float64. The exponent of each root is
// kept per dimension as j_d·k_d mod n_d, advanced by k_d as j_d steps.
func (l *layout) bin(x []complex128, k int, f1, f2 float64) complex128 {
	nd := len(l.dims)
	kd := make([]int, nd) // digits of k, last dimension fastest
	r := k
	for d := nd - 1; d >= 0; d-- {
		kd[d] = r % l.dims[d]
		r /= l.dims[d]
	}
	jd := make([]int, nd)
	ph := make([]int, nd) // j_d·k_d mod n_d
	last, nl, kl := l.roots[nd-1], l.dims[nd-1], kd[nd-1]
	outer := complex(1, 0) // the product of the other dimensions' roots
	var sr, si float64
	for i := 0; i < len(x); i += nl {
		for _, v := range x[i : i+nl] {
			w := last[ph[nd-1]] * outer
			a, b := real(v)*f1*f2, imag(v)*f1*f2
			sr += a*real(w) - b*imag(w)
			si += a*imag(w) + b*real(w)
			if ph[nd-1] += kl; ph[nd-1] >= nl {
				ph[nd-1] -= nl
			}
		}
		ph[nd-1] = 0
		// Advance the outer digits (d < nd−1) by one, last fastest.
		for d := nd - 2; d >= 0; d-- {
			jd[d]++
			if ph[d] += kd[d]; ph[d] >= l.dims[d] {
				ph[d] -= l.dims[d]
			}
			if jd[d] < l.dims[d] {
				break
			}
			jd[d], ph[d] = 0, 0
		}
		outer = complex(1, 0)
		for d := range nd - 1 {
			outer *= l.roots[d][ph[d]]
		}
	}
	return complex(sr, si)
}

func cmplxAbs(v complex128) float64 { return math.Hypot(real(v), imag(v)) }
