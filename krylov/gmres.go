package krylov

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// GMRES tuning constants.
const (
	// gmresStallWindow and gmresStallFactor define stagnation: GMRES gives
	// up with ErrNotConverged when the relative residual after a cycle is
	// above gmresStallFactor times the one gmresStallWindow cycles earlier
	// (no halving in five cycles). A restarted GMRES that stalls this long
	// has usually lost the part of the Krylov space it needs (m too small
	// for the operator), and more cycles of the same kind rarely recover.
	gmresStallWindow = 5
	gmresStallFactor = 0.5

	// gmresTinyH: the host truncates the basis at the first column j whose
	// subdiagonal h_{j+1,j} is at most gmresTinyH·Σ_{i≤j}|h_ij|. After the
	// Gram–Schmidt subtractions, w carries an fp16 rounding error of about
	// u16 = 2^-11 times the entries subtracted, so a remainder this small is
	// rounding noise: the space is (numerically) invariant and the next
	// vector would be noise. 4·u16 leaves room for the sum of several
	// roundings.
	gmresTinyH = 4 * 0x1p-11

	// gmresMaxRetries bounds the halvings of the vector scale after an fp16
	// overflow on the device.
	gmresMaxRetries = 8

	// gmresTau is the exponent of the basis vectors' scale on the device:
	// the unit vectors v_j travel as 2^τ·v_j. Their entries then average
	// 2^τ/√n ≥ ½ for n ≤ 2^14, so the products w_i·v_i of the Gram–Schmidt
	// dots stay in fp16's normal range (≥ 2^-14) even for components of
	// A_s·v_j a thousand times below ‖A_s‖; and the dots themselves,
	// 2^{2τ}·h_ij with |h_ij| ≤ ‖A_s‖₂, stay below fp16's 65504 while
	// ‖A_s‖₂ < 16 (‖A_s‖₂ ≤ √(‖A_s‖₁·‖A_s‖∞) < √‖A_s‖₁, so only operators
	// whose 1-norm exceeds their ∞-norm 256-fold come near; an overflow
	// makes GMRES retry the cycle with τ one smaller).
	gmresTau = 6
)

// GMRES solves A·x = b for a general nonsingular A by restarted GMRES(m),
// m = Settings.Restart (Saad & Schultz 1986; Saad, Iterative Methods for
// Sparse Linear Systems, 2nd ed. 2003, Alg. 6.9 with the modified
// Gram–Schmidt Arnoldi process of Alg. 6.2). Each restart cycle is one
// device program, and the restarts are steps of iterative refinement in
// float64.
//
// Each cycle the host computes r = b − A·x in float64 and sends
// v₁ = r/‖r‖₂ (scaled by 2^6, so the basis vectors' entries sit well inside
// fp16's normal range and their dot products well below its maximum). The
// device runs m Arnoldi steps on A_s = 2^σ·A, 2^σ·‖A‖∞ ∈ [½, 1):
// w = A_s·v_j; for i ≤ j, h_ij = w·v_i and w −= h_ij·v_i; h_{j+1,j} = ‖w‖₂,
// taken as max|w_i|·‖w/max|w_i|‖₂ so that it cannot underflow;
// v_{j+1} = w/h_{j+1,j}. Every dot product is a matmul (products rounded to
// fp16, summed wide). The program returns H and V_m. The host solves
// min‖e₁ − H·y‖₂ in float64 by Givens rotations (Saad §6.5.3), truncating
// the basis at the first numerically zero h_{j+1,j} (breakdown), and sets
// d = 2^σ·‖r‖₂·V_m·y: from A_s·V_m = V_{m+1}·H, A·d ≈ ‖r‖·V_{m+1}·H·y ≈ r.
// It then recomputes the residual of x + d in float64. Should that not be
// smaller than r (fp16 errors in H and V can spoil a cycle on a badly
// conditioned A), the step is shortened to x + α·d with the α that
// minimizes ‖r − α·A·d‖₂, so no cycle increases the residual. As the next
// cycle starts from the float64 residual, fp16 errors slow convergence but
// do not limit the attainable accuracy, as long as κ(A)·2⁻¹¹ is well below
// 1 (beyond that the fp16 image of A is too far from A for the cycles to
// gain anything).
//
// The program for one (operator, m, device) is built once and reused by
// later cycles and later solves when the operator and the device are
// pointers (the constructors here return pointers; any other operator gets
// a program per call). The m basis vectors of length n live on the device,
// and n must fit one device row (MaxUnknowns); the program grows as m², so
// m = min(Restart, n) is limited to MaxRestart.
//
// GMRES uses Tol, Restart, MaxDispatches, Precision, X0, Device and Trace;
// it ignores Unroll and refuses Precond (ErrInput: solve with an operator
// for M⁻¹·A instead). It stops when the relative residual
// ‖b − A·x‖₂/‖b‖₂ is at most Tol (Converged, nil error), after
// MaxDispatches cycles, when the residual fails to halve within five
// cycles (stagnation: m too small for this A) or becomes NaN; the last
// three return the best iterate so far with an error wrapping
// ErrNotConverged. History holds the relative residual before the first
// and after every cycle (each one recomputed in float64 for the x of that
// cycle); Iterations counts m Arnoldi steps per cycle; Trace is called
// after every cycle. If b = 0, x = 0 is returned at once; other b are first
// scaled by a power of two, so that no host dot product under- or
// overflows. After an fp16 overflow on the device (an operator whose
// 2-norm exceeds its ∞-norm many times) the cycle is repeated with the
// vectors scaled down by 2 (Stats.Retries).
//
// Errors: ErrShape and ErrInput for bad input (lengths, NaN or Inf in b or
// X0, settings out of range, a zero, negative or non-finite ‖A‖∞, a
// non-finite initial residual, an unknown Precision); ErrUnsupported for a
// problem past the device's limits (wrapping the lowering error too) or an
// operator without a compensated form; ErrNotConverged as above.
//
// With Precision Compensated (or Float64) the cycles change character. The
// device applies A from limb digits and returns its Arnoldi basis with the
// images A·V to about twice fp16's precision; the host keeps the last 256
// directions and minimizes the residual over all of them in float64 (a
// generalized conjugate residual method whose search space grows by m per
// dispatch: Eisenstat, Elman and Schultz 1983; Saad 2003 §6.9). With m = n
// this is full GMRES with float64 minimization, and it converges where
// κ(A)·2⁻¹¹ ≥ 1 stops the FP16 cycles.
func GMRES(a Operator, b []float64, s *Settings) (Result, error) {
	st := s.withDefaults()
	if err := checkVectors("GMRES", a, b, st); err != nil {
		return Result{}, err
	}
	plan, err := planGMRES(a, st)
	if err != nil {
		return Result{}, err
	}
	if plan.compensated {
		return solve(a, b, st, plan.loopCompensated)
	}
	return solve(a, b, st, plan.loop)
}

// MaxRestart bounds GMRES's m = min(Settings.Restart, n): a cycle program
// grows as m² (every Arnoldi step orthogonalizes against all earlier ones),
// and so do its build time and memory.
const MaxRestart = 256

// gmresPlan is what GMRES derives from the operator and the settings.
type gmresPlan struct {
	dop         Operator  // R·A·C for a badly scaled dense A (FP16 mode), else A
	rs, cs      []float64 // R and C, or nil
	sigma       int       // ‖2^σ·dop‖∞ in [½, 1)
	m           int
	compensated bool
	set         Settings
}

func planGMRES(a Operator, st Settings) (*gmresPlan, error) {
	if err := checkCommon("GMRES", a, st); err != nil {
		return nil, err
	}
	if st.Precond != nil {
		return nil, fmt.Errorf("krylov: GMRES does not apply Settings.Precond (CG does): leave it nil, or solve with an Operator that applies M⁻¹·A: %w", ErrInput)
	}
	n := a.Dims()
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
	plan := &gmresPlan{dop: a, m: m, set: st}
	plan.compensated, _ = isCompensated(st.Precision)
	if plan.compensated {
		plan.sigma = pow2Exp(normA)
		if err := compensatedSupported(a, plan.sigma); err != nil {
			return nil, err
		}
		return plan, nil
	}
	// Badly scaled dense matrices are equilibrated before they reach the
	// device: the cycles work on R·A·C (exact power-of-two scalings) with
	// the residual R·r, and their correction d becomes C·d; the host keeps
	// the original system.
	if sop, r0, c0 := twoSidedScaling(a); sop != nil {
		plan.dop, plan.rs, plan.cs = sop, r0, c0
		normA = sop.NormInf()
	}
	plan.sigma = pow2Exp(normA)
	return plan, nil
}

// program returns the compiled FP16 cycle with the vector scale 2^τ.
func (p *gmresPlan) program(dev shim.Device, tau int) (*compiled, error) {
	key := programKey{solver: "gmres", dev: dev, op: p.dop, steps: p.m, sigma: p.sigma, tau: tau}
	return programs.get(key, fmt.Sprintf("GMRES(%d) on n = %d", p.m, p.dop.Dims()), func() (*dataflow.Graph, error) {
		return p.graph(tau)
	})
}

// graph builds the plan's cycle program: FP16 with the vector scale 2^τ,
// or the compensated cycle.
func (p *gmresPlan) graph(tau int) (*dataflow.Graph, error) {
	n := p.dop.Dims()
	if !p.compensated {
		return gmresGraph(p.dop, n, p.m, p.sigma, tau)
	}
	apply, err := compensatedApplier(p.dop, p.sigma, vectorNorm(n))
	if err != nil {
		return nil, err
	}
	return gcrGraph(n, p.m, vectorNorm(n), apply)
}

// GMRESProgram returns the program one cycle of GMRES(a, b, s) runs (the
// first cycle's: an fp16 overflow makes GMRES rerun a cycle with its
// vectors scaled down, a program of the same cost), as GMRES builds it for
// s.Device's target (s may be nil), for inspection and pricing with
// lower.Estimate. A later GMRES with the same operator and settings reuses
// it.
func GMRESProgram(a Operator, s *Settings) (*lower.Program, error) {
	st := s.withDefaults()
	plan, err := planGMRES(a, st)
	if err != nil {
		return nil, err
	}
	dev, err := device(st)
	if err != nil {
		return nil, err
	}
	var exe *compiled
	if plan.compensated {
		exe, err = plan.gcrProgram(dev)
	} else {
		exe, err = plan.program(dev, gmresTau)
	}
	if err != nil {
		return nil, err
	}
	return exe.Program(), nil
}

// loop is the FP16 cycle loop (see GMRES).
func (p *gmresPlan) loop(run *run) error {
	st, res, a, b := p.set, run.res, run.a, run.b
	n := a.Dims()
	m, rs, cs := p.m, p.rs, p.cs
	tau := gmresTau
	x := res.X
	r := make([]float64, n)
	d := make([]float64, n)
	xt := make([]float64, n)
	r1 := make([]float64, n)
	ry := make([]float64, n)
	in := make([]float32, n)
	var ls gmresLS

	if _, err := run.initialResidual(r, "GMRES"); err != nil {
		return err
	}
	for {
		rel := res.Residual
		switch k := len(res.History) - 1; {
		case rel <= st.Tol:
			res.Converged = true
			return nil
		case !finite(rel):
			return fmt.Errorf("krylov: GMRES(%d): residual is %g after %d cycles (the operator's MulVecTo returned NaN or Inf, or x overflowed)%s: %w", m, rel, res.Dispatches, bestNote(run), ErrNotConverged)
		case res.Dispatches >= st.MaxDispatches:
			return fmt.Errorf("krylov: GMRES(%d): relative residual %.3g > %.3g after %d cycles (MaxDispatches)%s: %w",
				m, rel, st.Tol, res.Dispatches, bestNote(run), ErrNotConverged)
		case k >= gmresStallWindow && rel > gmresStallFactor*res.History[k-gmresStallWindow]:
			return fmt.Errorf("krylov: GMRES(%d): relative residual %.3g > %.3g stagnated (not halved in %d cycles) after %d cycles%s: %w",
				m, rel, st.Tol, gmresStallWindow, res.Dispatches, bestNote(run), ErrNotConverged)
		}

		t0 := time.Now()
		exe, err := p.program(run.dev, tau)
		res.Build += time.Since(t0)
		if err != nil {
			return err
		}
		betaY := scaleBy(ry, rs, r) // R·r
		toFloat32(in, ry, math.Ldexp(1/betaY, tau))
		t0 = time.Now()
		out, err := exe.Run([][]float32{in})
		res.Device += time.Since(t0)
		res.charge(exe)
		if errors.Is(err, shim.ErrRange) && res.Retries < gmresMaxRetries {
			// Overflow inside the cycle: ‖A_s·v‖ outgrew the headroom of
			// the vector scale. Repeat the cycle with smaller vectors.
			tau--
			res.Retries++
			continue
		}
		if err != nil {
			return fmt.Errorf("krylov: GMRES(%d): cycle %d: %w: %w", m, res.Dispatches+1, ErrNotConverged, err)
		}
		res.Dispatches++
		res.Iterations += m

		// x += 2^σ·β·V_k·y with V returned as 2^τ·V; v₁ is the input, as
		// the device read it.
		k := ls.solve(out[0], m, tau)
		clear(d)
		v1 := roundFP16(in)
		for j := range k {
			c := ls.y[j]
			row := v1
			if j > 0 {
				row = out[1][(j-1)*n : j*n]
			}
			for i, v := range row {
				d[i] += c * float64(v)
			}
		}
		f := math.Ldexp(betaY, p.sigma-tau)
		for i := range x {
			d[i] *= f
			if cs != nil {
				d[i] *= cs[i]
			}
			xt[i] = x[i] + d[i]
		}
		// r1 = b − A·(x + d) is the float64 residual of the full step. If
		// it is not smaller than r, shorten the step: A·d = r − r1, and the
		// α minimizing ‖r − α·A·d‖₂ (1 in exact arithmetic, as GMRES
		// already minimizes over a space that holds d) gives
		// r − α·A·d = (1 − α)·r + α·r1, a combination of two float64
		// residuals. With equilibration the cycle minimized ‖R·(r − A·d)‖₂,
		// so the guard weighs the residuals by R as well. The residual of
		// the shortened step is then recomputed, not taken from that
		// combination.
		residual(r1, a, xt, b)
		if beta1 := weightedNorm(rs, r1); beta1 < betaY {
			copy(x, xt)
			copy(r, r1)
		} else {
			num, den := 0.0, 0.0
			for i, ri := range r {
				w := 1.0
				if rs != nil {
					w = rs[i] * rs[i]
				}
				ad := ri - r1[i]
				num += w * ri * ad
				den += w * ad * ad
			}
			if den > 0 && num != 0 {
				alpha := num / den
				for i := range x {
					x[i] += alpha * d[i]
				}
				residual(r, a, x, b)
			}
		}
		run.record(norm2(r) / run.bnorm)
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

// gmresLS is the host's small least-squares solve, with its buffers.
type gmresLS struct {
	h      [][]float64 // h[j] is column j of H: h[j][0..j+1]
	cs, sn []float64
	g, y   []float64
}

// solve reads the device's packed Hessenberg matrix (see gmresGraph),
// truncates it at the first numerically zero subdiagonal, and solves
// min‖e₁ − H_k·y‖₂ by Givens rotations (Saad 2003, §6.5.3). It returns k,
// the number of basis vectors used; y[:k] holds the solution.
func (l *gmresLS) solve(hs []float32, m, tau int) int {
	if len(l.h) != m {
		l.h = make([][]float64, m)
		for j := range l.h {
			l.h[j] = make([]float64, m+1)
		}
		l.cs, l.sn = make([]float64, m), make([]float64, m)
		l.g, l.y = make([]float64, m+1), make([]float64, m)
	}
	clear(l.g)
	l.g[0] = 1
	k := m
	for j := range m {
		col := l.h[j]
		packed := hs[j*(m+2) : (j+1)*(m+2)]
		sum := 0.0
		for i := 0; i <= j; i++ {
			col[i] = math.Ldexp(float64(packed[i]), -2*tau)
			sum += math.Abs(col[i])
		}
		col[j+1] = math.Ldexp(float64(packed[j+1])*float64(packed[j+2]), -tau)
		if col[j+1] <= gmresTinyH*sum {
			col[j+1] = 0 // breakdown: the basis ends with v_j
		}
		for i := range j {
			t := l.cs[i]*col[i] + l.sn[i]*col[i+1]
			col[i+1] = -l.sn[i]*col[i] + l.cs[i]*col[i+1]
			col[i] = t
		}
		den := math.Hypot(col[j], col[j+1])
		if den == 0 {
			k = j // a zero column: A_s·v_j ≈ 0, use the basis before it
			break
		}
		l.cs[j], l.sn[j] = col[j]/den, col[j+1]/den
		col[j], col[j+1] = den, 0
		l.g[j+1] = -l.sn[j] * l.g[j]
		l.g[j] *= l.cs[j]
		if l.sn[j] == 0 {
			k = j + 1
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
	return k
}

// gmresGraph builds one restart cycle: m Arnoldi steps with modified
// Gram–Schmidt on the scaled operator A_s = 2^σ·A, basis vectors scaled by
// 2^τ.
//
// Input "v" [1, n]: 2^τ·v₁. Outputs "hess" [m, m+2]: row j holds column j
// of H as the j+3 numbers 2^{2τ}·h_{0,j} … 2^{2τ}·h_{j,j}, μ_j, s_j with
// 2^τ·h_{j+1,j} = μ_j·s_j, then zeros; "basis" [m−1, n]: 2^τ·v_2 … 2^τ·v_m
// (none for m = 1: no output may be an input itself).
//
// The norm of w is taken in two steps so that it neither overflows nor
// sinks into fp16's subnormals, however small w is after the subtractions:
// μ = max(max_i |w_i|, 2^-14) (reduce_max is exact), u = w/μ (entries in
// [−1, 1], one of them ±1 unless w is below the floor), s = √max(u·u, 1)
// with u·u ∈ [1, n], and v_{j+1} = 2^τ·u/s. The floor 2^-14 (fp16's smallest
// normal number) only matters for a w that is rounding noise: it gives
// v_{j+1} = 0 instead of 0/0 for w = 0, and h_{j+1,j}·v_{j+1} = w holds
// whatever μ is, so the host's breakdown test sees the tiny h_{j+1,j}.
func gmresGraph(a Operator, n, m, sigma, tau int) (*dataflow.Graph, error) {
	g := dataflow.New()
	v := make([]dataflow.Value, m)
	v[0] = g.Input("v", dataflow.Shape{1, n})
	unscale2 := g.Scalar(math.Ldexp(1, -2*tau)) // 2^{2τ}·h → h
	scale := g.Scalar(math.Ldexp(1, tau))
	floor := g.Scalar(0x1p-14)
	one := g.Scalar(1)
	rows := make([]dataflow.Value, m)
	for j := range m {
		w := a.DeviceApply(g, v[j], sigma)
		if j == 0 && g.Err() == nil && !w.Shape().Equal(dataflow.Shape{1, n}) {
			return nil, fmt.Errorf("krylov: GMRES: operator's device apply returned shape %v, want [1 %d]: %w", w.Shape(), n, ErrShape)
		}
		col := make([]dataflow.Value, 0, m+1)
		for i := 0; i <= j; i++ {
			p := g.MatMul(w, v[i], false, true) // [1, 1]: 2^{2τ}·h_ij
			col = append(col, p)
			w = g.Sub(w, g.Mul(g.Mul(p, unscale2), v[i]))
		}
		mu := g.Maximum(g.ReduceMax(g.Abs(w), []int{1}, true), floor) // [1, 1]
		u := g.Div(w, mu)
		sn := g.Sqrt(g.Maximum(g.MatMul(u, u, false, true), one))
		col = append(col, mu, sn)
		if j < m-1 {
			col = append(col, g.Const(fmt.Sprintf("hess_zeros_%d", j), dataflow.Shape{1, m - 1 - j}, make([]float64, m-1-j)))
			v[j+1] = g.Mul(u, g.Div(scale, sn))
		}
		rows[j] = concatTree(g, 1, col)
	}
	g.Output("hess", concatTree(g, 0, rows))
	if m > 1 { // v₁ is the input: the host has it
		g.Output("basis", concatTree(g, 0, v[1:]))
	}
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("krylov: GMRES graph: %w", err)
	}
	return g, nil
}

// concatTree concatenates xs along axis with two-input concats in a
// balanced tree: some ANE compile routes take only two inputs per concat
// (ANE_FACTS §2).
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

// weightedNorm is ‖diag(w)·x‖₂ (‖x‖₂ for nil w).
func weightedNorm(w, x []float64) float64 {
	if w == nil {
		return norm2(x)
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = w[i] * v
	}
	return norm2(y)
}
