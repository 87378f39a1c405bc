package linalg

import (
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/internal/newtonschulz"
	"github.com/anemone-go/anemone/precision"
	"gonum.org/v1/gonum/mat"
)

// Newton–Schulz tuning.
const (
	// nsStop: the iteration stops once ‖I − B·X‖_F ≤ nsStop (then every
	// refinement step gains at least a factor 1/nsStop) ...
	nsStop = 1.0 / 64
	// nsAccept: ... and counts as a usable inverse when its best iterate
	// has ‖I − B·X‖_F < nsAccept: ‖I − B·X‖₂ ≤ ‖·‖_F < ½, so refinement
	// gains at least a factor 2 a step.
	nsAccept = 0.5
)

// reach is the largest condition number for which Newton–Schulz in mode
// keeps the smallest singular directions above the product's rounding
// noise (κ·ε ≪ 1, ε the normwise product error: 2⁻¹¹ for FP16, 40·2⁻³⁰ for
// 5 compensated limbs, 40·2⁻⁵⁴ for 9); it sets the step budget.
func reach(mode precision.Mode) float64 {
	switch mode {
	case precision.FP16:
		return 2e3
	case precision.Float64:
		return 1e12
	}
	return 1e7
}

// nsResult is the outcome of a Newton–Schulz run on B.
type nsResult struct {
	x       *mat.Dense // the best iterate
	resF    float64    // its ‖I − B·X‖_F
	steps   int
	history []float64 // ‖I − B·X‖_F of every iterate
	mode    precision.Mode
}

func (r *nsResult) ok() bool { return r.x != nil && r.resF < nsAccept }

// newtonSchulz approximates B⁻¹ on the device by the Newton–Schulz
// iteration X_{k+1} = X_k·(2I − B·X_k) (Schulz 1933; Ben-Israel 1965) with
// the acceleration of Pan and Schreiber (1991, §3): X_{k+1} = β·X_k·(2I −
// β·B·X_k), β = 2/(1 + l + 0.1·(1 − l)) for a lower bound l of the
// spectrum of B·X_k, which then doubles the small eigenvalues' growth per
// step (×4 instead of ×2). X_0 = Bᵀ/min(‖B‖₁‖B‖∞, ‖B‖_F²) puts the spectrum
// of B·X_0 = BBᵀ/… in (0, 1] (Ben-Israel and Cohen 1966), and every later
// step keeps it there; in exact arithmetic B·X_k stays symmetric, so its
// eigenvalues are the squared singular values of the iteration polynomial.
// l comes from nsLanczos Lanczos steps on sym(B·X_k) on the host: the
// smallest Ritz value is an upper bound of the smallest eigenvalue, which
// makes β smaller than optimal, never larger (an overestimate of l is safe,
// an underestimate could map the top of the spectrum towards 0).
//
// Each step is two device products in mode: X_k·M with M = 2I − β·B·X_k
// formed on the host, and B·X_{k+1} with B compiled once. The host keeps
// X and B·X in float64 and computes ‖I − B·X‖_F.
func newtonSchulz(fn string, cfg *config, b *mat.Dense, mode precision.Mode) (*nsResult, error) {
	n, _ := b.Dims()
	res := &nsResult{mode: mode, resF: math.Inf(1)}
	// Both products are n×n by n×n: one program, two sessions, B resident
	// in one, the iterate X rewritten into the other every step.
	pb, err := newPlan(fn, cfg, b, n, mode)
	if err != nil {
		return res, err
	}
	defer pb.close()
	px, err := newShapePlan(fn, cfg, n, n, n, mode)
	if err != nil {
		return res, err
	}
	defer px.close()
	run, err := newtonschulz.Run(b, newtonschulz.Config{Stop: nsStop, Reach: reach(mode), Seed: 0x6c696e616c67}, newtonschulz.Products{
		MulB: func(dst, x *mat.Dense) error { return pb.apply(fn, dst, x) },
		MulX: func(dst, x, m *mat.Dense) error {
			if err := px.setA(fn, x); err != nil {
				return err
			}
			return px.apply(fn, dst, m)
		},
		Host: func(d time.Duration) { cfg.stats.Host += d },
	})
	res.x, res.resF, res.steps, res.history = run.X, run.ResF, run.Steps, run.History
	cfg.stats.NewtonSchulz += run.Steps
	return res, err
}

// equilibrated is a square matrix scaled by powers of two, B = D_r·A·D_c
// (equilibrateIter), with ‖A‖∞.
type equilibrated struct {
	a       mat.Matrix
	b       *mat.Dense
	r, c    []float64
	normInf float64
}

// equilibrate checks that a is square and finite, scales it and rejects a
// zero row or column (exactly singular).
func equilibrate(fn string, a mat.Matrix) (*equilibrated, error) {
	n, b, r, c, err := equilibrateIter(fn, a)
	if err != nil {
		return nil, err
	}
	return &equilibrated{a: a, b: mat.NewDense(n, n, b), r: r, c: c, normInf: mat.Norm(a, math.Inf(1))}, nil
}

// usableInverse runs Newton–Schulz on e.b in the modes the setting asks
// for (FP16 first, then Compensated, by default), records the mode, and
// turns a run that found no usable inverse into nsFailure's error.
func (e *equilibrated) usableInverse(fn string, cfg *config) (*nsResult, error) {
	if cfg.tol == 0 {
		cfg.tol = DefaultTol
	}
	ns, err := e.newInverse(fn, cfg)
	if ns != nil {
		cfg.stats.Mode = ns.mode
	}
	if err != nil {
		return nil, err
	}
	if !ns.ok() {
		return nil, nsFailure(fn, e, ns)
	}
	return ns, nil
}

func (e *equilibrated) newInverse(fn string, cfg *config) (*nsResult, error) {
	var modes []precision.Mode
	switch cfg.mode {
	case 0:
		modes = []precision.Mode{precision.FP16, precision.Compensated}
	default:
		modes = []precision.Mode{cfg.mode}
	}
	var best *nsResult
	for _, mode := range modes {
		r, err := newtonSchulz(fn, cfg, e.b, mode)
		if err != nil {
			return r, err
		}
		if best == nil || r.resF < best.resF {
			best = r
		}
		if r.ok() {
			return r, nil
		}
	}
	return best, nil
}

// unscale returns D_c·X·D_r, the inverse of A from that of B = D_r·A·D_c.
func (e *equilibrated) unscale(x *mat.Dense) *mat.Dense {
	n, _ := x.Dims()
	out := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			out.Set(i, j, e.c[i]*x.At(i, j)*e.r[j])
		}
	}
	return out
}

// nsFailure is the error of a Newton–Schulz run that found no usable
// inverse.
func nsFailure(fn string, e *equilibrated, r *nsResult) error {
	cond := math.Inf(1)
	if r.x != nil {
		cond = e.normInf * mat.Norm(e.unscale(r.x), math.Inf(1))
	}
	remedy := "Precision: Float64 (9-limb products) reaches κ ≈ 1e12; for systems with A, Solve and SolveMany need no inverse"
	if r.mode == precision.Float64 {
		remedy = "for systems with A, Solve and SolveMany need no inverse"
	}
	return fmt.Errorf("linalg: %s: the matrix is singular or too ill-conditioned for %v device products: Newton–Schulz brought ‖I − A·X‖_F only to %.3g (need < %g) in %d steps, history %s; condition estimate κ∞ ≳ %.3g; %s: %w",
		fn, r.mode, r.resF, nsAccept, r.steps, fmtHistory(r.history), cond, remedy, joinSentinels(ErrSingular, ErrNotConverged))
}

type joined struct{ a, b error }

func (j joined) Error() string   { return j.a.Error() + "; " + j.b.Error() }
func (j joined) Unwrap() []error { return []error{j.a, j.b} }

func joinSentinels(a, b error) error { return joined{a, b} }

// fmtHistory prints a history compactly: at most 12 values, the middle
// elided.
func fmtHistory(h []float64) string {
	s := "["
	for i, v := range h {
		if len(h) > 12 && i == 6 {
			s += fmt.Sprintf(" …(%d more)", len(h)-12)
		}
		if len(h) > 12 && i >= 6 && i < len(h)-6 {
			continue
		}
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2g", v)
	}
	return s + "]"
}
