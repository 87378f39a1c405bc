package precision

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/fp16"
)

// Conversion counts what rounding a float64 slice to fp16 did.
type Conversion struct {
	Overflow  int // finite values whose magnitude rounds past 65504, and ±Inf
	NaN       int // NaN inputs
	Underflow int // nonzero values that became ±0
	Subnormal int // nonzero values that became fp16 subnormals (|y| < 2⁻¹⁴): the ANE may flush them
}

func (c *Conversion) count(x, y float64) {
	switch {
	case math.IsNaN(x):
		c.NaN++
	case math.IsInf(y, 0):
		c.Overflow++
	case x != 0 && y == 0:
		c.Underflow++
	case y != 0 && math.Abs(y) < fp16.MinNormal:
		c.Subnormal++
	}
}

// ToFP16 rounds each src[i] to the nearest fp16 (ties to even) and stores
// the value, exactly, in dst[i]. It counts overflows, underflows and
// subnormal results. dst and src must have the same length (ErrShape).
// Any NaN or any value that rounds beyond ±65504 (including ±Inf) is an
// error wrapping ErrRange that names the first such index and value; dst is
// still filled (with ±Inf or NaN there) and the counts are complete.
func ToFP16(dst []float32, src []float64) (Conversion, error) {
	return ScaleToFP16(dst, src, 0)
}

// ScaleToFP16 stores fp16(src[i]·2^e) in dst[i]. The scaling is exact (a
// power of two, math.Ldexp) unless a scaled value leaves float64's normal
// range, so the only rounding is the one to fp16. Errors are those of
// ToFP16.
func ScaleToFP16(dst []float32, src []float64, e int) (Conversion, error) {
	var c Conversion
	if len(dst) != len(src) {
		return c, fmt.Errorf("precision: dst has length %d, src %d: %w", len(dst), len(src), ErrShape)
	}
	bad := -1
	ec := clampExp(e) // once, not per element: math.Ldexp(v, ec) is ldexp(v, e)
	for i, v := range src {
		y := fp16.Round64(math.Ldexp(v, ec))
		c.count(v, y)
		if bad < 0 && (math.IsNaN(y) || math.IsInf(y, 0)) {
			bad = i
		}
		dst[i] = float32(y)
	}
	if bad >= 0 {
		if e == 0 {
			return c, fmt.Errorf("precision: src[%d] = %v does not fit fp16 (|x| ≤ 65504): %w", bad, src[bad], ErrRange)
		}
		return c, fmt.Errorf("precision: src[%d]·2^%d = %v does not fit fp16 (|x| ≤ 65504): %w", bad, e, math.Ldexp(src[bad], ec), ErrRange)
	}
	return c, nil
}

// maxExpShift bounds the exponents ldexp passes to math.Ldexp: any shift
// past ±2200 takes every finite nonzero float64 (2⁻¹⁰⁷⁴ … 2¹⁰²⁴) to 0 or
// ±Inf anyway, and math.Ldexp adds the shift to the value's own exponent
// in an int, which wraps for a shift near math.MinInt or math.MaxInt
// (math.Ldexp(1e300, math.MaxInt) is 0, math.Ldexp(1e-8, math.MinInt) +Inf).
const maxExpShift = 2200

// clampExp limits e to [−maxExpShift, maxExpShift].
func clampExp(e int) int { return max(-maxExpShift, min(e, maxExpShift)) }

// ldexp is x·2^e for every int e, as math.Ldexp is for moderate ones.
func ldexp(x float64, e int) float64 { return math.Ldexp(x, clampExp(e)) }

// Pow2Target is the binade that Pow2Scale moves a vector's largest
// magnitude into: max|x·2^e| ∈ [2^Pow2Target, 2^(Pow2Target+1)) = [1, 2).
//
// The choice serves products. Two operands scaled this way have products
// below 4, so a length-K dot product of them is below 4K, and stays under
// fp16's 65504 for every K ≤ 16376 — the whole contraction length a target
// allows (16384) but for 8, with no further headroom needed. A larger
// target would overflow sooner (k = 4 puts products near 2¹⁰ and
// overflows at K = 64); a smaller one would push small entries into fp16's
// subnormal range (below 2⁻¹⁴), which the ANE may flush. With [1, 2) an
// entry keeps full fp16 precision down to 2⁻¹⁴ of the largest.
const Pow2Target = 0

// Pow2Scale returns the exponent e for which the largest magnitude of x·2^e
// lies in [2^Pow2Target, 2^(Pow2Target+1)) = [1, 2). Multiplying by 2^e and
// later by 2^−e is exact (barring float64 underflow of entries more than
// 2¹⁰²² below the largest), so the scaling adds no error. An all-zero (or
// empty) x gives 0. NaN or ±Inf is an error wrapping ErrRange.
func Pow2Scale(x []float64) (int, error) {
	m, err := maxAbs("Pow2Scale", x)
	if err != nil {
		return 0, err
	}
	if m == 0 {
		return 0, nil
	}
	return binadeShift(m, Pow2Target), nil
}

// binadeShift returns e with m·2^e ∈ [2^k, 2^(k+1)) for m > 0 finite.
func binadeShift(m float64, k int) int {
	_, p := math.Frexp(m) // m = f·2^p, f ∈ [½, 1): m ∈ [2^(p−1), 2^p)
	return k + 1 - p
}

// maxAbs returns max|x_i|, or an ErrRange error naming fn and the first
// NaN or ±Inf.
func maxAbs(fn string, x []float64) (float64, error) {
	m := 0.0
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("precision: %s: x[%d] = %v: %w", fn, i, v, ErrRange)
		}
		if a := math.Abs(v); a > m {
			m = a
		}
	}
	return m, nil
}

// splitTarget is the binade each SplitToFP16 limb's largest magnitude is
// put in: [2¹⁴, 2¹⁵). Transport wants as much of fp16's normal range
// (2⁻¹⁴ … 65504) below the largest value as it can get without rounding up
// to 2¹⁶ (which overflows); [2¹⁴, 2¹⁵) leaves 28 binades of full precision
// below the top.
const splitTarget = 14

// MaxSplitLimbs is the largest limb count SplitToFP16 takes.
const MaxSplitLimbs = 8

// SplitToFP16 moves a vector of any dynamic range through fp16 as k limbs,
// each with its own power-of-two exponent:
//
//	x ≈ Σ_j limbs[j]·2^(−exps[j]),   limbs[j] fp16 values held in float32
//
// Limb j is the remainder r_j (r_0 = x) scaled by 2^exps[j] so that its
// largest magnitude lies in [2¹⁴, 2¹⁵), then rounded to fp16; entries that
// would become fp16 subnormals are set to 0 in that limb and carried whole
// to the next (so the result does not depend on whether a device flushes
// subnormals). r_(j+1) = r_j − limbs[j]·2^(−exps[j]) is exact in float64.
// An all-zero remainder gives a zero limb with exponent 0.
//
// Each limb covers the 28 binades below its largest entry; the next limb's
// largest entry is the previous limbs' rounding error, about 2⁻¹¹ of the
// largest, so k limbs cover at least about 28 + 11·(k−1) binades (3 limbs:
// 50, so 1e-7 beside 1e6 is fine); more once the large entries are exact
// (53 bits, after 5 limbs), which frees later limbs for the small ones. Every nonzero entry that some limb holds in
// fp16's normal range is reproduced with relative error ≤ 2⁻¹¹ (later limbs
// only reduce it). SplitToFP16 checks that every nonzero x_i comes back
// with relative error ≤ 2⁻¹⁰ and otherwise returns an error wrapping
// ErrRange naming the first index the k limbs cannot cover; NaN and ±Inf
// are ErrRange too; k outside [1, MaxSplitLimbs] is ErrInvalid.
//
// The limbs are meant for transport and for ops that do not grow values;
// scale with Pow2Scale (or split into digits with SplitVector) for products.
// JoinFP16 reassembles the vector.
func SplitToFP16(x []float64, k int) (limbs [][]float32, exps []int, err error) {
	if k < 1 || k > MaxSplitLimbs {
		return nil, nil, fmt.Errorf("precision: SplitToFP16: %d limbs, want 1 to %d: %w", k, MaxSplitLimbs, ErrInvalid)
	}
	if _, err := maxAbs("SplitToFP16", x); err != nil {
		return nil, nil, err
	}
	r := append([]float64(nil), x...)
	limbs = make([][]float32, k)
	exps = make([]int, k)
	for j := range k {
		limb := make([]float32, len(x))
		limbs[j] = limb
		m, _ := maxAbs("", r)
		if m == 0 {
			continue
		}
		e := binadeShift(m, splitTarget)
		exps[j] = e
		for i, v := range r {
			y := fp16.Round64(math.Ldexp(v, e))
			if math.Abs(y) < fp16.MinNormal {
				continue // flushed here, carried whole to the next limb
			}
			back := math.Ldexp(y, -e)
			if math.IsInf(back, 0) {
				// |v| within half an fp16 ulp of 2¹⁰²⁴ (the top of
				// float64's last binade) rounds to 2¹⁵·2^−e = 2¹⁰²⁴, past
				// float64's range: take the fp16 value below, 2¹⁵ − 2⁴, one
				// fp16 ulp from v; the next limb holds the rest.
				y = math.Copysign(0x1p15-0x1p4, y)
				back = math.Ldexp(y, -e)
			}
			limb[i] = float32(y)
			r[i] = v - back // exact: v and y agree to within an fp16 ulp
		}
	}
	for i, v := range x {
		if v != 0 && math.Abs(r[i]) > 0x1p-10*math.Abs(v) {
			return nil, nil, fmt.Errorf("precision: SplitToFP16: x[%d] = %v is beyond the dynamic range %d limbs cover (relative error %.2g > 2⁻¹⁰): %w",
				i, v, k, math.Abs(r[i]/v), ErrRange)
		}
	}
	return limbs, exps, nil
}

// JoinFP16 reassembles Σ_j limbs[j]·2^(−exps[j]) in float64, the inverse of
// SplitToFP16. The limbs must have equal lengths and exps one entry per limb
// (ErrShape).
func JoinFP16(limbs [][]float32, exps []int) ([]float64, error) {
	if len(limbs) != len(exps) {
		return nil, fmt.Errorf("precision: JoinFP16: %d limbs, %d exponents: %w", len(limbs), len(exps), ErrShape)
	}
	if len(limbs) == 0 {
		return nil, nil
	}
	n := len(limbs[0])
	out := make([]float64, n)
	// Add the smallest limbs first.
	for j := len(limbs) - 1; j >= 0; j-- {
		if len(limbs[j]) != n {
			return nil, fmt.Errorf("precision: JoinFP16: limb %d has length %d, limb 0 %d: %w", j, len(limbs[j]), n, ErrShape)
		}
		// Clamped before the negation: −math.MinInt is math.MinInt.
		e := -clampExp(exps[j])
		for i, v := range limbs[j] {
			out[i] += math.Ldexp(float64(v), e)
		}
	}
	return out, nil
}
