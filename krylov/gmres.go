package krylov

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/floats"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// GMRES tuning constants.
const (
	// gmresStallWindow and gmresStallFactor define stagnation: GMRES gives
	// up with ErrNotConverged when the relative residual after a cycle is
	// above gmresStallFactor times the one gmresStallWindow cycles earlier
	// (no halving in five cycles of m steps).
	gmresStallWindow = 5
	gmresStallFactor = 0.5

	// gmresMaxRetries bounds the halvings of a dispatch's input after an
	// fp16 overflow on the device.
	gmresMaxRetries = 8

	// gmresImageFloor: when the device returns the images A·z_j (a dense
	// matrix's Newton–Schulz preconditioner, see inverseGraph), they carry a relative error near 2⁻²²
	// times ‖A‖‖z_j‖/‖A·z_j‖, so the cycle's least-squares residual is only
	// an estimate below about that. A cycle ends once its estimate has
	// fallen by this factor, and the next one starts from the float64
	// residual.
	gmresImageFloor = 0x1p-14
)

// MaxRestart bounds GMRES's m = min(Settings.Restart, n): the host keeps
// 2m + 1 vectors of length n and solves an (m+1)×m least-squares problem
// per cycle.
const MaxRestart = 32

// GMRES solves A·x = b for a general nonsingular A by flexible restarted
// GMRES, FGMRES(m) with m = min(Settings.Restart, n) (Saad, "A flexible
// inner-outer preconditioned GMRES algorithm", SIAM J. Sci. Comput. 14(2),
// 1993), right-preconditioned by a device program.
//
// The host keeps the Arnoldi basis and the directions in float64; each
// step is one dispatch that computes z_j ≈ A⁻¹·v_j. Because the iteration
// is flexible, the relation A·Z = V·H holds in float64 whatever the z_j
// are, so fp16 rounding in the preconditioner slows nothing down. A Dense
// matrix (up to 1024 unknowns) gets an approximate inverse computed on the
// device once per operator by accelerated Newton–Schulz (Pan and
// Schreiber, SIAM J. Sci. Stat. Comput. 12(5), 1991), compensated in
// Compensated mode; any other operator a dot-free Chebyshev polynomial of
// degree 16 for an ellipse holding its field of values (Manteuffel, Numer.
// Math. 28, 1977). docs/KRYLOV.md states both, and the scaling, in full.
//
// GMRES uses Tol, Restart (1 … MaxRestart once capped at n; default 30),
// MaxDispatches, Precision, X0, Device and Trace; it ignores Unroll and
// refuses Precond (ErrInput). A dispatch is one step. It stops when the
// recomputed ‖b − A·x‖₂/‖b‖₂ is at most Tol (Converged, nil error), after
// MaxDispatches steps, when the residual fails to halve within five cycles
// or becomes NaN; the last three return the best iterate so far with an
// error wrapping ErrNotConverged. History, recomputed after every cycle,
// never increases (see Result).
//
// Errors: ErrShape and ErrInput for bad input (lengths, NaN or Inf in b or
// X0, settings out of range, a zero, negative, subnormal or non-finite
// ‖A‖∞, a non-finite initial residual, an unknown Precision);
// ErrUnsupported for a problem past the device's limits (wrapping the
// lowering error too); ErrNotConverged as above.
func GMRES(a Operator, b []float64, s *Settings) (Result, error) {
	st := s.withDefaults(dims(a))
	if err := checkVectors("GMRES", a, b, st); err != nil {
		return Result{}, err
	}
	plan, err := planGMRES(a, st)
	if err != nil {
		return Result{}, err
	}
	return solve(a, b, st, plan.loop)
}

// gmresPlan is what GMRES derives from the operator and the settings.
type gmresPlan struct {
	a           Operator
	n, m        int
	normA       float64 // ‖A‖∞ (doubled after an overflow in the polynomial)
	sigma       int     // 2^σ·normA in [½, 1)
	compensated bool
	set         Settings
}

func planGMRES(a Operator, st Settings) (*gmresPlan, error) {
	if err := checkCommon("GMRES", a, st); err != nil {
		return nil, err
	}
	if st.Precond != nil {
		return nil, fmt.Errorf("krylov: GMRES does not apply Settings.Precond (CG does; GMRES brings its own device preconditioner): leave it nil: %w", ErrInput)
	}
	n := a.Dims()
	if _, err := deviceShape("GMRES", a); err != nil {
		return nil, err
	}
	m := min(st.Restart, n)
	if st.Restart < 0 || m > MaxRestart {
		return nil, fmt.Errorf("krylov: GMRES: Restart %d is out of range: use 1 … %d Arnoldi steps per cycle (0 for the default %d): %w", st.Restart, MaxRestart, DefaultRestart, ErrInput)
	}
	normA, err := checkNorm("GMRES", a)
	if err != nil {
		return nil, err
	}
	if normA == 0 {
		return nil, fmt.Errorf("krylov: GMRES: the operator is zero (NormInf() = 0), so A is singular: %w", ErrInput)
	}
	plan := &gmresPlan{a: a, n: n, m: m, normA: normA, sigma: pow2Exp(normA), set: st}
	plan.compensated, _ = isCompensated(st.Precision)
	return plan, nil
}

// GMRESProgram returns the program one step of GMRES(a, b, s) dispatches
// (the preconditioner: for a dense matrix the Newton–Schulz inverse, which
// this call computes on the device if no earlier solve did), as GMRES builds
// it for s.Device's target (s may be nil), for inspection and pricing with
// lower.Estimate. A later GMRES with the same operator and settings reuses
// it.
func GMRESProgram(a Operator, s *Settings) (*lower.Program, error) {
	st := s.withDefaults(dims(a))
	plan, err := planGMRES(a, st)
	if err != nil {
		return nil, err
	}
	dev, err := device(st)
	if err != nil {
		return nil, err
	}
	pc, err := plan.precond(dev, &Stats{})
	if err != nil {
		return nil, err
	}
	return pc.exe.Program(), nil
}

// loop is flexible GMRES(m) (see GMRES).
func (p *gmresPlan) loop(run *run) error {
	st, res, a, b := p.set, run.res, run.a, run.b
	n, m := p.n, p.m
	x := res.X
	r := make([]float64, n)
	rnorm, err := run.initialResidual(r, "GMRES")
	if err != nil {
		return err
	}
	if res.Residual <= st.Tol { // X0 solves it: nothing to build
		res.Converged = true
		return nil
	}
	pc, err := p.precond(run.dev, &res.Stats)
	if err != nil {
		return err
	}
	vs := make([][]float64, m+1)
	zs := make([][]float64, m)
	for j := range vs {
		vs[j] = make([]float64, n)
		if j < m {
			zs[j] = make([]float64, n)
		}
	}
	var ls fgmresLS
	ls.init(m)
	w := make([]float64, n)
	d := make([]float64, n)
	xt := make([]float64, n)
	r1 := make([]float64, n)
	tolAbs := st.Tol * run.bnorm
	for {
		rel := res.Residual
		switch k := len(res.History) - 1; {
		case rel <= st.Tol:
			res.Converged = true
			return nil
		case !finite(rel):
			return fmt.Errorf("krylov: GMRES(%d): residual is %g after %d steps (the operator's MulVecTo returned NaN or Inf, or x overflowed)%s: %w", m, rel, res.Dispatches, bestNote(run), ErrNotConverged)
		case res.Dispatches >= st.MaxDispatches:
			return fmt.Errorf("krylov: GMRES(%d): relative residual %.3g > %.3g after %d steps (MaxDispatches)%s%s: %w",
				m, rel, st.Tol, res.Dispatches, bestNote(run), pc.note, ErrNotConverged)
		case k >= gmresStallWindow && rel > gmresStallFactor*res.History[k-gmresStallWindow]:
			return fmt.Errorf("krylov: GMRES(%d): relative residual %.3g > %.3g stagnated (not halved in %d cycles) after %d steps%s%s: %w",
				m, rel, st.Tol, gmresStallWindow, res.Dispatches, bestNote(run), pc.note, ErrNotConverged)
		}

		// One cycle: v_1 = r/‖r‖, then up to m steps.
		for i, v := range r {
			vs[0][i] = v / rnorm
		}
		ls.reset(rnorm)
		stop := tolAbs
		if pc.deviceW {
			stop = math.Max(stop, gmresImageFloor*rnorm)
		}
		k := 0
		for j := 0; j < m && res.Dispatches < st.MaxDispatches; j++ {
			deviceW, err := pc.apply(run, vs[j], zs[j], w)
			for errors.Is(err, shim.ErrRange) && !pc.inverse && res.Retries < gmresMaxRetries {
				// The polynomial overflowed: A_s has eigenvalues beyond the
				// interval it was built for (NormInf() understates ‖A‖∞).
				// Rebuild it for 2·‖A_s‖ and repeat the step.
				res.Retries++
				p.normA *= 2
				p.sigma = pow2Exp(p.normA)
				note := pc.note
				if pc, err = p.polyPrecond(run.dev, &res.Stats); err != nil {
					return err
				}
				pc.note = note
				deviceW, err = pc.apply(run, vs[j], zs[j], w)
			}
			if err != nil {
				return fmt.Errorf("krylov: GMRES(%d): step %d: %w", m, res.Dispatches+1, err)
			}
			res.Dispatches++
			res.Iterations++
			if !deviceW {
				a.MulVecTo(w, zs[j])
			}
			h := ls.column(j)
			for i := 0; i <= j; i++ {
				h[i] = floats.Dot(w, vs[i])
				floats.AddScaled(w, -h[i], vs[i])
			}
			hn := floats.Norm(w, 2)
			h[j+1] = hn
			k = j + 1
			est := ls.rotate(j) // overwrites h
			if !(hn > 0) || !finite(est) {
				break // breakdown: the space is invariant (or the step failed)
			}
			if j+1 < m {
				for i, v := range w {
					vs[j+1][i] = v / hn
				}
			}
			if est <= stop || j+1 == m || res.Dispatches >= st.MaxDispatches {
				break
			}
			if st.Trace != nil {
				st.Trace(Step{Dispatch: res.Dispatches, Iterations: res.Iterations, Residual: est / run.bnorm, Elapsed: time.Since(run.start)})
			}
		}

		// x += Z·y, and the float64 residual of the new x.
		y := ls.solve(k)
		clear(d)
		for j, c := range y {
			floats.AddScaled(d, c, zs[j])
		}
		for i := range x {
			xt[i] = x[i] + d[i]
		}
		if beta1 := residual(r1, a, xt, b); beta1 < rnorm {
			copy(x, xt)
			copy(r, r1)
			rnorm = beta1
		} else {
			// The images the device returned were off (or the cycle gained
			// nothing): A·d = r − r1, and the α minimizing ‖r − α·A·d‖₂
			// gives (1 − α)·r + α·r1. The residual is then recomputed.
			num, den := 0.0, 0.0
			for i, ri := range r {
				ad := ri - r1[i]
				num += ri * ad
				den += ad * ad
			}
			if den > 0 && num > 0 {
				axpy(x, num/den, d)
				rnorm = residual(r, a, x, b)
			}
		}
		run.record(rnorm / run.bnorm)
	}
}

func axpy(y []float64, a float64, x []float64) {
	for i, v := range x {
		y[i] += a * v
	}
}

// bestNote says that a failed solve returns its best iterate, when that is
// not the last one.
func bestNote(r *run) string {
	if !(r.res.Residual <= r.best.res) {
		return fmt.Sprintf("; x is the best iterate met (relative residual %.3g)", r.best.res)
	}
	return ""
}

// fgmresLS is the cycle's (m+1)×m Hessenberg least-squares problem
// min‖β·e₁ − H·y‖₂, kept in QR form by Givens rotations (Saad 2003,
// §6.5.3).
type fgmresLS struct {
	h      [][]float64 // h[j] is column j: h[j][0..j+1]
	cs, sn []float64
	g, y   []float64
}

func (l *fgmresLS) init(m int) {
	l.h = make([][]float64, m)
	for j := range l.h {
		l.h[j] = make([]float64, m+1)
	}
	l.cs, l.sn = make([]float64, m), make([]float64, m)
	l.g, l.y = make([]float64, m+1), make([]float64, m)
}

func (l *fgmresLS) reset(beta float64) {
	clear(l.g)
	l.g[0] = beta
}

// column returns column j of H for the caller to fill (h_0j … h_{j+1,j}).
func (l *fgmresLS) column(j int) []float64 { return l.h[j] }

// rotate applies the earlier rotations to column j, makes the one that
// zeroes h_{j+1,j}, and returns the least-squares residual |g_{j+1}|.
func (l *fgmresLS) rotate(j int) float64 {
	col := l.h[j]
	for i := range j {
		t := l.cs[i]*col[i] + l.sn[i]*col[i+1]
		col[i+1] = -l.sn[i]*col[i] + l.cs[i]*col[i+1]
		col[i] = t
	}
	den := math.Hypot(col[j], col[j+1])
	if den == 0 {
		l.cs[j], l.sn[j] = 1, 0
	} else {
		l.cs[j], l.sn[j] = col[j]/den, col[j+1]/den
	}
	col[j], col[j+1] = den, 0
	l.g[j+1] = -l.sn[j] * l.g[j]
	l.g[j] *= l.cs[j]
	return math.Abs(l.g[j+1])
}

// solve returns y[:k] solving the triangular system of the first k columns
// (a zero diagonal, an exactly singular column, ends the basis there).
func (l *fgmresLS) solve(k int) []float64 {
	for i := range k {
		if l.h[i][i] == 0 {
			k = i
			break
		}
	}
	for i := k - 1; i >= 0; i-- {
		t := l.g[i]
		for c := i + 1; c < k; c++ {
			t -= l.h[c][i] * l.y[c]
		}
		l.y[i] = t / l.h[i][i]
	}
	return l.y[:k]
}

// concatTree concatenates xs along axis with two-input concats in a
// balanced tree: some ANE compile routes take only two inputs per concat
// (docs/ENGINE.md §7).
func concatTree(g *dataflow.Graph, axis int, xs []dataflow.Value) dataflow.Value {
	for len(xs) > 1 {
		next := make([]dataflow.Value, 0, (len(xs)+1)/2)
		for i := 0; i+1 < len(xs); i += 2 {
			next = append(next, g.Concat(axis, xs[i], xs[i+1]))
		}
		if len(xs)%2 == 1 {
			next = append(next, xs[len(xs)-1])
		}
		xs = next
	}
	return xs[0]
}
