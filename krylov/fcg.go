package krylov

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/shim"
)

// The host's flexible CG (Notay 2000, §2, FCG(m)): with the preconditioned
// residual z_k from the device,
//
//	p_k = z_k − Σ_{j=k−m}^{k−1} (z_k·q_j)/(p_j·q_j)·p_j   (q_j = A·p_j)
//	α_k = (p_k·r_k)/(p_k·q_k);  x += α_k·p_k;  r = b − A·x
//
// in float64. The conjugation is done one direction at a time (modified
// Gram–Schmidt in the A-inner product), and every direction is scaled to
// unit 2-norm: FCG does not depend on the directions' scales, and unit
// directions keep every dot product of the host far from float64's
// under- and overflow whatever the scale of A. The residual is recomputed
// from x after every step, so that the reported residual is the true one.
const (
	// A solve ends as stagnated after max(stagnationDispatches,
	// stagnationApplications/(Unroll+1)) dispatches without halving the
	// residual. CG's residual is not monotone: on ill-conditioned problems
	// (κ = 1e6) it plateaus for thousands of applications of A before
	// falling again, so the window counts applications, not dispatches.
	stagnationDispatches   = 8
	stagnationApplications = 8192
	// divergence: a residual this many times the best one seen ends a solve.
	divergence = 1e4
	// curvatureTol: pᵀAp ≤ curvatureTol·‖A‖∞ for a unit p is zero curvature
	// (a singular A), and pᵀAp < −curvatureTol·‖A‖∞ is negative curvature.
	// float64 rounding of A·p and the dot product is far below it.
	curvatureTol = 1e-12
)

// fcgDirections keeps the last m directions p_j, their images q_j and p_j·q_j.
type fcgDirections struct {
	p, q [][]float64
	pq   []float64
	next int
	m    int
}

func newFCGDirections(m, n int) *fcgDirections {
	d := &fcgDirections{m: m}
	for range m {
		d.p, d.q = append(d.p, make([]float64, n)), append(d.q, make([]float64, n))
	}
	d.pq = make([]float64, m)
	return d
}

// conjugate makes p A-conjugate to every kept direction.
func (d *fcgDirections) conjugate(p []float64) {
	for j := range d.m {
		if d.pq[j] == 0 {
			continue
		}
		beta := dot(p, d.q[j]) / d.pq[j]
		for i, v := range d.p[j] {
			p[i] -= beta * v
		}
	}
}

// slot returns the storage for the next direction and its image.
func (d *fcgDirections) slot() (p, q []float64, pq *float64) {
	j := d.next
	d.next = (d.next + 1) % d.m
	return d.p[j], d.q[j], &d.pq[j]
}

// loop is CG's dispatch loop (see CG).
func (p *cgPlan) loop(r *run) error {
	if p.kind == progSpectral && !p.general {
		return p.leanLoop(r)
	}
	set, res, a := p.set, r.res, r.a
	n := a.Dims()
	k := p.steps()
	rv := make([]float64, n)
	ry := make([]float64, n) // S·r
	z := make([]float64, n)
	in := make([]float32, n)
	dirs := newFCGDirections(p.truncation(), n)
	normA := a.NormInf()

	if _, err := r.initialResidual(rv, "CG"); err != nil {
		return err
	}
	if res.Residual <= set.Tol { // X0 solves it: no program needed
		res.Converged = true
		return nil
	}
	exe, err := p.buildProgram(r)
	if err != nil {
		return err
	}
	names := outputNames(exe)
	best, sinceBest := res.Residual, 0
	window := max(stagnationDispatches, (stagnationApplications+k)/(k+1))
	for {
		// Convergence first: whatever happens next is no breakdown.
		if res.Residual <= set.Tol {
			res.Converged = true
			return nil
		}
		if res.Dispatches >= set.MaxDispatches {
			return fmt.Errorf("krylov: CG reached relative residual %.3g after %d dispatches (MaxDispatches), Tol %.3g%s: %w", res.Residual, res.Dispatches, set.Tol, p.notes(r), ErrNotConverged)
		}
		// The device: z = S·q(B)·S·r, with S·r scaled to ‖·‖₂ ≤ chebInputNorm.
		rnormY := scaleBy(ry, p.sdiag, rv)
		if !(rnormY > 0) || math.IsInf(rnormY, 0) {
			return fmt.Errorf("krylov: CG: the scaled residual's norm is %g at relative residual %.3g%s: %w", rnormY, res.Residual, p.notes(r), ErrNotConverged)
		}
		e := pow2Exp(rnormY) + int(math.Log2(chebInputNorm)) - p.inputShift() // 2^e·‖S·r‖ in [2¹¹, 2¹²), or 2^−shift of that
		for i, v := range ry {
			in[i] = float32(math.Ldexp(v, e))
		}
		td := time.Now()
		out, err := exe.Run([][]float32{in})
		res.Device += time.Since(td)
		res.charge(exe)
		if err != nil {
			if errors.Is(err, shim.ErrRange) {
				return fmt.Errorf("krylov: CG: the device polynomial overflowed fp16 in dispatch %d: it stays bounded for every eigenvalue in [0, ‖A‖∞], so A has eigenvalues below zero (not positive definite), or its DeviceApply does not apply the A its MulVecTo does%s: %w",
					res.Dispatches+1, p.notes(r), errors.Join(ErrNotSPD, err))
			}
			return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches+1, err)
		}
		res.Dispatches++
		res.Iterations += k
		y := outputs{names, out}.get("y")
		for i, v := range y {
			z[i] = float64(v)
			if p.sdiag != nil {
				z[i] *= p.sdiag[i]
			}
		}
		if err := p.step(r, dirs, z, rv, normA); err != nil {
			return err
		}
		if res.Residual <= set.Tol {
			continue // converged: the top of the loop says so
		}
		if !finite(res.Residual) {
			return fmt.Errorf("krylov: CG residual became %g in dispatch %d (the operator's MulVecTo returned NaN or Inf, or x overflowed)%s: %w", res.Residual, res.Dispatches, p.notes(r), ErrNotConverged)
		}
		if res.Residual > divergence*best {
			return fmt.Errorf("krylov: CG diverged: relative residual %.3g after %d dispatches, best %.3g%s: %w",
				res.Residual, res.Dispatches, best, p.notes(r), ErrNotConverged)
		}
		if res.Residual < best/2 {
			best, sinceBest = res.Residual, 0
		} else if sinceBest++; sinceBest >= window {
			return fmt.Errorf("krylov: CG stagnated at relative residual %.3g (no halving in %d dispatches), Tol %.3g%s: %w", res.Residual, window, set.Tol, p.notes(r), ErrNotConverged)
		}
	}
}

// buildProgram returns the plan's program on the solve's device, its
// time (a cache lookup, or building and compiling it) charged to Build.
func (p *cgPlan) buildProgram(r *run) (*compiled, error) {
	t0 := time.Now()
	exe, err := p.program(r.dev)
	r.res.Build += time.Since(t0)
	return exe, err
}

// step is one FCG step from the device's z (overwritten): the new
// direction, its image, the step, and the true residual, recorded.
func (p *cgPlan) step(r *run, dirs *fcgDirections, z, rv []float64, normA float64) error {
	res := r.res
	zn := norm2(z)
	if !(zn > 0) || math.IsInf(zn, 0) {
		// The device returned nothing usable (it cannot return NaN, but a
		// zero z can come from a residual below its resolution): step
		// along the residual itself.
		copy(z, rv)
		zn = norm2(z)
	}
	for i := range z {
		z[i] /= zn
	}
	pk, qk, pq := dirs.slot()
	copy(pk, z)
	*pq = 0 // the slot's old direction is gone
	dirs.conjugate(pk)
	pn := norm2(pk)
	if !(pn > 1e-8) {
		// z lies in the kept directions' span (n small, say): step along
		// the residual, conjugated in turn.
		copy(pk, rv)
		dirs.conjugate(pk)
		pn = norm2(pk)
	}
	if !(pn > 0) || math.IsInf(pn, 0) {
		return fmt.Errorf("krylov: CG: no new search direction after dispatch %d%s: %w", res.Dispatches, p.notes(r), ErrNotConverged)
	}
	for i := range pk {
		pk[i] /= pn
	}
	r.a.MulVecTo(qk, pk)
	curv := dot(pk, qk)
	// The scale zero curvature is measured against: ‖A‖∞ for the unit p,
	// or, when A is scaled to B = S·A·S, ‖B‖∞·‖u‖₂² for u = S⁻¹·p, since
	// pᵀAp = uᵀBu. A badly scaled SPD matrix (diagonal spanning 10¹²,
	// say) has pᵀAp far below 1e-12·‖A‖∞ for most unit p while S·A·S is
	// well conditioned. z is free here, and holds u.
	curvScale := normA
	if p.sdiag != nil {
		for i, v := range pk {
			z[i] = v / p.sdiag[i]
		}
		un := norm2(z)
		curvScale = p.normB * un * un
	}
	switch {
	case math.IsNaN(curv) || math.IsInf(curv, 0):
		// The operator's product is not finite: the residual says so below.
		*pq = 0
		return p.finishStep(r, rv, nil, 0)
	case curv < -curvatureTol*curvScale:
		return fmt.Errorf("krylov: CG found a direction with pᵀAp = %.3g < 0 (unit p, ‖A‖∞ = %.3g) in dispatch %d: %w", curv, normA, res.Dispatches, ErrNotSPD)
	case curv <= curvatureTol*curvScale:
		*pq = 0
		return fmt.Errorf("krylov: CG: the search direction of dispatch %d has zero curvature (pᵀAp = %.3g for a unit p): A is singular, or b is not in its range, at relative residual %.3g%s: %w",
			res.Dispatches, curv, res.Residual, p.notes(r), ErrNotConverged)
	}
	*pq = curv
	alpha := dot(pk, rv) / curv
	return p.finishStep(r, rv, pk, alpha)
}

// finishStep adds α·p to x, recomputes the residual and records it.
func (p *cgPlan) finishStep(r *run, rv, pk []float64, alpha float64) error {
	x := r.res.X
	for i, v := range pk {
		x[i] += alpha * v
	}
	rnorm := residual(rv, r.a, x, r.b)
	r.record(rnorm / r.bnorm)
	return nil
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
