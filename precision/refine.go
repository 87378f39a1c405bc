package precision

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// Defaults of RefineSettings.
const (
	DefaultRefineTol        = 1e-12
	DefaultMaxDispatches    = 100
	DefaultStagnationWindow = 3
	DefaultStagnationFactor = 0.5
	DefaultDivergenceFactor = 1e3
)

// RefineSettings controls Refine. Zero fields mean their defaults.
type RefineSettings struct {
	// Tol is the target relative residual ‖b − A·x‖₂/‖b‖₂, computed in
	// float64 on the host (default 1e-12).
	Tol float64
	// NormB is ‖b‖₂. Zero means "unknown": Refine then calls residual once
	// with x = 0, where r = b, and takes its norm. If ‖b‖₂ is 0, the
	// absolute residual ‖r‖₂ is compared with Tol instead.
	NormB float64
	// MaxDispatches caps the calls of correct (default 100).
	MaxDispatches int
	// StagnationWindow and StagnationFactor: Refine stops with ErrStagnated
	// when the residual after a step is above StagnationFactor times the
	// residual StagnationWindow steps earlier (defaults 3 and 0.5: it must
	// at least halve every three steps).
	StagnationWindow int
	StagnationFactor float64
	// DivergenceFactor: Refine stops with ErrDiverged when the residual
	// exceeds DivergenceFactor times the smallest one seen (default 1e3), or
	// is NaN or ±Inf.
	DivergenceFactor float64
}

// RefineResult is what Refine returns, also next to an error.
type RefineResult struct {
	// X is the iterate with the smallest residual seen (a new slice).
	X []float64
	// Residual is X's relative residual ‖b − A·X‖₂/‖b‖₂.
	Residual float64
	// History holds the relative residual of every iterate, the initial
	// guess first.
	History []float64
	// Dispatches counts the calls of correct.
	Dispatches int
	// Converged reports Residual ≤ Tol.
	Converged bool
}

// Refine is a mixed-precision iterative-refinement driver: the host keeps x
// and the residual in float64, the device solves for corrections.
//
// Starting from x (which is not modified), each step
//
//  1. calls residual(r, x), which must store r = b − A·x computed in
//     float64 (the host's job), and records ‖r‖₂/‖b‖₂ in History;
//  2. stops if that is ≤ Tol (converged), NaN, ±Inf or above
//     DivergenceFactor times the best so far (ErrDiverged), not below
//     StagnationFactor times the value StagnationWindow steps back
//     (ErrStagnated), or if MaxDispatches corrections were made
//     (ErrBudget);
//  3. scales r by 2^e (Pow2Scale: exact, largest entry in [1, 2), fp16's
//     comfortable range) and calls correct(d, r·2^e), which should solve
//     A·d ≈ r·2^e (usually on the device, to a few digits); d is zeroed
//     before the call;
//  4. adds d·2^−e to x in float64 (a NaN or ±Inf in d is ErrDiverged).
//
// Each step gains roughly the correction's relative accuracy (times κ(A)
// for a solver whose error is normwise), until float64's limits. The
// result always comes back, next to any error: X is the best iterate seen,
// with its residual, the full History and the dispatch count. An error
// from residual or correct is returned wrapped; a nil function or a bad
// setting is ErrInvalid.
func Refine(x []float64, residual func(r, x []float64) error, correct func(d, r []float64) error, s RefineSettings) (RefineResult, error) {
	res := RefineResult{X: append([]float64(nil), x...), Residual: math.Inf(1)}
	if residual == nil || correct == nil {
		return res, fmt.Errorf("precision: Refine: nil residual or correct function: %w", ErrInvalid)
	}
	if err := s.fill(); err != nil {
		return res, err
	}
	n := len(x)
	cur := append([]float64(nil), x...)
	r := make([]float64, n)
	d := make([]float64, n)
	normB := s.NormB
	if normB == 0 {
		if err := residual(r, make([]float64, n)); err != nil {
			return res, fmt.Errorf("precision: Refine: residual at x = 0 (for ‖b‖): %w", err)
		}
		normB = floats.Norm(r, 2)
		if math.IsNaN(normB) || math.IsInf(normB, 0) {
			return res, fmt.Errorf("precision: Refine: ‖b‖ = %v: %w", normB, ErrRange)
		}
	}
	rel := func(r []float64) float64 {
		if normB == 0 {
			return floats.Norm(r, 2)
		}
		return floats.Norm(r, 2) / normB
	}
	for {
		if err := residual(r, cur); err != nil {
			return res, fmt.Errorf("precision: Refine: residual after %d corrections: %w", res.Dispatches, err)
		}
		rr := rel(r)
		res.History = append(res.History, rr)
		step := len(res.History) - 1
		if math.IsNaN(rr) || math.IsInf(rr, 0) {
			return res, fmt.Errorf("precision: Refine: residual %v after %d corrections: %w", rr, res.Dispatches, ErrDiverged)
		}
		if rr < res.Residual {
			res.Residual = rr
			copy(res.X, cur)
		}
		if rr <= s.Tol {
			res.Converged = true
			return res, nil
		}
		if rr > s.DivergenceFactor*res.Residual {
			return res, fmt.Errorf("precision: Refine: residual %.3g after %d corrections is %.3g times the best, %.3g: %w",
				rr, res.Dispatches, rr/res.Residual, res.Residual, ErrDiverged)
		}
		if w := s.StagnationWindow; step >= w && rr > s.StagnationFactor*res.History[step-w] {
			return res, fmt.Errorf("precision: Refine: residual %.3g after %d corrections, not below %g × %.3g (%d steps earlier); tolerance %g: %w",
				rr, res.Dispatches, s.StagnationFactor, res.History[step-w], w, s.Tol, ErrStagnated)
		}
		if res.Dispatches >= s.MaxDispatches {
			return res, fmt.Errorf("precision: Refine: residual %.3g after %d corrections, tolerance %g: %w", rr, res.Dispatches, s.Tol, ErrBudget)
		}
		e, err := Pow2Scale(r)
		if err != nil {
			return res, fmt.Errorf("precision: Refine: %w", err)
		}
		for i := range r {
			r[i] = math.Ldexp(r[i], e)
		}
		clear(d)
		res.Dispatches++
		if err := correct(d, r); err != nil {
			return res, fmt.Errorf("precision: Refine: correction %d: %w", res.Dispatches, err)
		}
		for i, v := range d {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return res, fmt.Errorf("precision: Refine: correction %d has d[%d] = %v: %w", res.Dispatches, i, v, ErrDiverged)
			}
			cur[i] += math.Ldexp(v, -e)
		}
	}
}

// fill replaces zero fields by their defaults and checks the rest.
func (s *RefineSettings) fill() error {
	if s.Tol == 0 {
		s.Tol = DefaultRefineTol
	}
	if s.MaxDispatches == 0 {
		s.MaxDispatches = DefaultMaxDispatches
	}
	if s.StagnationWindow == 0 {
		s.StagnationWindow = DefaultStagnationWindow
	}
	if s.StagnationFactor == 0 {
		s.StagnationFactor = DefaultStagnationFactor
	}
	if s.DivergenceFactor == 0 {
		s.DivergenceFactor = DefaultDivergenceFactor
	}
	switch {
	case !(s.Tol > 0) || math.IsInf(s.Tol, 0):
		return fmt.Errorf("precision: Refine: Tol = %v, want > 0: %w", s.Tol, ErrInvalid)
	case !(s.NormB >= 0) || math.IsInf(s.NormB, 0):
		return fmt.Errorf("precision: Refine: NormB = %v, want ≥ 0: %w", s.NormB, ErrInvalid)
	case s.MaxDispatches < 0:
		return fmt.Errorf("precision: Refine: MaxDispatches = %d, want ≥ 0: %w", s.MaxDispatches, ErrInvalid)
	case s.StagnationWindow < 1:
		return fmt.Errorf("precision: Refine: StagnationWindow = %d, want ≥ 1: %w", s.StagnationWindow, ErrInvalid)
	case !(s.StagnationFactor > 0 && s.StagnationFactor <= 1):
		return fmt.Errorf("precision: Refine: StagnationFactor = %v, want in (0, 1]: %w", s.StagnationFactor, ErrInvalid)
	case !(s.DivergenceFactor > 1):
		return fmt.Errorf("precision: Refine: DivergenceFactor = %v, want > 1: %w", s.DivergenceFactor, ErrInvalid)
	}
	return nil
}
