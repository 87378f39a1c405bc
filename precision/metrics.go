package precision

import (
	"math"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/isnil"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// RelErr returns the normwise relative error ‖x − ref‖₂/‖ref‖₂. A zero ref
// gives 0 if x is zero too and +Inf otherwise; differing lengths or a NaN
// give NaN, so that "RelErr(...) <= tol" fails on bad data.
func RelErr(x, ref []float64) float64 {
	if len(x) != len(ref) {
		return math.NaN()
	}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - ref[i]
	}
	return ratio(floats.Norm(d, 2), floats.Norm(ref, 2))
}

func ratio(num, den float64) float64 {
	switch {
	case math.IsNaN(num) || math.IsNaN(den):
		return math.NaN()
	case num == 0 && den == 0:
		return 0
	case den == 0:
		return math.Inf(1)
	}
	return num / den
}

// BackwardError returns the normwise backward error of x as a solution of
// A·x = b (Rigal and Gaches; Higham, Accuracy and Stability of Numerical
// Algorithms, 2nd ed., Thm. 7.1):
//
//	η(x) = ‖b − A·x‖₂ / (‖A‖_F·‖x‖₂ + ‖b‖₂)
//
// with the vector 2-norm and the Frobenius norm of A (cheap, and an upper
// bound on ‖A‖₂, so η is at most the 2-norm backward error). The residual is
// computed in float64. It returns 0 for x = 0 and b = 0, and NaN if a is
// nil, the lengths do not match A or the data hold NaN (NaN is its error:
// "BackwardError(...) <= tol" fails on bad input).
func BackwardError(a mat.Matrix, x, b []float64) float64 {
	if isnil.Matrix(a) {
		return math.NaN()
	}
	m, n := a.Dims()
	if len(x) != n || len(b) != m {
		return math.NaN()
	}
	// η is unchanged by A → 2^p·A, x → 2^q·x, b → 2^(p+q)·b. Scaling A and
	// x to a largest magnitude near 1, and x further down if b would then
	// be above 1, keeps A·x, the residual and the norms inside float64's
	// range for any finite data (A = x = [1e300] would overflow to Inf/Inf,
	// NaN, whose true η is about 1). Powers of two: exact, but for
	// underflow of entries negligible beside the largest terms.
	p, q := scaleShift(maxAbsMatrix(a)), scaleShift(maxAbsOf(x))
	if mb := maxAbsOf(b); mb > 0 && !math.IsInf(mb, 0) && !math.IsNaN(mb) {
		if _, eb := math.Frexp(mb); eb+p+q > 0 {
			q -= eb + p + q
		}
	}
	xs, bs := make([]float64, n), make([]float64, m)
	for j, v := range x {
		xs[j] = ldexp(v, q)
	}
	for i, v := range b {
		bs[i] = ldexp(v, p+q)
	}
	r := make([]float64, m)
	for i := range m {
		s := 0.0
		for j := range n {
			// The conversion rounds the product, so arm64 does not fuse
			// it into an FMA: η is the same number on every host.
			s += float64(ldexp(a.At(i, j), p) * xs[j])
		}
		r[i] = bs[i] - s
	}
	normA := 0.0
	if m > 0 && n > 0 {
		normA = ldexp(mat.Norm(a, 2), p)
	}
	return ratio(floats.Norm(r, 2), normA*floats.Norm(xs, 2)+floats.Norm(bs, 2))
}

// scaleShift is the e with m·2^e ∈ [½, 1) for a finite m > 0, and 0 for
// m = 0, NaN or ±Inf (which need no scaling: they give NaN or ±Inf anyway).
func scaleShift(m float64) int {
	if m == 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return 0
	}
	_, e := math.Frexp(m)
	return -e
}

// maxAbsOf is max|x_i| (NaN if some x_i is NaN).
func maxAbsOf(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		if math.IsNaN(v) {
			return math.NaN()
		}
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// maxAbsMatrix is max|a_ij| (NaN if some entry is NaN).
func maxAbsMatrix(a mat.Matrix) float64 {
	r, c := a.Dims()
	m := 0.0
	for i := range r {
		for j := range c {
			v := a.At(i, j)
			if math.IsNaN(v) {
				return math.NaN()
			}
			m = math.Max(m, math.Abs(v))
		}
	}
	return m
}

// ULPDistance returns |x − ref| in units of the fp16 spacing at ref: the
// distance between consecutive fp16 values in ref's binade, 2^(⌊log₂|ref|⌋−10)
// for |ref| ≥ 2⁻¹⁴ (the same formula beyond 65504) and 2⁻²⁴ below. A result
// ≤ ½ means x is ref correctly rounded to fp16 or closer. NaN in either
// gives NaN; infinite ref gives 0 for x == ref and +Inf otherwise.
func ULPDistance(x, ref float64) float64 {
	if math.IsNaN(x) || math.IsNaN(ref) {
		return math.NaN()
	}
	if math.IsInf(ref, 0) {
		if x == ref {
			return 0
		}
		return math.Inf(1)
	}
	d := math.Abs(x - ref)
	if math.IsInf(d, 0) && !math.IsInf(x, 0) {
		// Finite x and ref a float64 range apart: halving is exact here.
		return math.Abs(x/2-ref/2) / ulp16(ref) * 2
	}
	return d / ulp16(ref)
}

// ulp16 is the fp16 spacing at v.
func ulp16(v float64) float64 {
	a := math.Abs(v)
	if a < fp16.MinNormal {
		return fp16.MinSubnormal
	}
	_, p := math.Frexp(a) // a ∈ [2^(p−1), 2^p)
	return math.Ldexp(1, p-1-10)
}
