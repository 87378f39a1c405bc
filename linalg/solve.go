package linalg

import (
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/precision"
	"gonum.org/v1/gonum/mat"
)

// Refinement tuning.
const (
	// refineWindow, refineFactor: refinement gives up when the largest
	// backward error over the columns fails to fall below refineFactor
	// times its value refineWindow steps earlier.
	refineWindow = 3
	refineFactor = 0.5
	// fp16ApplyErr: the correction X·r runs as one FP16 pass when
	// κ∞(A)·ε16 ≤ 1/16, ε16 the FP16 product's relative error (u16 = 2⁻¹¹
	// with a float32 accumulator, about u16·√(n/2) with an fp16 one): its
	// error, about κ·ε16 relative, then costs at most a factor 1/16 of
	// each step's gain. Compensated otherwise.
	fp16ApplyErr = 0x1p-4
)

// Solve solves A·x = b for a square nonsingular A to float64-class
// accuracy: the device computes an approximate inverse and every
// correction, the host only computes residuals in float64.
//
//  1. A is equilibrated by powers of two (precision.Equilibrate), B =
//     D_r·A·D_c, exactly.
//  2. The device computes X ≈ B⁻¹ by accelerated Newton–Schulz (two
//     products a step; see the package documentation), first in FP16 and,
//     if that cannot bring ‖I − B·X‖_F below ½ (κ(A) beyond about 2e3),
//     in Compensated products.
//  3. Iterative refinement: the host computes r = b − A·x in float64, the
//     device the correction d = D_c·X·D_r·r, the host adds it. Each step
//     multiplies the error by at most ‖I − A·X̃‖ < ½.
//
// It stops when the normwise backward error ‖b − A·x‖∞/(‖A‖∞‖x‖∞ + ‖b‖∞)
// is at most Tol (default 1e-15). On the simulator (RandSVD, geometric
// singular values, n = 256) it reaches that for κ₂ = 1e2, 1e4 and 1e6
// (TestSolveTable), under both of the simulator's numerics models.
// Precision FP16 forces FP16 products (κ ≲ 2e3 with a float32
// accumulator, less with an fp16 one), Compensated 30-bit products
// (κ ≲ 1e7), Float64 9-limb products (ErrUnsupported on an fp16
// accumulator).
//
// The Newton–Schulz inverse is cached: a later Solve, SolveMany or Inverse
// with the same *mat.Dense, unchanged contents, the same device and
// Precision skips step 2 (see Settings.NoCache and Stats.Cached).
//
// Errors: ErrShape (a not square, len(b) wrong), ErrRange (NaN or ±Inf),
// ErrSingular together with ErrNotConverged when no usable inverse is
// found (singular, or beyond the mode's reach; the message has the
// Newton–Schulz history and a condition estimate), ErrNotConverged when
// refinement stagnates or MaxDispatches is reached (the best x comes back
// with it). A zero b gives x = 0.
func Solve(a mat.Matrix, b []float64, s *Settings) ([]float64, error) {
	if a != nil {
		if r, _ := a.Dims(); r != len(b) {
			if _, _, err := checkMatrix("Solve", "a", a); err == nil {
				return nil, fmt.Errorf("linalg: Solve: b has length %d, a has %d rows: %w", len(b), r, ErrShape)
			}
		}
	}
	if err := checkVector("Solve", "b", b, len(b)); err != nil {
		return nil, err
	}
	var bm mat.Matrix
	if len(b) > 0 {
		bm = mat.NewDense(len(b), 1, append([]float64(nil), b...))
	}
	x, err := solve("Solve", a, bm, s)
	if x == nil {
		return nil, err
	}
	out := make([]float64, len(b))
	for i := range out {
		out[i] = x.At(i, 0)
	}
	return out, err
}

// SolveMany solves A·X = B for the k columns of B at once, as Solve does
// (same method, same accuracy per column): each refinement step computes
// the corrections of all columns in one device program, so A's inverse is
// read once per step for all of them. B must have as many rows as A
// (ErrShape).
func SolveMany(a, b mat.Matrix, s *Settings) (*mat.Dense, error) {
	return solve("SolveMany", a, b, s)
}

func solve(fn string, a, b mat.Matrix, s *Settings) (*mat.Dense, error) {
	cfg, err := resolve(fn, s)
	if err != nil {
		return nil, err
	}
	defer cfg.stats.finish()
	e, err := equilibrate(fn, a)
	if err != nil {
		return nil, err
	}
	n, _ := e.b.Dims()
	br, k, err := checkMatrix(fn, "b", b)
	if err != nil {
		return nil, err
	}
	if br != n {
		return nil, fmt.Errorf("linalg: %s: b has %d rows, a is %d×%d: %w", fn, br, n, n, ErrShape)
	}
	ns, err := e.usableInverse(fn, cfg)
	if err != nil {
		return nil, err
	}
	hostStart := time.Now()
	xa := e.unscale(ns.x)
	cfg.stats.Cond = e.normInf * mat.Norm(xa, math.Inf(1))
	cfg.stats.Host += time.Since(hostStart)

	applyMode := precision.Compensated
	if cfg.mode == precision.FP16 || (cfg.mode == 0 && cfg.stats.Cond*cfg.fp16Err(n) <= fp16ApplyErr) {
		applyMode = precision.FP16
	}
	if cfg.mode == precision.Float64 {
		applyMode = precision.Float64
	}
	px, err := newPlan(fn, cfg, xa, k, applyMode)
	if err != nil {
		return nil, err
	}
	defer px.close()

	normB := make([]float64, k)
	for j := range k {
		for i := range n {
			normB[j] = math.Max(normB[j], math.Abs(b.At(i, j)))
		}
	}
	x := mat.NewDense(n, k, nil)
	best := mat.NewDense(n, k, nil)
	bestEta := math.Inf(1)
	var r mat.Dense
	for {
		hostStart = time.Now()
		r.Mul(a, x)
		r.Sub(b, &r)
		eta := 0.0
		for j := range k {
			rn, xn := 0.0, 0.0
			for i := range n {
				rn = math.Max(rn, math.Abs(r.At(i, j)))
				xn = math.Max(xn, math.Abs(x.At(i, j)))
			}
			den := e.normInf*xn + normB[j]
			if den > 0 {
				eta = math.Max(eta, rn/den)
			} else if rn > 0 || math.IsNaN(rn) {
				eta = math.Inf(1)
			}
			if math.IsNaN(rn) {
				eta = math.NaN()
			}
		}
		cfg.stats.History = append(cfg.stats.History, eta)
		if eta < bestEta {
			bestEta = eta
			best.Copy(x)
		}
		cfg.stats.Host += time.Since(hostStart)
		h := cfg.stats.History
		step := len(h) - 1
		switch {
		case eta <= cfg.tol:
			return best, nil
		case math.IsNaN(eta) || math.IsInf(eta, 0):
			return best, notConverged(fn, cfg, ns, fmt.Sprintf("backward error %v", eta))
		case step >= refineWindow && !(eta < refineFactor*h[step-refineWindow]):
			return best, notConverged(fn, cfg, ns, fmt.Sprintf("refinement stagnated at backward error %.3g", bestEta))
		case cfg.stats.Dispatches+len(px.bands) > cfg.budget:
			return best, notConverged(fn, cfg, ns, fmt.Sprintf("MaxDispatches = %d reached at backward error %.3g", cfg.budget, bestEta))
		}
		var d mat.Dense
		if err := px.apply(fn, &d, &r); err != nil {
			return best, err
		}
		hostStart = time.Now()
		x.Add(x, &d)
		cfg.stats.Refinements++
		cfg.stats.Host += time.Since(hostStart)
	}
}

func notConverged(fn string, cfg *config, ns *nsResult, why string) error {
	return fmt.Errorf("linalg: %s: %s after %d refinements (tolerance %g), history %s; condition estimate κ∞ ≈ %.3g, Newton–Schulz (%v) reached ‖I − A·X‖_F = %.3g in %d steps: %w",
		fn, why, cfg.stats.Refinements, cfg.tol, fmtHistory(cfg.stats.History), cfg.stats.Cond, ns.mode, ns.resF, ns.steps, ErrNotConverged)
}

// Inverse returns A⁻¹ for a square nonsingular A: accelerated Newton–Schulz
// on the device (as in Solve), then refined on the host: the host computes
// R = I − A·X in float64, the device the correction X·R in Compensated
// products (Float64 with Precision Float64), X += X·R, while ‖R‖∞ at least
// halves. Each step multiplies ‖R‖ by about max(‖R‖, κ·ε), so it ends at
// the float64 floor, about n·2⁻⁵³·κ∞(A). On the simulator ‖I − A·X‖₂ ≤ 1e-12
// for κ₂ ≤ 1e4 at n = 128 under both numerics models (TestInverse). The
// Newton–Schulz inverse is shared with Solve's cache. Converged means ‖I − A·X‖∞ ≤
// Tol·n·κ∞ (Tol default 1e-15); otherwise the best X comes back with
// ErrNotConverged. Errors as Solve.
func Inverse(a mat.Matrix, s *Settings) (*mat.Dense, error) {
	const fn = "Inverse"
	cfg, err := resolve(fn, s)
	if err != nil {
		return nil, err
	}
	defer cfg.stats.finish()
	e, err := equilibrate(fn, a)
	if err != nil {
		return nil, err
	}
	n, _ := e.b.Dims()
	ns, err := e.usableInverse(fn, cfg)
	if err != nil {
		return nil, err
	}
	corrMode := precision.Compensated
	if cfg.mode == precision.Float64 {
		corrMode = precision.Float64
	}
	x := e.unscale(ns.x)
	best := x
	bestR := math.Inf(1)
	var r mat.Dense
	for {
		hostStart := time.Now()
		r.Mul(a, x)
		r.Scale(-1, &r)
		for i := range n {
			r.Set(i, i, r.At(i, i)+1)
		}
		h := mat.Norm(&r, math.Inf(1))
		cfg.stats.History = append(cfg.stats.History, h)
		if h < bestR {
			best, bestR = x, h
		}
		cfg.stats.Cond = e.normInf * mat.Norm(best, math.Inf(1))
		cfg.stats.Host += time.Since(hostStart)
		hist := cfg.stats.History
		if math.IsNaN(h) || (len(hist) > 1 && !(h < refineFactor*hist[len(hist)-2])) || h <= 0x1p-53 {
			break
		}
		if cfg.stats.Dispatches+1 > cfg.budget {
			break
		}
		px, err := newPlan(fn, cfg, x, n, corrMode)
		if err != nil {
			return best, err
		}
		var d mat.Dense
		err = px.apply(fn, &d, &r)
		px.close()
		if err != nil {
			return best, err
		}
		var xn mat.Dense
		xn.Add(x, &d)
		x = &xn
		cfg.stats.Refinements++
	}
	if !(bestR <= cfg.tol*float64(n)*cfg.stats.Cond) {
		return best, fmt.Errorf("linalg: Inverse: ‖I − A·X‖∞ = %.3g after %d refinements, above Tol·n·κ∞ = %.3g, history %s; condition estimate κ∞ ≈ %.3g, Newton–Schulz (%v) reached ‖I − A·X‖_F = %.3g in %d steps: %w",
			bestR, cfg.stats.Refinements, cfg.tol*float64(n)*cfg.stats.Cond, fmtHistory(cfg.stats.History), cfg.stats.Cond, ns.mode, ns.resF, ns.steps, ErrNotConverged)
	}
	return best, nil
}
