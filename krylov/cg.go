package krylov

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// CG solves A·x = b for a symmetric positive definite operator A by the
// conjugate gradient method (Hestenes and Stiefel 1952), run on the device
// in fp16 and refined on the host to float64 accuracy.
//
// Each dispatch runs Settings.Unroll CG iterations in one device program, in
// a normalized form that keeps every fp16 quantity near 1: the residual and
// search direction enter scaled to a fixed norm, the operator is scaled by a
// power of two, and the device returns the correction d it accumulated and
// the last search direction it used. The host then adds the correction to x
// in float64, recomputes the true residual r = b − A·x in float64, and
// continues CG from it rather than restarting: the next search direction is
// made A-conjugate to the device's last one in float64 ("reliable updates":
// Sleijpen and van der Vorst 1996; van der Vorst and Ye 2000; Clark et al.
// 2010). This keeps the iteration count close to float64 CG's, where
// restarting at every dispatch costs two to three times as many. A
// dispatch that solves the system outright (A a multiple of I, say) leaves
// a zero direction behind: that is convergence, and CG reports it so.
//
// With Precision Compensated (or Float64) a dense A, or a stencil whose
// scaled coefficients are fp16 numbers, is applied from limb digits, so
// that A·p is known to about twice fp16's precision; the device returns
// every search direction with its image A·p, and the host keeps the last
// 128 directions and takes the A-norm-optimal step over all of them in
// float64. The default Unroll is then 16. This reaches Tol where
// κ(A)·2⁻¹¹ ≳ 1 stops FP16 mode; at κ = 1e6 it needs about twice float64
// CG's iterations, so set MaxDispatches accordingly.
//
// CG uses Tol, Unroll (1 … MaxUnroll), MaxDispatches, Precond, Precision,
// X0, Device and Trace; it ignores Restart. It stops when the host's
// relative residual reaches Tol (Converged, nil error). Otherwise it
// returns, with an error wrapping ErrNotConverged, the best iterate it met
// (never one worse than x = 0): when MaxDispatches is spent, the residual
// stagnates or diverges, or becomes NaN. Errors: ErrShape and ErrInput for
// bad input (lengths, NaN or Inf in b or X0, settings out of range, a
// NormInf() that is NaN, infinite or negative, an initial residual
// b − A·X0 that is not finite); ErrNotSPD for a zero operator, a negative
// diagonal entry or a direction of negative curvature (pᵀAp < 0);
// ErrUnsupported for a problem past the device's limits or an operator
// without a compensated form. b = 0 gives x = 0 at once; b of any finite
// magnitude is first scaled by a power of two, so ‖b‖ = 1e-300 solves as
// ‖b‖ = 1 does.
func CG(a Operator, b []float64, s *Settings) (Result, error) {
	set := s.withDefaults()
	if err := checkVectors("CG", a, b, set); err != nil {
		return Result{}, err
	}
	plan, err := planCG(a, set)
	if err != nil {
		return Result{}, err
	}
	return solve(a, b, set, plan.loop)
}

// MaxUnroll bounds Settings.Unroll: a CG program grows linearly with it
// (about 50 device ops per iteration) and its build time and memory with
// it; past a few hundred iterations fp16 also loses more within a dispatch
// than a longer program saves in dispatches.
const MaxUnroll = 256

// cgPlan is what CG derives from the operator and the settings before it
// runs: the operator the device applies and its scalings.
type cgPlan struct {
	dop         Operator  // S·A·S for a badly scaled dense A, else A
	sdiag       []float64 // S, or nil
	sigma       int       // ‖2^σ·dop‖∞ in [½, 1)
	compensated bool
	zeroDiag    int // index of a zero diagonal entry of A, or −1
	set         Settings
}

func planCG(a Operator, set Settings) (*cgPlan, error) {
	if err := checkCommon("CG", a, set); err != nil {
		return nil, err
	}
	if set.Unroll < 0 || set.Unroll > MaxUnroll {
		return nil, fmt.Errorf("krylov: CG: Unroll %d is out of range: use 1 … %d iterations per dispatch (0 for the default %d): %w", set.Unroll, MaxUnroll, DefaultUnroll, ErrInput)
	}
	norm, err := checkNorm("CG", a)
	if err != nil {
		return nil, err
	}
	if norm == 0 {
		return nil, fmt.Errorf("krylov: CG: the operator is zero (NormInf() = 0): %w", ErrNotSPD)
	}
	n := a.Dims()
	plan := &cgPlan{dop: a, zeroDiag: -1, set: set}
	plan.compensated, _ = isCompensated(set.Precision)
	// An SPD matrix has a positive diagonal: a negative (or NaN) entry
	// proves A indefinite before any dispatch. A zero entry makes a
	// semidefinite A singular; CG then runs and reports what it reached.
	if d := a.Diagonal(); len(d) == n {
		for i, v := range d {
			if v < 0 || math.IsNaN(v) {
				return nil, fmt.Errorf("krylov: CG needs a symmetric positive definite operator; diagonal entry %d is %g: %w", i, v, ErrNotSPD)
			}
			if v == 0 && plan.zeroDiag < 0 {
				plan.zeroDiag = i
			}
		}
	}
	// The device solves for corrections in scaled coordinates y = S⁻¹x with
	// the operator S·A·S (S a power-of-two diagonal, exact), so that a
	// badly scaled matrix keeps an accurate fp16 image; without scaling S = I.
	if set.Precond == nil {
		if sop, sd := symmetricScaling(a); sop != nil {
			plan.dop, plan.sdiag = sop, sd
		}
	}
	plan.sigma = pow2Exp(plan.dop.NormInf())
	if plan.compensated {
		if err := compensatedSupported(plan.dop, plan.sigma); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// program returns the compiled CG program for the plan on dev.
func (p *cgPlan) program(dev shim.Device) (*compiled, error) {
	key := programKey{solver: "cg", dev: dev, op: p.dop, pre: p.set.Precond, steps: p.set.Unroll, sigma: p.sigma, compensated: p.compensated}
	return programs.get(key, fmt.Sprintf("CG program for n = %d", p.dop.Dims()), p.graph)
}

// graph builds the plan's CG program.
func (p *cgPlan) graph() (*dataflow.Graph, error) {
	apply, err := deviceApplier(p.dop, p.sigma, p.compensated)
	if err != nil {
		return nil, err
	}
	return cgGraph(p.dop.Dims(), apply, p.set.Precond, p.set.Unroll, p.compensated)
}

// CGProgram returns the program one dispatch of CG(a, b, s) runs, as CG
// builds it (for s.Device's target; s may be nil), for inspection and
// pricing: lower.Estimate(p, "ane-m5") models its engine time. A later CG
// with the same operator and settings reuses it.
func CGProgram(a Operator, s *Settings) (*lower.Program, error) {
	set := s.withDefaults()
	plan, err := planCG(a, set)
	if err != nil {
		return nil, err
	}
	dev, err := device(set)
	if err != nil {
		return nil, err
	}
	exe, err := plan.program(dev)
	if err != nil {
		return nil, err
	}
	return exe.Program(), nil
}

// loop is CG's dispatch loop (see CG).
func (p *cgPlan) loop(r *run) error {
	set, res, a, b := p.set, r.res, r.a, r.b
	n := a.Dims()

	rv := make([]float64, n)
	ry := make([]float64, n) // S·r: the residual in scaled coordinates
	dy := make([]float64, n) // a correction in scaled coordinates
	z := make([]float64, n)
	w := make([]float64, n)
	dir := make([]float64, n)
	pU := make([]float64, n)
	rIn := make([]float32, n)
	pIn := make([]float32, n)

	if _, err := r.initialResidual(rv, "CG"); err != nil {
		return err
	}
	if res.Residual <= set.Tol { // X0 solves it: no program needed
		res.Converged = true
		return nil
	}
	t0 := time.Now()
	exe, err := p.program(r.dev)
	res.Build += time.Since(t0)
	if err != nil {
		return err
	}
	names := outputNames(exe)
	rnormY := scaleBy(ry, p.sdiag, rv)
	// The first direction is the preconditioned residual.
	applyPrecond(z, set.Precond, ry)
	copy(dir, z)

	nu := vectorNorm(n)
	tau := 1.0 // scale of the device's correction accumulator, adapted to keep it in range
	kept := &galerkin{max: galerkinVectors}
	best, sinceBest := res.Residual, 0
	// CG's residual is not monotone: on ill-conditioned problems it can
	// plateau for hundreds of iterations before falling again, so the
	// stagnation window counts inner iterations, not dispatches.
	window := max(stagnationDispatches, (stagnationIterations+set.Unroll-1)/set.Unroll)
	var dirU []float32 // the device's last direction, after a dispatch
	for {
		// Convergence first: a dispatch that solves the system exactly
		// leaves a zero direction behind, which is no breakdown.
		if res.Residual <= set.Tol {
			res.Converged = true
			return nil
		}
		if res.Dispatches >= set.MaxDispatches {
			return fmt.Errorf("krylov: CG reached relative residual %.3g after %d dispatches (MaxDispatches), Tol %.3g%s: %w", res.Residual, res.Dispatches, set.Tol, p.notes(r), ErrNotConverged)
		}
		if dirU != nil {
			if err := p.nextDirection(dir, z, w, pU, dirU, ry, kept, res.Dispatches); err != nil {
				return err
			}
		}
		pnorm := norm2(dir)
		if !(pnorm > 0) || !(rnormY > 0) {
			return fmt.Errorf("krylov: CG: the residual (%g) or search direction (%g) vanished in scaled coordinates at relative residual %.3g%s: %w", rnormY, pnorm, res.Residual, p.notes(r), ErrNotConverged)
		}
		toFloat32(rIn, ry, nu/rnormY)
		toFloat32(pIn, dir, nu/pnorm)

		var out [][]float32
		for {
			td := time.Now()
			out, err = exe.Run([][]float32{rIn, pIn, {float32(tau)}})
			res.Device += time.Since(td)
			res.charge(exe)
			// Only the accumulated correction depends on τ: in Compensated
			// mode (no correction on the device) an overflow is final.
			if err == nil || !errors.Is(err, shim.ErrRange) || p.compensated || tau <= tauMin {
				break
			}
			tau = max(tau/256, tauMin) // the correction overflowed fp16: rerun with a smaller scale
			res.Retries++
		}
		o := outputs{names, out}
		pqMin := o.get("pq_min")
		negative := len(pqMin) == 1 && float64(pqMin[0]) < -notSPDSlack*nu*nu
		if negative && err != nil {
			// Negative curvature: with an indefinite operator the correction
			// may also have overflowed; the curvature is the diagnosis.
			return fmt.Errorf("krylov: CG found a direction with pᵀAp = %.3g < 0 (scaled) in dispatch %d: %w", pqMin[0], res.Dispatches+1, ErrNotSPD)
		}
		if errors.Is(err, shim.ErrRange) {
			return fmt.Errorf("krylov: CG dispatch %d overflowed fp16 even with its correction scaled by %g; the operator's fp16 image may be indefinite or too far from A (κ·2⁻¹¹ ≳ 1)%s%s: %w",
				res.Dispatches+1, tau, p.hint(), p.notes(r), errors.Join(ErrNotConverged, err))
		}
		if err != nil {
			return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches+1, err)
		}
		res.Dispatches++
		res.Iterations += set.Unroll
		pSent := roundFP16(pIn) // the first direction, as the device read it
		dirU = o.get("p_last")
		if dirU == nil {
			dirU = pSent
		}

		dmax := 0.0
		clear(dy)
		if p.compensated {
			// The device returned its directions P and A·P; the host takes the
			// A-norm-optimal step in the span of these and recent dispatches'.
			dirs := append(pSent, o.get("dirs")...)
			if err := kept.addDispatch(dirs, o.get("adirs"), o.get("adirs_lo"), math.Ldexp(1, -p.sigma), n); err != nil {
				return err
			}
			kept.step(dy, ry)
		} else {
			scale := math.Ldexp(rnormY/(nu*tau), p.sigma)
			d, dLo := o.get("d"), o.get("d_lo")
			for i, v := range d {
				dy[i] = scale * (float64(v) + float64(dLo[i]))
				dmax = math.Max(dmax, math.Abs(float64(v)))
			}
		}
		for i, v := range dy { // x += S·dy
			if p.sdiag != nil {
				v *= p.sdiag[i]
			}
			res.X[i] += v
		}
		rnorm := residual(rv, a, res.X, b)
		rnormY = scaleBy(ry, p.sdiag, rv)
		r.record(rnorm / r.bnorm)
		if res.Residual <= set.Tol {
			continue // converged: the top of the loop says so
		}
		if negative {
			return fmt.Errorf("krylov: CG found a direction with pᵀAp = %.3g < 0 (scaled) in dispatch %d: %w", pqMin[0], res.Dispatches, ErrNotSPD)
		}
		if !finite(res.Residual) {
			return fmt.Errorf("krylov: CG residual became %g in dispatch %d (the operator's MulVecTo returned NaN or Inf, or x overflowed)%s: %w", res.Residual, res.Dispatches, p.notes(r), ErrNotConverged)
		}
		if res.Residual > divergence*best {
			return fmt.Errorf("krylov: CG diverged: relative residual %.3g after %d dispatches, best %.3g; the operator's fp16 image may be too far from A (κ·2⁻¹¹ ≳ 1)%s%s: %w",
				res.Residual, res.Dispatches, best, p.hint(), p.notes(r), ErrNotConverged)
		}
		if res.Residual < best/2 {
			best, sinceBest = res.Residual, 0
		} else if sinceBest++; sinceBest >= window {
			return fmt.Errorf("krylov: CG stagnated at relative residual %.3g (no halving in %d dispatches), Tol %.3g%s: %w", res.Residual, window, set.Tol, p.notes(r), ErrNotConverged)
		}
		// Keep the accumulator's peak near 2^10: far from overflow, and its
		// small late increments far from fp16's subnormals.
		if dmax > 0 {
			tau = min(1, max(tauMin, tau*math.Exp2(math.Floor(math.Log2(1024/dmax)))))
		}
	}
}

// nextDirection continues CG from the host's residual ("reliable update"):
// the new direction is the preconditioned residual made A-conjugate, in
// float64, to the last direction the device used (or, in Compensated mode,
// to every kept direction). A zero direction (the device's iteration
// converged inside the dispatch) or one of zero curvature restarts CG from
// the residual; negative curvature proves A indefinite.
func (p *cgPlan) nextDirection(dir, z, w, pU []float64, dirU []float32, ry []float64, kept *galerkin, dispatch int) error {
	// The direction is scaled by 2^σ before A is applied, so that the
	// curvature is near 1 whatever the scale of A (no under- or overflow);
	// β and the new direction do not depend on that scale.
	zero := true
	for i, v := range dirU {
		pU[i] = math.Ldexp(float64(v), p.sigma)
		zero = zero && v == 0
	}
	applyPrecond(z, p.set.Precond, ry)
	if p.compensated {
		kept.conjugate(dir, z) // A-conjugate to every kept direction
		// Nothing left once z lies in the kept directions' span (n small,
		// say): continue from z itself, and the Galerkin step over the
		// span refines with the float64 residual.
		if norm2(dir) <= compensatedSpanTol*norm2(z) {
			copy(dir, z)
		}
		return nil
	}
	if zero {
		copy(dir, z)
		return nil
	}
	p.dop.MulVecTo(w, pU)
	pw := dot(pU, w)
	switch {
	case math.IsNaN(pw) || math.IsInf(pw, 0):
		return fmt.Errorf("krylov: CG: pᵀAp is %g after dispatch %d: the operator's MulVecTo returned NaN or Inf: %w", pw, dispatch, ErrNotConverged)
	case pw < 0:
		return fmt.Errorf("krylov: CG direction with pᵀAp = %.3g < 0 after dispatch %d: %w", pw, dispatch, ErrNotSPD)
	case pw == 0: // a direction in A's null space: restart from the residual
		copy(dir, z)
		return nil
	}
	beta := dot(z, w) / pw
	for i := range dir {
		dir[i] = z[i] - beta*pU[i]
	}
	return nil
}

// hint suggests Compensated mode where it exists for the operator and the
// solve is not already using it.
func (p *cgPlan) hint() string {
	if p.compensated || compensatedSupported(p.dop, p.sigma) != nil {
		return ""
	}
	return "; try Precision Compensated"
}

// notes adds what a failed solve returns, and a zero diagonal entry.
func (p *cgPlan) notes(r *run) string {
	s := ""
	if p.zeroDiag >= 0 {
		s = fmt.Sprintf("; diagonal entry %d is 0, so a semidefinite A is singular", p.zeroDiag)
	}
	if !(r.res.Residual <= r.best.res) {
		s += fmt.Sprintf("; x is the best iterate met (relative residual %.3g)", r.best.res)
	}
	return s
}

const (
	// tauMin is the smallest scale of the device's correction accumulator:
	// τ enters the device, and fp16's smallest normal number is 2⁻¹⁴.
	tauMin = 0x1p-14
	// compensatedSpanTol: a conjugated direction this small relative to the
	// residual it came from is the kept directions' rounding, not a new
	// direction (the images carry relative errors near 1e-7).
	compensatedSpanTol = 1e-6
	// compensatedLimbs is the limb count of A in Compensated mode: the
	// truncation error, about 2^(−5·6) ≈ 1e-9 of ‖A‖‖p‖, keeps refinement
	// contracting up to κ(A) ≈ 1e7.
	compensatedLimbs = 6
	// A solve ends as stagnated after max(stagnationDispatches,
	// stagnationIterations/Unroll) dispatches without halving the residual.
	stagnationDispatches = 8
	stagnationIterations = 2048
	// divergence: a residual this many times the best one seen ends a solve.
	divergence = 1e4
	// notSPDSlack: the device's pᵀAp for ‖p‖ = ν and ‖A‖∞ ≤ 1 carries an
	// fp16 error of a few units of 2⁻¹¹·ν²; a value below −2⁻⁶·ν² is a
	// direction of negative curvature, not rounding.
	notSPDSlack = 0x1p-6
)

func applyPrecond(dst []float64, m Preconditioner, r []float64) {
	if m == nil {
		copy(dst, r)
		return
	}
	m.ApplyTo(dst, r)
}

// cgProgram returns the compiled CG program for the operator as the device
// applies it (no scaling), for drivers that run single dispatches.
func cgProgram(dev shim.Device, a Operator, m Preconditioner, unroll, sigma int, compensated bool) (*compiled, error) {
	p := &cgPlan{dop: a, sigma: sigma, compensated: compensated, zeroDiag: -1, set: Settings{Precond: m, Unroll: unroll}}
	return p.program(dev)
}

// twoSum returns s = fl(a + b) and the rounding error e with a + b = s + e
// exactly (Knuth's TwoSum, TAOCP vol. 2 §4.2.2): six correctly rounded
// fp16 operations, no assumption on the operands' sizes.
func twoSum(g *dataflow.Graph, a, b dataflow.Value) (s, e dataflow.Value) {
	s = g.Add(a, b)
	bb := g.Sub(s, a)
	e = g.Add(g.Sub(a, g.Sub(s, bb)), g.Sub(b, bb))
	return s, e
}

// cgGraph unrolls `unroll` CG iterations on A_s = 2^σ·A in a normalized form.
// Inputs: r (the residual) and p (the search direction), both scaled to the
// norm ν = vectorNorm(n), and tau (the correction's scale). Per iteration,
// with every vector [1, n] and every scalar [1, 1]:
//
//	q = A_s·p                       the one operator application
//	[pq, rp] = [q; r]·pᵀ            two dots in one matmul
//	γ = rp/pq;  d += τγ·p           exact line search along p; d is kept
//	                                as an unevaluated sum d + d_lo (TwoSum)
//	r̂ = (r − γq)/m, m = max|r − γq|  scale by the largest entry first
//	z = M⁻¹r̂
//	rr = r̂·r̂;  zq = q·z             (one matmul [r̂; q]·r̂ᵀ without M)
//	r = ν·r̂/√rr;  τ = τ·m·√rr/ν     keep ‖r‖ = ν, the decay in τ
//	p = ν·(z − (zq/pq)·p)/‖·‖       Hestenes–Stiefel: the new p is A-conjugate
//	                                to the old (its norm also via max-scaling)
//
// Every dot product is a matmul (the wide accumulator), never a reduce_sum.
// Outputs: d and d_lo (the accumulated correction, A_s·(d + d_lo) ≈ τ₀·r,
// to twice fp16's precision), the last p used (when unroll > 1; else it
// is the input) and the smallest pq met (negative curvature betrays an
// operator that is not SPD). With directions, the outputs are instead
// every p after the first (dirs), their images q and remainders (adirs,
// adirs_lo), the last p and the smallest pq.
func cgGraph(n int, apply applier, m Preconditioner, unroll int, directions bool) (*dataflow.Graph, error) {
	nu := vectorNorm(n)
	g := dataflow.New()
	r := g.Input("r", dataflow.Shape{1, n})
	p := g.Input("p", dataflow.Shape{1, n})
	tau := g.Input("tau", dataflow.Shape{1, 1})
	var d, dLo, pqMin dataflow.Value
	var dirs, adirs, adirsLo []dataflow.Value
	entry := func(s dataflow.Value, i, j int) dataflow.Value {
		return g.Slice(s, []int{i, j}, []int{1, 1})
	}
	// floor keeps a vanishing dot product (a converged residual, an exhausted
	// direction) from dividing by zero: the device cannot branch.
	floor := g.Scalar(0x1p-14)
	for it := range unroll {
		q, qLo := apply(g, p)
		if it == 0 {
			if err := checkApplyShape(g, q, n); err != nil {
				return nil, err
			}
		}
		s1 := g.MatMul(g.Concat(0, q, r), p, false, true)
		pq, rp := entry(s1, 0, 0), entry(s1, 1, 0)
		if it == 0 {
			pqMin = pq
		} else {
			pqMin = g.Minimum(pqMin, pq)
		}
		gamma := g.Div(rp, g.Maximum(pq, floor))
		coef := g.Mul(tau, gamma)
		if directions {
			dirs, adirs, adirsLo = append(dirs, p), append(adirs, q), append(adirsLo, qLo)
		}
		step := g.Mul(coef, p)
		switch {
		case directions:
		case it == 0:
			d = step
		case it == 1:
			d, dLo = twoSum(g, d, step)
		default:
			var e dataflow.Value
			d, e = twoSum(g, d, step)
			dLo = g.Add(dLo, e)
		}
		if it == unroll-1 {
			break // the last direction goes back to the host as it is
		}
		// The residual's 2-norm may grow within a CG step, so it is scaled by
		// its largest entry before any square is formed: entries ≤ 1, and
		// every dot product of scaled vectors is at most n ≤ 16384.
		rS, rMax := maxScale(g, g.Sub(r, g.Mul(gamma, q)))
		z := rS
		if m != nil {
			z = m.DeviceApply(g, rS)
		}
		// Dot products, sliced along rows only: a slice at a width offset
		// saturates |x| > 4094 on M1-class engines (ANE_FACTS §5).
		var rr, zq dataflow.Value
		if m == nil {
			s2 := g.MatMul(g.Concat(0, rS, q), rS, false, true) // [r̂·r̂; q·r̂]
			rr, zq = entry(s2, 0, 0), entry(s2, 1, 0)
		} else {
			rr, zq = g.MatMul(rS, rS, false, true), g.MatMul(q, z, false, true)
		}
		rr = g.Maximum(rr, floor)
		r = g.Mul(rS, g.Mul(g.Pow(rr, g.Scalar(-0.5)), g.Scalar(nu)))
		tau = g.Mul(tau, g.Mul(g.Mul(rMax, g.Sqrt(rr)), g.Scalar(1/nu)))
		// Hestenes–Stiefel: the new direction z − β·p is A-conjugate to p.
		beta := g.Div(zq, g.Maximum(pq, floor))
		pS, _ := maxScale(g, g.Sub(z, g.Mul(beta, p)))
		pp := g.Maximum(g.MatMul(pS, pS, false, true), floor)
		p = g.Mul(pS, g.Mul(g.Pow(pp, g.Scalar(-0.5)), g.Scalar(nu)))
	}
	// No output may be an input itself (an empty program): the first
	// direction, and with one iteration the last, are the host's own p.
	if directions {
		if len(dirs) > 1 {
			g.Output("dirs", concatTree(g, 0, dirs[1:]))
		}
		g.Output("adirs", concatTree(g, 0, adirs))
		g.Output("adirs_lo", concatTree(g, 0, adirsLo))
	} else {
		if !dLo.Valid() { // one iteration: no remainder (a computed zero, no constant)
			dLo = g.Sub(d, d)
		}
		g.Output("d", d)
		g.Output("d_lo", dLo)
	}
	if unroll > 1 {
		g.Output("p_last", p)
	}
	g.Output("pq_min", pqMin)
	return g, nil
}

// outputs names a program's outputs.
type outputs struct {
	idx map[string]int
	out [][]float32
}

func outputNames(exe shim.Executable) map[string]int {
	idx := map[string]int{}
	for i, o := range exe.Program().Outputs {
		idx[o.Name] = i
	}
	return idx
}

// get returns the named output, or nil if the program has none.
func (o outputs) get(name string) []float32 {
	if i, ok := o.idx[name]; ok && i < len(o.out) {
		return o.out[i]
	}
	return nil
}

// roundFP16 returns x rounded to fp16, as the device reads it.
func roundFP16(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = fp16.Round32(v)
	}
	return y
}

// checkApplyShape reports an operator whose device apply did not return
// a [1, n] vector.
func checkApplyShape(g *dataflow.Graph, q dataflow.Value, n int) error {
	if err := g.Err(); err != nil {
		return fmt.Errorf("krylov: the operator's DeviceApply: %w", err)
	}
	if !q.Shape().Equal(dataflow.Shape{1, n}) {
		return fmt.Errorf("krylov: the operator's DeviceApply returned shape %v, want [1 %d]: %w", q.Shape(), n, ErrShape)
	}
	return nil
}

// maxScale returns v/max|v| and max|v|, floored at 2⁻¹⁴ (fp16's smallest
// normal number) so that a zero vector stays zero instead of becoming NaN;
// a vector below the floor comes back with entries below 1, not 1.
func maxScale(g *dataflow.Graph, v dataflow.Value) (scaled, peak dataflow.Value) {
	peak = g.Maximum(g.ReduceMax(g.Abs(v), []int{1}, true), g.Scalar(0x1p-14))
	return g.Div(v, peak), peak
}

// vectorNorm is the 2-norm the device's vectors are scaled to: a power of
// two near √n/2, so that entries are about ½ (far from fp16's subnormals,
// whose products would underflow) and a dot product of two such vectors,
// about n/4, stays far below 65504.
func vectorNorm(n int) float64 {
	return math.Exp2(math.Floor(math.Log2(math.Sqrt(float64(n)) / 2)))
}

// galerkin keeps recent search directions P and their images W = A·P in
// float64 on the host. In Compensated mode every device direction joins
// it; the iterate takes the A-norm-optimal step in their span,
// x += P·(PᵀAP)⁺·Pᵀr, and the next direction is made A-conjugate to all of
// them, p = z − P·(PᵀAP)⁺·Wᵀz. The fp16 iteration then only has to explore:
// the float64 host restores the conjugacy that fp16 arithmetic loses. The
// pseudo-inverse drops Gram eigenvalues below galerkinDrop of the largest:
// directions from fp16 arithmetic can be nearly dependent, and their images
// carry errors near 1e-9 of ‖A‖‖p‖.
type galerkin struct {
	p, w [][]float64
	max  int
	vecs *mat.Dense
	inv  []float64 // 1/λ of PᵀAP, or 0 for dropped eigenvalues
}

const (
	// galerkinVectors bounds the directions kept; the oldest leave first.
	galerkinVectors = 128
	galerkinDrop    = 1e-10
)

// addDispatch adds a dispatch's directions P and their images A·P =
// scale·(Q + Q_lo), all [u, n] row-major, and refactors the Gram matrix.
func (g *galerkin) addDispatch(dirs, adirs, adirsLo []float32, scale float64, n int) error {
	for k := range len(dirs) / n {
		p, w := make([]float64, n), make([]float64, n)
		for i := range n {
			p[i] = float64(dirs[k*n+i])
			w[i] = scale * (float64(adirs[k*n+i]) + float64(adirsLo[k*n+i]))
		}
		g.p, g.w = append(g.p, p), append(g.w, w)
	}
	if extra := len(g.p) - g.max; extra > 0 {
		g.p, g.w = g.p[extra:], g.w[extra:]
	}
	m := len(g.p)
	gram := mat.NewSymDense(m, nil)
	for i := range m {
		for j := i; j < m; j++ {
			gram.SetSym(i, j, (dot(g.p[i], g.w[j])+dot(g.p[j], g.w[i]))/2)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(gram, true) {
		return fmt.Errorf("krylov: the eigendecomposition of the directions' Gram matrix failed: %w", ErrNotConverged)
	}
	vals := eig.Values(nil)
	g.vecs = mat.NewDense(m, m, nil)
	eig.VectorsTo(g.vecs)
	top := 0.0
	for _, v := range vals {
		top = math.Max(top, v)
	}
	g.inv = make([]float64, m)
	for i, v := range vals {
		if v > galerkinDrop*top {
			g.inv[i] = 1 / v
		}
	}
	return nil
}

// solve returns (PᵀAP)⁺·rhs.
func (g *galerkin) solve(rhs []float64) []float64 {
	m := len(rhs)
	t := make([]float64, m)
	for k := range m {
		s := 0.0
		for i := range m {
			s += g.vecs.At(i, k) * rhs[i]
		}
		t[k] = s * g.inv[k]
	}
	y := make([]float64, m)
	for i := range m {
		s := 0.0
		for k := range m {
			s += g.vecs.At(i, k) * t[k]
		}
		y[i] = s
	}
	return y
}

// step adds P·(PᵀAP)⁺·Pᵀr to x: the A-norm-optimal correction in span(P).
func (g *galerkin) step(x, r []float64) {
	rhs := make([]float64, len(g.p))
	for k, pk := range g.p {
		rhs[k] = dot(pk, r)
	}
	for k, yk := range g.solve(rhs) {
		for i, v := range g.p[k] {
			x[i] += yk * v
		}
	}
}

// conjugate sets p = z − P·(PᵀAP)⁺·Wᵀz, A-conjugate to span(P).
func (g *galerkin) conjugate(p, z []float64) {
	rhs := make([]float64, len(g.p))
	for k, wk := range g.w {
		rhs[k] = dot(wk, z)
	}
	copy(p, z)
	for k, tk := range g.solve(rhs) {
		for i, v := range g.p[k] {
			p[i] -= tk * v
		}
	}
}

// scaleBy sets dst = S·x (dst = x when s is nil) and returns ‖dst‖₂.
func scaleBy(dst, s, x []float64) float64 {
	if s == nil {
		copy(dst, x)
	} else {
		for i, v := range x {
			dst[i] = s[i] * v
		}
	}
	return norm2(dst)
}
