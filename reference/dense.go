package reference

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Solve solves the square dense system A·x = b by LU factorization with
// partial pivoting (gonum mat.LU, LAPACK dgetrf/dgetrs; Golub & Van Loan,
// Matrix Computations, 4th ed., §3.4).
//
// Errors: ErrInput for a nil/empty matrix or NaN/Inf in A or b; ErrShape for
// a non-square A or len(b) ≠ n; ErrSingular if A is singular or its
// estimated 1-norm condition number exceeds mat.ConditionTolerance (1e16).
func Solve(a mat.Matrix, b []float64) ([]float64, error) {
	d, err := squareDense("Solve", a)
	if err != nil {
		return nil, err
	}
	n, _ := d.Dims()
	if len(b) != n {
		return nil, fmt.Errorf("reference: Solve: len(b) = %d, want %d: %w", len(b), n, ErrShape)
	}
	if err := checkFinite("Solve", "b", b); err != nil {
		return nil, err
	}
	var lu mat.LU
	lu.Factorize(d)
	x := mat.NewVecDense(n, nil)
	if err := lu.SolveVecTo(x, false, mat.NewVecDense(n, append([]float64(nil), b...))); err != nil {
		var c mat.Condition
		if errors.As(err, &c) {
			return nil, fmt.Errorf("reference: Solve: condition number %.3g: %w", float64(c), ErrSingular)
		}
		return nil, fmt.Errorf("reference: Solve: %v: %w", err, ErrSingular)
	}
	return x.RawVector().Data, nil
}

// MatMul returns the product a·b as a new dense matrix (gonum mat.Dense.Mul).
// It fails with ErrInput if a or b is nil or empty and with ErrShape if the
// inner dimensions differ.
func MatMul(a, b mat.Matrix) (*mat.Dense, error) {
	if a == nil || b == nil {
		return nil, fmt.Errorf("reference: MatMul: nil matrix: %w", ErrInput)
	}
	ar, ac := a.Dims()
	br, bc := b.Dims()
	if ar < 1 || ac < 1 || br < 1 || bc < 1 {
		return nil, fmt.Errorf("reference: MatMul: %d×%d times %d×%d, want non-empty matrices: %w", ar, ac, br, bc, ErrInput)
	}
	if ac != br {
		return nil, fmt.Errorf("reference: MatMul: %d×%d times %d×%d, inner dimensions differ: %w", ar, ac, br, bc, ErrShape)
	}
	var c mat.Dense
	c.Mul(a, b)
	return &c, nil
}

// SingularValues returns the singular values of a in decreasing order
// (gonum mat.SVD, LAPACK dgesvd). It returns nil for a nil or empty matrix
// or if the factorization fails.
func SingularValues(a mat.Matrix) []float64 {
	if a == nil {
		return nil
	}
	if r, c := a.Dims(); r < 1 || c < 1 {
		return nil
	}
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDNone) {
		return nil
	}
	return svd.Values(nil)
}

// Cond2 returns the 2-norm condition number σ_max/σ_min of a, from its
// singular values (gonum mat.SVD). For a rectangular matrix σ_min is the
// smallest of its min(rows, cols) singular values. It returns +Inf for a
// singular matrix and NaN for a nil or empty matrix or if the SVD fails.
func Cond2(a mat.Matrix) float64 {
	s := SingularValues(a)
	if len(s) == 0 {
		return math.NaN()
	}
	if s[len(s)-1] == 0 {
		return math.Inf(1)
	}
	return s[0] / s[len(s)-1]
}

// IsSymmetric reports whether a is square and |a_ij − a_ji| ≤ tol·max|a_kl|
// for all i, j (tol = 0 asks for exact symmetry). A nil matrix is not
// symmetric.
func IsSymmetric(a mat.Matrix, tol float64) bool {
	if a == nil {
		return false
	}
	r, c := a.Dims()
	if r != c {
		return false
	}
	var amax float64
	for i := range r {
		for j := range c {
			amax = math.Max(amax, math.Abs(a.At(i, j)))
		}
	}
	for i := range r {
		for j := i + 1; j < c; j++ {
			if !(math.Abs(a.At(i, j)-a.At(j, i)) <= tol*amax) {
				return false
			}
		}
	}
	return true
}

// spdSymTol is the relative symmetry tolerance of IsSPD: a few units of
// roundoff, so matrices symmetric up to the rounding of a product such as
// Q·Σ·Qᵀ still count.
const spdSymTol = 64 * 0x1p-52

// IsSPD reports whether a is symmetric (IsSymmetric with tolerance
// 64·2⁻⁵²) and positive definite, tested by attempting a Cholesky
// factorization of its symmetric part (gonum mat.Cholesky; Golub & Van Loan,
// 4th ed., §4.2).
func IsSPD(a mat.Matrix) bool {
	if !IsSymmetric(a, spdSymTol) {
		return false
	}
	n, _ := a.Dims()
	if n == 0 {
		return false
	}
	s := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			s.SetSym(i, j, (a.At(i, j)+a.At(j, i))/2)
		}
	}
	var ch mat.Cholesky
	return ch.Factorize(s)
}
