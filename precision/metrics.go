package precision

import (
	"math"

	"github.com/anemone-go/anemone/fp16"
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
	if isNilMatrix(a) {
		return math.NaN()
	}
	m, n := a.Dims()
	if len(x) != n || len(b) != m {
		return math.NaN()
	}
	r := make([]float64, m)
	for i := range m {
		s := 0.0
		for j := range n {
			s += a.At(i, j) * x[j]
		}
		r[i] = b[i] - s
	}
	return ratio(floats.Norm(r, 2), mat.Norm(a, 2)*floats.Norm(x, 2)+floats.Norm(b, 2))
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
	return math.Abs(x-ref) / ulp16(ref)
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
