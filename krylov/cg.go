package krylov

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
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
// With Precision Compensated (or Float64) a dense A, or a stencil whose
// scaled coefficients are fp16 numbers, is applied from limb digits
// (compensated.go), the device returns every search direction with its
// image A·p, and the host keeps the last 128 directions and takes the
// A-norm-optimal step over all of them in float64 (galerkin). The default
// Unroll is then 16. This reaches Tol where κ(A)·2⁻¹¹ ≳ 1 stops FP16 mode;
// at κ = 1e6 it needs about twice float64 CG's iterations, so set
// MaxDispatches accordingly.
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
	// The device solves for corrections in scaled coordinates y = S⁻¹x with
	// the operator S·A·S (S a power-of-two diagonal, exact), so that a
	// badly scaled matrix keeps an accurate fp16 image; without scaling S = I.
	dop, sdiag := a, []float64(nil)
	if set.Precond == nil {
		if sop, sd := symmetricScaling(a); sop != nil {
			dop, sdiag = sop, sd
		}
	}
	sigma := pow2Exp(dop.NormInf()) // ‖2^σ·S·A·S‖∞ in [½, 1)

	t0 := time.Now()
	exe, err := cgProgram(dev, dop, set.Precond, set.Unroll, sigma, compensated)
	res.Build = time.Since(t0)
	if err != nil {
		return res, err
	}

	r := make([]float64, n)
	ry := make([]float64, n) // S·r: the residual in scaled coordinates
	dy := make([]float64, n) // a correction in scaled coordinates
	z := make([]float64, n)
	w := make([]float64, n)
	p := make([]float64, n)
	pU := make([]float64, n)
	rIn := make([]float32, n)
	pIn := make([]float32, n)

	rnorm := residual(r, a, res.X, b)
	res.Residual = rnorm / bnorm
	res.History = append(res.History, res.Residual)
	rnormY := scaleBy(ry, sdiag, r)
	// The first direction is the preconditioned residual.
	applyPrecond(z, set.Precond, ry)
	copy(p, z)

	nu := vectorNorm(n)
	tau := 1.0 // scale of the device's correction accumulator, adapted to keep it in range
	kept := &galerkin{max: galerkinVectors}
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
		toFloat32(rIn, ry, nu/rnormY)
		toFloat32(pIn, p, nu/norm2(p))
		res.Host += time.Since(th)

		var out [][]float32
		for {
			td := time.Now()
			out, err = exe.Run([][]float32{rIn, pIn, {float32(tau)}})
			res.Device += time.Since(td)
			// Only the accumulated correction depends on τ: in Compensated
			// mode (no correction on the device) an overflow is final.
			if err == nil || !errors.Is(err, shim.ErrRange) || compensated || tau < 0x1p-20 {
				break
			}
			tau /= 256 // the correction overflowed fp16: rerun with a smaller scale
			res.Retries++
		}
		if len(out) >= 5 && len(out[4]) == 1 && float64(out[4][0]) < -notSPDSlack*nu*nu {
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
		if pqMin < -notSPDSlack*nu*nu {
			return res, fmt.Errorf("krylov: CG found a direction with pᵀAp = %.3g < 0 (scaled) in dispatch %d: %w", pqMin, res.Dispatches, ErrNotSPD)
		}

		th = time.Now()
		dmax := 0.0
		clear(dy)
		if compensated {
			// The device returned its directions P and A·P; the host takes the
			// A-norm-optimal step in the span of these and recent dispatches'.
			if err := kept.addDispatch(out[0], out[1], out[5], math.Ldexp(1, -sigma), n); err != nil {
				return res, err
			}
			kept.step(dy, ry)
		} else {
			scale := math.Ldexp(rnormY/(nu*tau), sigma)
			d, dLo := out[0], out[1]
			for i, v := range d {
				dy[i] = scale * (float64(v) + float64(dLo[i]))
				dmax = math.Max(dmax, math.Abs(float64(v)))
			}
		}
		for i, v := range dy { // x += S·dy
			if sdiag != nil {
				v *= sdiag[i]
			}
			res.X[i] += v
		}
		rnorm = residual(r, a, res.X, b)
		rnormY = scaleBy(ry, sdiag, r)
		res.Residual = rnorm / bnorm
		res.History = append(res.History, res.Residual)

		// Reliable update: continue CG from the true residual with a direction
		// A-conjugate (in float64) to the last one the device used.
		for i, v := range dirU {
			pU[i] = float64(v)
		}
		dop.MulVecTo(w, pU)
		pw := dot(pU, w)
		if !(pw > 0) {
			return res, fmt.Errorf("krylov: CG direction with pᵀAp = %.3g ≤ 0 after dispatch %d: %w", pw, res.Dispatches, ErrNotSPD)
		}
		applyPrecond(z, set.Precond, ry)
		if compensated {
			kept.conjugate(p, z) // A-conjugate to every kept direction
		} else {
			beta := dot(z, w) / pw
			for i := range p {
				p[i] = z[i] - beta*pU[i]
			}
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
	// notSPDSlack: the device's pᵀAp for ‖p‖ = ν and ‖A‖∞ ≤ 1 carries an
	// fp16 error of a few units of 2⁻¹¹·ν²; a value below −2⁻⁶·ν² is a
	// direction of negative curvature, not rounding.
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
	var apply applier = func(g *dataflow.Graph, p dataflow.Value) (dataflow.Value, dataflow.Value) {
		return a.DeviceApply(g, p, sigma), dataflow.Value{}
	}
	if compensated {
		var err error
		if apply, err = compensatedApplier(a, sigma, vectorNorm(n)); err != nil {
			return nil, err
		}
	}
	g := cgGraph(n, apply, m, unroll, compensated)
	exe, err := build(dev, g, fmt.Sprintf("CG program for n = %d", n))
	if err != nil {
		return nil, err
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
//	rr = r̂·r̂;  zq = q·z             (one matmul [r̂; q]·r̂ᵀ without M)
//	r = ν·r̂/√rr;  τ = τ·m·√rr/ν     keep ‖r‖ = ν, the decay in τ
//	p = ν·(z − (zq/pq)·p)/‖·‖       Hestenes–Stiefel: the new p is A-conjugate
//	                                to the old (its norm also via max-scaling)
//
// Every dot product is a matmul (the wide accumulator), never a reduce_sum.
// Outputs: d and d_lo (the accumulated correction, A_s·(d + d_lo) ≈ τ₀·r,
// to twice fp16's precision), the last p used,
// τ (the recursive residual's norm relative to the input's) and the smallest
// pq met (negative curvature betrays an operator that is not SPD).
func cgGraph(n int, apply applier, m Preconditioner, unroll int, directions bool) *dataflow.Graph {
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
	if directions {
		g.Output("dirs", g.Concat(0, dirs...))
		g.Output("adirs", g.Concat(0, adirs...))
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
	if directions {
		g.Output("adirs_lo", g.Concat(0, adirsLo...)) // output 5
	}
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
