package precision

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/isnil"
	"gonum.org/v1/gonum/mat"
)

// Equilibrate computes the two-sided diagonal scaling of Higham, Pranesh
// and Zounon, "Squeezing a matrix into half precision, with an application
// to solving linear systems", SIAM J. Sci. Comput. 41(4), 2019,
// Algorithm 2.1 (row and column equilibration), with every factor a power
// of two so that applying it is exact:
//
//	r_i = 2^−⌈log₂ max_j |a_ij|⌉            (rows of A scaled into (½, 1])
//	c_j = 2^−⌈log₂ max_i |r_i·a_ij|⌉        (then the columns of that)
//
// so that B = diag(r)·A·diag(c) has |b_ij| ≤ 1 everywhere and the largest
// magnitude of every nonzero row and every nonzero column in (½, 1]. (The
// paper's factors are exact reciprocals, which make every maximum exactly 1
// but round; powers of two lose at most a factor 2 of that.) The column
// factors are ≥ 1, so the row maxima stay in (½, 1]. A zero row or column
// gets the factor 1 and stays zero. A factor is at most 2¹⁰²³, the largest
// float64 power of two: a row or column whose largest magnitude is at most
// 2⁻¹⁰²⁴ (a float64 subnormal) gets 2¹⁰²³ and its maximum stays at or
// below ½.
//
// NaN or ±Inf in a is an error wrapping ErrRange, a nil matrix one
// wrapping ErrShape. a is not modified.
func Equilibrate(a mat.Matrix) (r, c []float64, err error) {
	if isnil.Matrix(a) {
		return nil, nil, fmt.Errorf("precision: Equilibrate: nil matrix: %w", ErrShape)
	}
	m, n := a.Dims()
	r = make([]float64, m)
	c = make([]float64, n)
	for i := range m {
		rowMax := 0.0
		for j := range n {
			v := a.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("precision: Equilibrate: a[%d][%d] = %v: %w", i, j, v, ErrRange)
			}
			rowMax = math.Max(rowMax, math.Abs(v))
		}
		r[i] = pow2AtMostOne(rowMax)
	}
	for j := range n {
		colMax := 0.0
		for i := range m {
			colMax = math.Max(colMax, math.Abs(r[i]*a.At(i, j)))
		}
		c[j] = pow2AtMostOne(colMax)
	}
	return r, c, nil
}

// pow2AtMostOne returns the power of two 2^−⌈log₂ m⌉, the one that puts m in
// (½, 1]; 1 for m = 0. For m ≤ 2⁻¹⁰²⁴ that power is past float64's
// range (it was +Inf): the result is then 2¹⁰²³, the largest.
func pow2AtMostOne(m float64) float64 {
	if m == 0 {
		return 1
	}
	f, p := math.Frexp(m) // m = f·2^p, f ∈ [½, 1)
	if f == 0.5 {
		p-- // m is a power of two: 2^(p−1), scale it to exactly 1
	}
	return math.Ldexp(1, min(-p, 1023))
}

// SqueezeScale is Equilibrate followed by the scalar step of Algorithm 2.3
// (two-sided diagonal scaling then round) of Higham, Pranesh and Zounon
// (2019): with β = max|diag(r)·A·diag(c)| it returns μ, the largest power of
// two with μ·β ≤ θ·xmax, where xmax = 65504 is fp16's largest value
// (the paper takes μ = θ·xmax/β exactly; a power of two keeps the scaling
// exact). Then μ·diag(r)·A·diag(c) fills fp16's range up to θ·xmax, which
// keeps the most entries out of the subnormal range when the matrix itself
// is stored in fp16 (the paper's use, θ = 0.1 leaves room for the growth of
// an LU factorization). θ must lie in (0, 1] (ErrInvalid); a nil matrix is
// an error wrapping ErrShape.
//
// For device products do not use μ: operands of a matmul belong in
// [1, 2) (see Pow2Target), or the dot products overflow.
func SqueezeScale(a mat.Matrix, theta float64) (r, c []float64, mu float64, err error) {
	if !(theta > 0 && theta <= 1) {
		return nil, nil, 0, fmt.Errorf("precision: SqueezeScale: theta = %v, want 0 < θ ≤ 1: %w", theta, ErrInvalid)
	}
	if isnil.Matrix(a) {
		return nil, nil, 0, fmt.Errorf("precision: SqueezeScale: nil matrix: %w", ErrShape)
	}
	r, c, err = Equilibrate(a)
	if err != nil {
		return nil, nil, 0, err
	}
	m, n := a.Dims()
	beta := 0.0
	for i := range m {
		for j := range n {
			beta = math.Max(beta, math.Abs(r[i]*a.At(i, j)*c[j]))
		}
	}
	if beta == 0 {
		return r, c, 1, nil
	}
	// Largest power of two ≤ θ·xmax/β.
	_, p := math.Frexp(theta * fp16.MaxValue / beta) // q ∈ [2^(p−1), 2^p)
	mu = math.Ldexp(1, p-1)
	return r, c, mu, nil
}
