package krylov

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// CG solves A·x = b for a symmetric positive definite operator A by the
// conjugate gradient method (Hestenes and Stiefel 1952), run on the device
// in fp16 and refined on the host to float64 accuracy.
//
// Each dispatch runs Settings.Unroll CG iterations in one device program, in
// a normalized form that keeps every fp16 quantity near 1 (see cgGraph): the
// residual and search direction enter as unit vectors, the operator is
// scaled by a power of two, and the device returns the correction d it
// accumulated and the last search direction it used. The host then adds the
// correction to x in float64, recomputes the true residual r = b − A·x in
// float64, and continues CG from it rather than restarting: the next search
// direction is made A-conjugate to the device's last one in float64 ("reliable
// updates": Sleijpen and van der Vorst 1996; van der Vorst and Ye 2000;
// Clark et al. 2010). This keeps the iteration count close to float64 CG's,
// where restarting at every dispatch costs two to three times as many.
//
// The solve stops when the host's relative residual reaches Settings.Tol
// (Converged), or with ErrNotConverged when MaxDispatches is spent or the
// residual stagnates. A search direction with pᵀAp ≤ 0 is reported as
// ErrNotSPD. b = 0 gives x = 0 at once.
func CG(a Operator, b []float64, s *Settings) (Result, error) {
	set := s.withDefaults()
	if err := checkSystem(a, b, set); err != nil {
		return Result{}, err
	}
	compensated := false
	switch set.Precision {
	case precision.FP16:
	case precision.Compensated, precision.Float64:
		compensated = true
	default:
		return Result{}, fmt.Errorf("krylov: unknown precision mode %v: %w", set.Precision, ErrInput)
	}
	start := time.Now()
	n := a.Dims()
	res := Result{X: make([]float64, n)}
	if set.X0 != nil {
		copy(res.X, set.X0)
	}
	bnorm := norm2(b)
	if bnorm == 0 {
		clear(res.X)
		res.Converged = true
		res.History = []float64{0}
		return res, nil
	}
	dev, err := device(set)
	if err != nil {
		return res, err
	}
	if a.NormInf() == 0 {
		return res, fmt.Errorf("krylov: the operator is zero: %w", ErrNotSPD)
	}
	sigma := pow2Exp(a.NormInf()) // ‖2^σ·A‖∞ in [½, 1)

	t0 := time.Now()
	exe, err := cgProgram(dev, a, set.Precond, set.Unroll, sigma, compensated)
	res.Build = time.Since(t0)
	if err != nil {
		return res, err
	}

	r := make([]float64, n)
	z := make([]float64, n)
	w := make([]float64, n)
	p := make([]float64, n)
	pU := make([]float64, n)
	rIn := make([]float32, n)
	pIn := make([]float32, n)

	rnorm := residual(r, a, res.X, b)
	res.Residual = rnorm / bnorm
	res.History = append(res.History, res.Residual)
	// The first direction is the preconditioned residual.
	applyPrecond(z, set.Precond, r)
	copy(p, z)

	nu := vectorNorm(n)
	tau := 1.0 // scale of the device's correction accumulator, adapted to keep it in range
	best, sinceBest := res.Residual, 0
	// CG's residual is not monotone: on ill-conditioned problems it can
	// plateau for hundreds of iterations before falling again, so the
	// stagnation window counts inner iterations, not dispatches.
	window := max(stagnationDispatches, (stagnationIterations+set.Unroll-1)/set.Unroll)
	for res.Residual > set.Tol {
		if res.Dispatches >= set.MaxDispatches {
			return res, fmt.Errorf("krylov: CG reached relative residual %.3g after %d dispatches (MaxDispatches), Tol %.3g: %w", res.Residual, res.Dispatches, set.Tol, ErrNotConverged)
		}
		th := time.Now()
		toFloat32(rIn, r, nu/rnorm)
		toFloat32(pIn, p, nu/norm2(p))
		res.Host += time.Since(th)

		var out [][]float32
		for {
			td := time.Now()
			out, err = exe.Run([][]float32{rIn, pIn, {float32(tau)}})
			res.Device += time.Since(td)
			if err == nil || !errors.Is(err, shim.ErrRange) || tau < 0x1p-20 {
				break
			}
			tau /= 256 // the correction overflowed fp16: rerun with a smaller scale
			res.Retries++
		}
		if len(out) == 5 && len(out[4]) == 1 && float64(out[4][0]) < -notSPDSlack {
			// Negative curvature: with an indefinite operator the correction
			// may also have overflowed; the curvature is the diagnosis.
			return res, fmt.Errorf("krylov: CG found a direction with pᵀAp = %.3g < 0 (scaled) in dispatch %d: %w", out[4][0], res.Dispatches+1, ErrNotSPD)
		}
		if errors.Is(err, shim.ErrRange) {
			return res, fmt.Errorf("krylov: CG dispatch %d overflowed fp16 even with its correction scaled by %g; the operator's fp16 image may be indefinite or too far from A (κ·2⁻¹¹ ≳ 1)%s: %w",
				res.Dispatches+1, tau, compensatedHint(compensated), errors.Join(ErrNotConverged, err))
		}
		if err != nil {
			return res, fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches+1, err)
		}
		res.Dispatches++
		res.Iterations += set.Unroll
		dirU, pqMin := out[2], float64(out[4][0])
		if pqMin < -notSPDSlack {
			return res, fmt.Errorf("krylov: CG found a direction with pᵀAp = %.3g < 0 (scaled) in dispatch %d: %w", pqMin, res.Dispatches, ErrNotSPD)
		}

		th = time.Now()
		scale := math.Ldexp(rnorm/(nu*tau), sigma)
		dmax := 0.0
		if compensated {
			// d = Σ_k c_k·p_k, formed exactly in float64 from the directions
			// and coefficients the device used.
			dirs, coef := out[0], out[1]
			for k, c := range coef {
				ck := scale * float64(c)
				for i, v := range dirs[k*n : (k+1)*n] {
					res.X[i] += ck * float64(v)
				}
				dmax = math.Max(dmax, math.Abs(float64(c))*vectorNorm(n))
			}
		} else {
			d, dLo := out[0], out[1]
			for i, v := range d {
				res.X[i] += scale * (float64(v) + float64(dLo[i]))
				dmax = math.Max(dmax, math.Abs(float64(v)))
			}
		}
		rnorm = residual(r, a, res.X, b)
		res.Residual = rnorm / bnorm
		res.History = append(res.History, res.Residual)

		// Reliable update: continue CG from the true residual with a direction
		// A-conjugate (in float64) to the last one the device used.
		for i, v := range dirU {
			pU[i] = float64(v)
		}
		a.MulVecTo(w, pU)
		pw := dot(pU, w)
		if !(pw > 0) {
			return res, fmt.Errorf("krylov: CG direction with pᵀAp = %.3g ≤ 0 after dispatch %d: %w", pw, res.Dispatches, ErrNotSPD)
		}
		applyPrecond(z, set.Precond, r)
		beta := dot(z, w) / pw
		for i := range p {
			p[i] = z[i] - beta*pU[i]
		}
		// Keep the accumulator's peak near 2^10: far from overflow, and its
		// small late increments far from fp16's subnormals.
		if dmax > 0 {
			tau = math.Min(1, tau*math.Exp2(math.Floor(math.Log2(1024/dmax))))
		}
		res.Host += time.Since(th)

		if set.Trace != nil {
			set.Trace(Step{Dispatch: res.Dispatches, Iterations: res.Iterations, Residual: res.Residual, Elapsed: time.Since(start)})
		}
		if math.IsNaN(res.Residual) {
			return res, fmt.Errorf("krylov: CG residual became NaN in dispatch %d: %w", res.Dispatches, ErrNotConverged)
		}
		if res.Residual > divergence*best {
			return res, fmt.Errorf("krylov: CG diverged: relative residual %.3g after %d dispatches, best %.3g; the operator's fp16 image may be too far from A (κ·2⁻¹¹ ≳ 1)%s: %w",
				res.Residual, res.Dispatches, best, compensatedHint(compensated), ErrNotConverged)
		}
		if res.Residual < best/2 {
			best, sinceBest = res.Residual, 0
		} else if sinceBest++; sinceBest >= window {
			return res, fmt.Errorf("krylov: CG stagnated at relative residual %.3g (no halving in %d dispatches), Tol %.3g: %w", res.Residual, window, set.Tol, ErrNotConverged)
		}
	}
	res.Converged = true
	return res, nil
}

const (
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
	// notSPDSlack: the device's pᵀAp for a unit p and ‖A‖∞ ≤ 1 carries an
	// fp16 error of a few units of 2⁻¹¹; a value below −2⁻⁶ is a direction
	// of negative curvature, not rounding.
	notSPDSlack = 0x1p-6
)

func compensatedHint(compensated bool) string {
	if compensated {
		return ""
	}
	return ": try Precision Compensated"
}

func applyPrecond(dst []float64, m Preconditioner, r []float64) {
	if m == nil {
		copy(dst, r)
		return
	}
	m.ApplyTo(dst, r)
}

type cgKey struct {
	dev         shim.Device
	op          Operator
	pre         Preconditioner
	unroll      int
	sigma       int
	compensated bool
}

// cgPrograms keeps one compiled program per operator, preconditioner,
// unroll and device, so repeated solves neither rebuild nor relower.
var cgPrograms sync.Map // cgKey → shim.Executable

func cgProgram(dev shim.Device, a Operator, m Preconditioner, unroll, sigma int, compensated bool) (shim.Executable, error) {
	key := cgKey{dev, a, m, unroll, sigma, compensated}
	if exe, ok := cgPrograms.Load(key); ok {
		return exe.(shim.Executable), nil
	}
	n := a.Dims()
	apply := func(g *dataflow.Graph, p dataflow.Value) dataflow.Value { return a.DeviceApply(g, p, sigma) }
	if compensated {
		switch op := a.(type) {
		case *denseOp:
			c, err := newCompensatedDense(op, sigma, compensatedLimbs)
			if err != nil {
				return nil, err
			}
			nu := vectorNorm(n)
			apply = func(g *dataflow.Graph, p dataflow.Value) dataflow.Value { return c.apply(g, p, nu) }
		case *stencilOp:
			if !op.exactInFP16(sigma) {
				return nil, fmt.Errorf("krylov: Compensated mode needs stencil coefficients exact in fp16 (scaled by 2^%d): %w", sigma, ErrUnsupported)
			}
		default:
			return nil, fmt.Errorf("krylov: Compensated mode is not available for operator %T: %w", a, ErrUnsupported)
		}
	}
	g := cgGraph(n, apply, m, unroll, compensated)
	exe, err := shim.Build(dev, g)
	if err != nil {
		if errors.Is(err, lower.ErrUnsupported) {
			return nil, fmt.Errorf("krylov: CG program for n = %d: %w", a.Dims(), errors.Join(ErrUnsupported, err))
		}
		return nil, fmt.Errorf("krylov: CG program: %w", err)
	}
	cgPrograms.Store(key, exe)
	return exe, nil
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
//	[[rr, ·], [·, zq]] = [r̂; q]·[r̂; z]ᵀ
//	r = ν·r̂/√rr;  τ = τ·m·√rr/ν     keep ‖r‖ = ν, the decay in τ
//	p = ν·(z − (zq/pq)·p)/‖·‖       Hestenes–Stiefel: the new p is A-conjugate
//	                                to the old (its norm also via max-scaling)
//
// Every dot product is a matmul (the wide accumulator), never a reduce_sum.
// Outputs: d and d_lo (the accumulated correction, A_s·(d + d_lo) ≈ τ₀·r,
// to twice fp16's precision), the last p used,
// τ (the recursive residual's norm relative to the input's) and the smallest
// pq met (negative curvature betrays an operator that is not SPD).
func cgGraph(n int, apply func(*dataflow.Graph, dataflow.Value) dataflow.Value, m Preconditioner, unroll int, directions bool) *dataflow.Graph {
	nu := vectorNorm(n)
	g := dataflow.New()
	r := g.Input("r", dataflow.Shape{1, n})
	p := g.Input("p", dataflow.Shape{1, n})
	tau := g.Input("tau", dataflow.Shape{1, 1})
	var d, dLo, pqMin dataflow.Value
	var dirs, coefs []dataflow.Value
	entry := func(s dataflow.Value, i, j int) dataflow.Value {
		return g.Slice(s, []int{i, j}, []int{1, 1})
	}
	// floor keeps a vanishing dot product (a converged residual, an exhausted
	// direction) from dividing by zero: the device cannot branch.
	floor := g.Scalar(0x1p-14)
	for it := range unroll {
		q := apply(g, p)
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
			dirs, coefs = append(dirs, p), append(coefs, coef)
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
		s2 := g.MatMul(g.Concat(0, rS, q), g.Concat(0, rS, z), false, true)
		rr, zq := g.Maximum(entry(s2, 0, 0), floor), entry(s2, 1, 1)
		r = g.Mul(rS, g.Mul(g.Pow(rr, g.Scalar(-0.5)), g.Scalar(nu)))
		tau = g.Mul(tau, g.Mul(g.Mul(rMax, g.Sqrt(rr)), g.Scalar(1/nu)))
		// Hestenes–Stiefel: the new direction z − β·p is A-conjugate to p.
		beta := g.Div(zq, g.Maximum(pq, floor))
		pS, _ := maxScale(g, g.Sub(z, g.Mul(beta, p)))
		pp := g.Maximum(g.MatMul(pS, pS, false, true), floor)
		p = g.Mul(pS, g.Mul(g.Pow(pp, g.Scalar(-0.5)), g.Scalar(nu)))
	}
	if directions {
		g.Output("dirs", g.Concat(0, dirs...))
		g.Output("coef", g.Concat(1, coefs...))
	} else {
		if !dLo.Valid() {
			dLo = g.Mul(d, g.Scalar(0))
		}
		g.Output("d", d)
		g.Output("d_lo", dLo)
	}
	g.Output("p_last", p)
	g.Output("tau_out", tau)
	g.Output("pq_min", pqMin)
	return g
}

// maxScale returns v/max|v| and max|v| (floored at 2⁻²⁴ so that a zero
// vector stays zero instead of becoming NaN).
func maxScale(g *dataflow.Graph, v dataflow.Value) (scaled, peak dataflow.Value) {
	peak = g.Maximum(g.ReduceMax(g.Abs(v), []int{1}, true), g.Scalar(0x1p-24))
	return g.Div(v, peak), peak
}

// vectorNorm is the 2-norm the device's vectors are scaled to: a power of
// two near √n/2, so that entries are about ½ (far from fp16's subnormals,
// whose products would underflow) and a dot product of two such vectors,
// about n/4, stays far below 65504.
func vectorNorm(n int) float64 {
	return math.Exp2(math.Floor(math.Log2(math.Sqrt(float64(n)) / 2)))
}
