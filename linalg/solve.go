package linalg

import (
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/internal/isnil"
	"github.com/anemone-go/anemone/precision"
	"gonum.org/v1/gonum/mat"
)

// Refinement tuning.
const (
	// refineWindow, refineFactor: refinement gives up when the backward
	// error (Inverse: ‖I − A·X‖∞) fails to fall below refineFactor times
	// its value refineWindow steps earlier.
	refineWindow = 3
	refineFactor = 0.5
	// inverseResidualLimbs: Inverse's residual I − B·X is a product of
	// 11 limbs of 6 bits (66 bits, error about 40·2⁻⁶⁶·‖B‖‖X‖), so that its
	// rounding stays below float64's for κ up to 1e4 and beyond.
	inverseResidualLimbs = 11
)

// Solve solves A·x = b for a square nonsingular A to float64-class
// accuracy: Factorize (the O(n³) elimination on the device), then
// GMRES-IR in float64 with the factors as preconditioner
// (Factorization.SolveMany). It stops when the normwise backward error
// ‖b − A·x‖∞/(‖A‖∞‖x‖∞ + ‖b‖∞) is at most Tol (default 1e-15), and so is
// that of the equilibrated system.
//
// Errors: ErrShape (a not square, len(b) wrong), ErrRange (NaN or ±Inf),
// ErrSingular (a zero row or column, an exactly zero pivot, or, joined
// with ErrNotConverged, a matrix singular to the factors' precision),
// ErrNotConverged when refinement stagnates (the best x comes back with
// it; the message has the history and the condition estimate). A zero b
// gives x = 0.
func Solve(a mat.Matrix, b []float64, s *Settings) ([]float64, error) {
	if !isnil.Matrix(a) {
		if r, _ := a.Dims(); r != len(b) {
			if _, _, err := checkMatrix("Solve", "a", a); err == nil {
				return nil, fmt.Errorf("linalg: Solve: b has length %d, a has %d rows: %w", len(b), r, ErrShape)
			}
		}
	}
	if err := checkVector("Solve", "b", b, len(b)); err != nil {
		return nil, err
	}
	var x [][]float64
	err := oneCall("Solve", a, s, func(f *Factorization) error {
		var err error
		x, err = f.solve("Solve", [][]float64{b})
		return err
	})
	if x == nil {
		return nil, err
	}
	return x[0], err
}

// SolveMany solves A·X = B for the k columns of B at once, as Solve does
// (one factorization, then GMRES-IR per column). B must have as many rows
// as A (ErrShape).
func SolveMany(a, b mat.Matrix, s *Settings) (*mat.Dense, error) {
	const fn = "SolveMany"
	br, k, err := checkMatrix(fn, "b", b)
	if err != nil {
		return nil, err
	}
	if !isnil.Matrix(a) {
		if r, c := a.Dims(); r != br {
			return nil, fmt.Errorf("linalg: %s: b has %d rows, a is %d×%d: %w", fn, br, r, c, ErrShape)
		}
	}
	cols := make([][]float64, k)
	for j := range k {
		cols[j] = mat.Col(nil, j, b)
	}
	var x [][]float64
	err = oneCall(fn, a, s, func(f *Factorization) error {
		var err error
		x, err = f.solve(fn, cols)
		return err
	})
	if x == nil {
		return nil, err
	}
	out := mat.NewDense(br, k, nil)
	for j, col := range x {
		out.SetCol(j, col)
	}
	return out, err
}

// oneCall factors a, runs use on the factorization and reports the work
// of both in s.Stats.
func oneCall(fn string, a mat.Matrix, s *Settings, use func(*Factorization) error) error {
	cfg, err := resolve(fn, s)
	if err != nil {
		return err
	}
	user := cfg.stats
	f, err := factorize(fn, cfg, a)
	if f == nil {
		cfg.stats.finish()
		return err
	}
	f.stats = *cfg.stats
	f.cfg.stats = &f.stats
	err = use(f)
	*user = f.Stats()
	return err
}

// Inverse returns A⁻¹ for a square nonsingular A: the accelerated
// Newton–Schulz iteration on the device (runtime operands, one program per
// mode; see newtonSchulz), FP16 first and Compensated if FP16 cannot bring
// ‖I − B·X‖_F below ½, then refined: R = I − B·X with B·X a device product
// of 11 limbs (66 bits), X += X·R a compensated device product, while ‖R‖∞
// at least halves. Each step multiplies ‖R‖ by about max(‖R‖, κ·4e-8), so
// it ends at the floor of R's rounding, about n·2⁻⁵³·κ∞. The host forms
// I − B·X and the scalings, O(n²) a step. On a device whose matmul
// accumulates in fp16 (sim-narrow) no device product reaches 53 bits, so
// there the host computes R in float64 (O(n³) a step, the one exception).
// On the simulator ‖I − A·X‖₂ ≤ 1e-12 for κ₂ ≤ 1e4 under both numerics
// models. Converged means ‖I − A·X‖∞ ≤ Tol·n·κ∞ (Tol default 1e-15);
// otherwise the best X comes back with ErrNotConverged. Errors as Solve.
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
	// The residual product B·X: B resident, 11 limbs.
	var pres *plan
	if cfg.wide {
		pres = &plan{cfg: cfg, mode: precision.Float64, m: n, k: n, n: n}
		start := time.Now()
		p, err := precision.NewMatMulShape(cfg.dev, n, n, n, precision.MatMulOptions{Mode: precision.Float64, Limbs: inverseResidualLimbs})
		cfg.stats.Build += time.Since(start)
		if err != nil {
			return nil, wrapDevice(fn, err)
		}
		if rep := p.Compiled(); rep.Fresh {
			cfg.stats.Programs++
			cfg.stats.ModeledCompile += rep.Modeled
		}
		pres.bands = []band{{0, n, p}}
		defer pres.close()
		if err := pres.setA(fn, e.b); err != nil {
			return nil, err
		}
	}
	px, err := newShapePlan(fn, cfg, n, n, n, corrMode)
	if err != nil {
		return nil, err
	}
	defer px.close()
	x := ns.x // B⁻¹, in B's scaling
	best := x
	bestR := math.Inf(1)
	var r mat.Dense
	for {
		if pres != nil {
			if err := pres.apply(fn, &r, x); err != nil {
				return e.unscale(best), err
			}
		}
		hostStart := time.Now()
		if pres == nil {
			r.Mul(e.b, x)
			cfg.stats.HostFlops += int64(2 * n * n * n)
		}
		raw := r.RawMatrix()
		for i := range n {
			row := raw.Data[i*raw.Stride : i*raw.Stride+n]
			for j := range row {
				row[j] = -row[j]
			}
			row[i]++
		}
		// ‖I − A·X_A‖∞ with X_A = D_c·X·D_r is ‖D_r⁻¹·R·D_r‖∞.
		h := 0.0
		for i := range n {
			sum := 0.0
			for j, v := range raw.Data[i*raw.Stride : i*raw.Stride+n] {
				sum += math.Abs(v) * e.r[j]
			}
			h = math.Max(h, sum/e.r[i])
		}
		cfg.stats.HostFlops += int64(4 * n * n)
		cfg.stats.History = append(cfg.stats.History, h)
		if h < bestR {
			best, bestR = x, h
		}
		cfg.stats.Host += time.Since(hostStart)
		hist := cfg.stats.History
		if math.IsNaN(h) || (len(hist) > 1 && !(h < refineFactor*hist[len(hist)-2])) || h <= 0x1p-53 {
			break
		}
		if cfg.stats.Dispatches+2 > cfg.budget {
			break
		}
		if err := px.setA(fn, x); err != nil {
			return e.unscale(best), err
		}
		var d mat.Dense
		if err := px.apply(fn, &d, &r); err != nil {
			return e.unscale(best), err
		}
		var xn mat.Dense
		xn.Add(x, &d)
		x = &xn
		cfg.stats.Refinements++
	}
	xa := e.unscale(best)
	cfg.stats.Cond = e.normInf * mat.Norm(xa, math.Inf(1))
	if !(bestR <= cfg.tol*float64(n)*cfg.stats.Cond) {
		return xa, fmt.Errorf("linalg: Inverse: ‖I − A·X‖∞ = %.3g after %d refinements, above Tol·n·κ∞ = %.3g, history %s; condition estimate κ∞ ≈ %.3g, Newton–Schulz (%v) reached ‖I − A·X‖_F = %.3g in %d steps: %w",
			bestR, cfg.stats.Refinements, cfg.tol*float64(n)*cfg.stats.Cond, fmtHistory(cfg.stats.History), cfg.stats.Cond, ns.mode, ns.resF, ns.steps, ErrNotConverged)
	}
	return xa, nil
}
