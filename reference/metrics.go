package reference

import (
	"math"
	"math/cmplx"
)

// RelErr returns the normwise relative error ‖x − ref‖₂ / ‖ref‖₂.
//
// If ref is zero it returns 0 when x is zero too and +Inf otherwise. It
// returns NaN if the lengths differ or either vector holds NaN, so a
// comparison "RelErr(...) <= tol" fails on bad data.
func RelErr(x, ref []float64) float64 {
	if len(x) != len(ref) {
		return math.NaN()
	}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - ref[i]
	}
	return relRatio(nrm2(d), nrm2(ref))
}

// RelErrComplex is RelErr for complex vectors, with ‖z‖₂ = (Σ|z_i|²)^½.
func RelErrComplex(x, ref []complex128) float64 {
	if len(x) != len(ref) {
		return math.NaN()
	}
	num := make([]float64, len(x))
	den := make([]float64, len(x))
	for i := range x {
		num[i] = cmplx.Abs(x[i] - ref[i])
		den[i] = cmplx.Abs(ref[i])
	}
	return relRatio(nrm2(num), nrm2(den))
}

func relRatio(num, den float64) float64 {
	switch {
	case math.IsNaN(num) || math.IsNaN(den):
		return math.NaN()
	case den == 0 && num == 0:
		return 0
	case den == 0:
		return math.Inf(1)
	}
	return num / den
}

// RelResidual returns ‖b − A·x‖₂ / ‖b‖₂, with the zero-b convention of
// RelErr. It returns NaN if a is nil or len(x) or len(b) differs from
// a.Dims().
func RelResidual(a Operator, x, b []float64) float64 {
	if a == nil {
		return math.NaN()
	}
	n := a.Dims()
	if len(x) != n || len(b) != n {
		return math.NaN()
	}
	r := make([]float64, n)
	return relRatio(residual(a, x, b, r), nrm2(b))
}

// BackwardError returns the normwise backward error of x as a solution of
// A·x = b,
//
//	η(x) = ‖b − A·x‖₂ / (‖A‖_F·‖x‖₂ + ‖b‖₂),
//
// the smallest ε such that (A + ΔA)x = b + Δb with ‖ΔA‖ ≤ ε‖A‖ and
// ‖Δb‖₂ ≤ ε‖b‖₂ (Rigal & Gaches 1967; Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., Thm. 7.1). The matrix norm is the Frobenius
// norm, which is cheap for sparse matrices and bounds ‖A‖₂ from above
// (‖A‖₂ ≤ ‖A‖_F ≤ √n·‖A‖₂), so η is at most the 2-norm backward error.
// Operators other than *CSR and DenseOperator get ‖A‖_F from n products
// with unit vectors.
//
// It returns 0 if b and x are both zero and NaN if a is nil or the lengths
// differ from a.Dims().
func BackwardError(a Operator, x, b []float64) float64 {
	if a == nil {
		return math.NaN()
	}
	n := a.Dims()
	if len(x) != n || len(b) != n {
		return math.NaN()
	}
	r := make([]float64, n)
	num := residual(a, x, b, r)
	return relRatio(num, operatorFrobenius(a)*nrm2(x)+nrm2(b))
}

// operatorFrobenius returns ‖A‖_F, by columns A·e_j if the operator does not
// know it.
func operatorFrobenius(a Operator) float64 {
	if f, ok := a.(frobeniusNormer); ok {
		return f.FrobeniusNorm()
	}
	n := a.Dims()
	e := make([]float64, n)
	col := make([]float64, n)
	norms := make([]float64, n)
	for j := range n {
		e[j] = 1
		a.MulVecTo(col, e)
		e[j] = 0
		norms[j] = nrm2(col)
	}
	return nrm2(norms)
}
