package reference

import (
	"fmt"
	"math"
)

// DefaultRestart is the GMRES restart length used when GMRESSettings.Restart
// is zero.
const DefaultRestart = 30

// GMRESSettings configures GMRES. The zero value is valid.
type GMRESSettings struct {
	// Tol is the relative residual ‖b − Ax‖₂/‖b‖₂ to reach. Zero means
	// DefaultTol; it must not be negative or NaN.
	Tol float64
	// Restart is the Krylov dimension m of GMRES(m). Zero means
	// min(DefaultRestart, n); it must not be negative.
	Restart int
	// MaxIter bounds the total number of inner (Arnoldi) iterations over all
	// cycles. Zero means 10·n; it must not be negative.
	MaxIter int
	// Precond, if non-nil, is applied on the right: GMRES solves
	// A·M⁻¹·u = b and returns x = M⁻¹·u, so the residual it minimizes is the
	// true residual b − Ax.
	Precond Preconditioner
	// X0 is the initial guess; nil means zero. It is not modified.
	X0 []float64
}

// GMRESResult is the outcome of GMRES.
type GMRESResult struct {
	// X is the final iterate.
	X []float64
	// Iterations is the total number of inner (Arnoldi) iterations, each
	// one product with A.
	Iterations int
	// Restarts is the number of Arnoldi cycles run, the last, possibly
	// partial, one included (so Iterations ≤ Restarts·Restart).
	Restarts int
	// Residual is the true relative residual ‖b − A·X‖₂/‖b‖₂ recomputed
	// from X at the end (0 when b = 0).
	Residual float64
	// History[0] is the initial relative residual; History[k] for k ≥ 1 is
	// the relative residual after inner iteration k as given by the Givens
	// recurrence |γ_{j+1}|/‖b‖₂ (Saad 2003, Prop. 6.9). When a cycle ends,
	// the next cycle starts from the recomputed true residual, which is not
	// recorded separately. len(History) == Iterations+1.
	History []float64
	// Converged reports whether the true residual at the end of a cycle
	// reached Tol.
	Converged bool
}

// GMRES solves A·x = b for general nonsingular A by restarted GMRES(m)
// (Saad & Schultz 1986; Saad, Iterative Methods for Sparse Linear Systems,
// 2nd ed., Alg. 6.9 with Arnoldi by modified Gram–Schmidt, Alg. 6.2, and the
// Givens-rotation least-squares update of §6.5.3, Alg. 6.11 for the restart
// loop, and right preconditioning, Alg. 9.5).
//
// Within a cycle it stops as soon as the Givens estimate of the residual is
// at most Tol·‖b‖₂ or a happy breakdown (h_{j+1,j} = 0) occurs; it then forms
// x, recomputes the true residual, and either returns (true residual ≤ Tol),
// restarts, or gives up once MaxIter inner iterations have been spent. It
// also gives up when two cycles in a row end with the estimate below Tol but
// the true residual above it and not halved: the residual has reached the
// attainable accuracy of the floating-point iteration, about
// ε·‖A‖·‖x‖/‖b‖ (Greenbaum, Iterative Methods for Solving Linear Systems,
// 1997, §7.3), and more cycles would not help. If b = 0 it returns x = 0 at
// once with Converged = true.
//
// Errors: ErrShape if len(b) or len(X0) is not n; ErrInput if n ≤ 0, b or X0
// holds NaN/Inf, or Tol, Restart or MaxIter is invalid; ErrNotConverged (with
// the last iterate in the result) if MaxIter is reached, the residual
// stagnates as above or becomes NaN, or the upper-triangular factor is
// singular (A singular).
func GMRES(a Operator, b []float64, s GMRESSettings) (GMRESResult, error) {
	n, tol, maxIter, err := checkSolve("GMRES", a, b, s.X0, s.Tol, s.MaxIter)
	if err != nil {
		return GMRESResult{}, err
	}
	if s.Restart < 0 {
		return GMRESResult{}, fmt.Errorf("reference: GMRES: Restart = %d, want ≥ 0: %w", s.Restart, ErrInput)
	}
	m := s.Restart
	if m == 0 {
		m = min(DefaultRestart, n)
	}
	m = min(m, n) // the Krylov space cannot exceed n dimensions

	res := GMRESResult{X: make([]float64, n)}
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

	v := make([][]float64, m+1) // Arnoldi basis V_{m+1}
	for i := range v {
		v[i] = make([]float64, n)
	}
	h := make([][]float64, m) // h[j] is column j of the (m+1)×m Hessenberg matrix
	for j := range h {
		h[j] = make([]float64, m+1)
	}
	cs := make([]float64, m)
	sn := make([]float64, m)
	g := make([]float64, m+1)
	y := make([]float64, m)
	w := make([]float64, n)
	z := make([]float64, n)

	r := make([]float64, n)
	beta := residual(a, x, b, r)
	res.History = append(res.History, beta/bnorm)

	// falseStops counts consecutive cycles whose Givens estimate reached Tol
	// while the recomputed true residual did not, and did not even halve:
	// the true residual has hit its attainable-accuracy floor (about
	// ε·‖A‖·‖x‖/‖b‖), and further cycles would each take one or two steps
	// without progress until MaxIter.
	falseStops := 0
	for {
		if beta/bnorm <= tol {
			res.Converged = true
			res.Residual = beta / bnorm
			return res, nil
		}
		if math.IsNaN(beta) || math.IsInf(beta, 0) {
			res.Residual = beta / bnorm
			return res, fmt.Errorf("reference: GMRES: residual is %v after %d iterations: %w", beta, res.Iterations, ErrNotConverged)
		}
		if res.Iterations >= maxIter {
			res.Residual = beta / bnorm
			return res, fmt.Errorf("reference: GMRES(%d): relative residual %.3g > %.3g after %d iterations in %d cycles: %w",
				m, beta/bnorm, tol, res.Iterations, res.Restarts, ErrNotConverged)
		}
		if falseStops >= 2 {
			res.Residual = beta / bnorm
			return res, fmt.Errorf("reference: GMRES(%d): true relative residual stagnated at %.3g > %.3g (attainable accuracy) after %d iterations: %w",
				m, beta/bnorm, tol, res.Iterations, ErrNotConverged)
		}
		res.Restarts++

		// v₁ = r₀/β, g = β·e₁.
		for i := range r {
			v[0][i] = r[i] / beta
		}
		clear(g)
		g[0] = beta

		k := 0            // columns built in this cycle
		estStop := false  // the Givens estimate reached Tol (or happy breakdown)
		betaStart := beta // true residual at the start of the cycle
		for j := 0; j < m && res.Iterations < maxIter; j++ {
			// w = A·M⁻¹·v_j.
			if s.Precond != nil {
				s.Precond(z, v[j])
				a.MulVecTo(w, z)
			} else {
				a.MulVecTo(w, v[j])
			}
			// Modified Gram–Schmidt (Saad Alg. 6.2).
			hj := h[j]
			for i := 0; i <= j; i++ {
				hj[i] = dot(w, v[i])
				axpy(-hj[i], v[i], w)
			}
			hj[j+1] = nrm2(w)

			// Apply the previous rotations to column j (Saad §6.5.3).
			for i := range j {
				t := cs[i]*hj[i] + sn[i]*hj[i+1]
				hj[i+1] = -sn[i]*hj[i] + cs[i]*hj[i+1]
				hj[i] = t
			}
			// New rotation Ω_j zeroing h_{j+1,j}.
			hjj, hj1 := hj[j], hj[j+1]
			den := math.Hypot(hjj, hj1)
			if den == 0 {
				cs[j], sn[j] = 1, 0
			} else {
				cs[j], sn[j] = hjj/den, hj1/den
			}
			hj[j] = den
			g[j+1] = -sn[j] * g[j]
			g[j] = cs[j] * g[j]

			res.Iterations++
			k = j + 1
			est := math.Abs(g[j+1]) / bnorm
			res.History = append(res.History, est)
			if est <= tol || hj1 == 0 || math.IsNaN(est) {
				estStop = est <= tol || hj1 == 0
				break
			}
			for i := range w {
				v[j+1][i] = w[i] / hj1
			}
		}

		// Solve the k×k upper-triangular system R·y = g (back substitution).
		for i := k - 1; i >= 0; i-- {
			t := g[i]
			for l := i + 1; l < k; l++ {
				t -= h[l][i] * y[l]
			}
			if h[i][i] == 0 {
				res.Residual = beta / bnorm
				return res, fmt.Errorf("reference: GMRES: singular Hessenberg factor at column %d (A singular?): %w", i, ErrNotConverged)
			}
			y[i] = t / h[i][i]
		}
		// x ← x + M⁻¹·V_k·y.
		clear(w)
		for i := range k {
			axpy(y[i], v[i], w)
		}
		if s.Precond != nil {
			s.Precond(z, w)
			axpy(1, z, x)
		} else {
			axpy(1, w, x)
		}
		beta = residual(a, x, b, r)
		if estStop && beta/bnorm > tol && !(beta <= betaStart/2) {
			falseStops++
		} else {
			falseStops = 0
		}
	}
}
