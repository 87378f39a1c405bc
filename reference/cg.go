package reference

import (
	"fmt"
	"math"
	"slices"
)

// Preconditioner applies M⁻¹: it writes M⁻¹·r into dst (len(dst) ==
// len(r) == n, no overlap). For CG, M must be symmetric positive definite.
type Preconditioner func(dst, r []float64)

// DefaultTol is the relative-residual tolerance used when a settings Tol is
// zero.
const DefaultTol = 1e-10

// CGSettings configures CG. The zero value is valid.
type CGSettings struct {
	// Tol is the relative residual ‖b − Ax‖₂/‖b‖₂ to reach, measured on the
	// recursively updated residual. Zero means DefaultTol; it must not be
	// negative or NaN.
	Tol float64
	// MaxIter bounds the number of iterations. Zero means 10·n; it must not
	// be negative.
	MaxIter int
	// Precond, if non-nil, applies the SPD preconditioner M⁻¹.
	Precond Preconditioner
	// X0 is the initial guess; nil means zero. It is not modified.
	X0 []float64
}

// CGResult is the outcome of CG.
type CGResult struct {
	// X is the final iterate.
	X []float64
	// Iterations is the number of CG steps taken (matrix products after the
	// initial residual).
	Iterations int
	// Residual is the true relative residual ‖b − A·X‖₂/‖b‖₂, recomputed
	// from X at the end (0 when b = 0).
	Residual float64
	// History[k] is the recursive relative residual ‖r_k‖₂/‖b‖₂ after k
	// steps; History[0] is the initial one, so len(History) == Iterations+1.
	History []float64
	// Converged reports whether the recursive residual reached Tol.
	Converged bool
}

// CG solves A·x = b for symmetric positive definite A by the conjugate
// gradient method of Hestenes & Stiefel (1952), in the preconditioned form
// of Saad, Iterative Methods for Sparse Linear Systems, 2nd ed., Alg. 9.1
// (Alg. 6.18 without preconditioner):
//
//	r₀ = b − Ax₀, z₀ = M⁻¹r₀, p₀ = z₀
//	α_j = (r_j, z_j)/(Ap_j, p_j)
//	x_{j+1} = x_j + α_j p_j,  r_{j+1} = r_j − α_j Ap_j
//	z_{j+1} = M⁻¹r_{j+1},  β_j = (r_{j+1}, z_{j+1})/(r_j, z_j)
//	p_{j+1} = z_{j+1} + β_j p_j
//
// It stops when ‖r_j‖₂/‖b‖₂ ≤ Tol or after MaxIter steps. If b = 0 it
// returns x = 0 at once with Converged = true.
//
// Errors: ErrShape if len(b) or len(X0) is not n; ErrInput if n ≤ 0, b or X0
// holds NaN/Inf, or Tol/MaxIter is invalid; ErrNotConverged (with the last
// iterate in the result) if MaxIter is reached, the iteration breaks down
// ((Ap, p) ≤ 0 or (r, z) ≤ 0, i.e. A or M is not positive definite) or the
// residual becomes NaN.
func CG(a Operator, b []float64, s CGSettings) (CGResult, error) {
	n, tol, maxIter, err := checkSolve("CG", a, b, s.X0, s.Tol, s.MaxIter)
	if err != nil {
		return CGResult{}, err
	}
	res := CGResult{X: make([]float64, n)}
	bnorm := nrm2(b)
	if bnorm == 0 {
		res.History = []float64{0}
		res.Converged = true
		return res, nil
	}
	if s.X0 != nil {
		copy(res.X, s.X0)
	}
	x := res.X
	r := make([]float64, n)
	rnorm := residual(a, x, b, r)
	res.History = append(res.History, rnorm/bnorm)

	z := r
	if s.Precond != nil {
		z = make([]float64, n)
		s.Precond(z, r)
	}
	p := slices.Clone(z)
	ap := make([]float64, n)
	rz := dot(r, z)

	var stop error
	for !(rnorm/bnorm <= tol) {
		if math.IsNaN(rnorm) || math.IsInf(rnorm, 0) {
			stop = fmt.Errorf("reference: CG: residual is %v at iteration %d: %w", rnorm, res.Iterations, ErrNotConverged)
			break
		}
		if res.Iterations >= maxIter {
			stop = fmt.Errorf("reference: CG: relative residual %.3g > %.3g after %d iterations: %w",
				rnorm/bnorm, tol, res.Iterations, ErrNotConverged)
			break
		}
		if !(rz > 0) {
			stop = fmt.Errorf("reference: CG: breakdown at iteration %d: (r, M⁻¹r) = %v, preconditioner not positive definite: %w",
				res.Iterations, rz, ErrNotConverged)
			break
		}
		a.MulVecTo(ap, p)
		pap := dot(p, ap)
		if !(pap > 0) {
			stop = fmt.Errorf("reference: CG: breakdown at iteration %d: (Ap, p) = %v, matrix not positive definite: %w",
				res.Iterations, pap, ErrNotConverged)
			break
		}
		alpha := rz / pap
		axpy(alpha, p, x)
		axpy(-alpha, ap, r)
		if s.Precond != nil {
			s.Precond(z, r)
		}
		rzNew := dot(r, z)
		beta := rzNew / rz
		rz = rzNew
		for i := range p {
			p[i] = z[i] + beta*p[i]
		}
		res.Iterations++
		rnorm = nrm2(r)
		res.History = append(res.History, rnorm/bnorm)
	}
	res.Converged = stop == nil
	res.Residual = residual(a, x, b, r) / bnorm
	return res, stop
}

// checkSolve validates the common solver arguments and returns n and the
// effective tolerance and iteration limit.
func checkSolve(fn string, a Operator, b, x0 []float64, tol float64, maxIter int) (n int, effTol float64, effMax int, err error) {
	if a == nil {
		return 0, 0, 0, fmt.Errorf("reference: %s: nil operator: %w", fn, ErrInput)
	}
	n = a.Dims()
	if n <= 0 {
		return 0, 0, 0, fmt.Errorf("reference: %s: operator dimension %d, want ≥ 1: %w", fn, n, ErrInput)
	}
	if len(b) != n {
		return 0, 0, 0, fmt.Errorf("reference: %s: len(b) = %d, want %d: %w", fn, len(b), n, ErrShape)
	}
	if x0 != nil && len(x0) != n {
		return 0, 0, 0, fmt.Errorf("reference: %s: len(X0) = %d, want %d: %w", fn, len(x0), n, ErrShape)
	}
	if err := checkFinite(fn, "b", b); err != nil {
		return 0, 0, 0, err
	}
	if err := checkFinite(fn, "X0", x0); err != nil {
		return 0, 0, 0, err
	}
	if tol < 0 || math.IsNaN(tol) {
		return 0, 0, 0, fmt.Errorf("reference: %s: Tol = %v, want ≥ 0: %w", fn, tol, ErrInput)
	}
	if tol == 0 {
		tol = DefaultTol
	}
	if maxIter < 0 {
		return 0, 0, 0, fmt.Errorf("reference: %s: MaxIter = %d, want ≥ 0: %w", fn, maxIter, ErrInput)
	}
	if maxIter == 0 {
		maxIter = 10 * n
	}
	return n, tol, maxIter, nil
}
