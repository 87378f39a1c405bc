package krylov

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/shim"
)

// CG's lean host loop for FastDiagonalization. The preconditioner is the
// stencil's inverse up to fp16 rounding, so the host's share of a dispatch
// is refinement: the residual goes to the device, z ≈ A⁻¹·r comes back,
// and the host takes the FCG step of the general loop (one kept
// direction, see fdTruncation: p = z − β·p', α = p·r/p·A·p) and recomputes
// the true residual b − A·x in float64. It does so in four passes over
// the unknowns per dispatch, each reading and writing only what the
// float64 iteration needs:
//
//  1. Write64: r·2^e rounded to fp16 straight into the device's input
//     surface, with its one range check;
//  2. Read64: the device's y decoded and unscaled into z (its overflow
//     check included);
//  3. the dots: w = Â·z row by row, never stored (Â = A/2^s, with 2^s
//     FastDiagonalization's scale near λ_min, so that every product is
//     of the size of r whatever the scale of A), with z·w, z·z, w·p',
//     z·r and p'·r accumulated;
//  4. the step: p = z − β·p' in place, x' = x + α·p, and r = b − A·x'
//     with ‖r‖₂², row by row a row behind x'.
//
// With A symmetric and w = Â·z, β = z·Âp'/p'·Âp' = w·p'/p'·Âp' and
// p·Âp = z·w − β·(w·p'), so the image of the direction is never formed
// (the general loop stores it and applies A twice per dispatch); z·r
// and p'·r give p·r. The device's vectors cross once each way as fp16:
// 2n bytes in and 2n out per dispatch for n unknowns.
//
// The iterate is double-buffered, so that the best one met (which a
// failed solve returns) is copied only when a later one is worse, not
// after every improvement.

// leanPasses counts the lean loop's passes over the unknowns (the four
// above per dispatch; the solve's initial residual and final copies
// apart), for tests.
var leanPasses atomic.Int64

// halfValues is the float32 value of every fp16 encoding, for decoding
// the device's output in the passes that read it (a 256 KiB table).
var halfValues = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = fp16.Bits(h).Float32()
	}
	return &t
})

// decodeRow sets dst[i] = src[i]·scale for fp16 src and returns a flag
// whose bit 15 is set when some src[i] is ±Inf or NaN (all exponent bits
// set: (h & 0x7c00) + 0x0400 carries into bit 15 exactly then).
func decodeRow(dst []float64, src []uint16, scale float64, tab *[1 << 16]float32) uint16 {
	src = src[:len(dst)]
	var bad uint16
	for i, h := range src {
		bad |= h&0x7c00 + 0x0400
		dst[i] = float64(tab[h]) * scale
	}
	return bad
}

// leanDots is what pass 3 accumulates.
type leanDots struct{ zw, zz, wp, zr, pr float64 }

// dots is pass 3: z is the device's fp16 output times zs, decoded a row
// ahead into the three rows of ring (each of length nx) that the stencil
// reads; p is the kept direction (nil: none); row is scratch of length
// nx. ok is false when z holds ±Inf or NaN (an fp16 overflow on the
// device).
func (l *leanStencil) dots(z16 []uint16, zs float64, p []float32, r []float64, ring *[3][]float64, row []float64) (d leanDots, ok bool) {
	nx, ny := l.nx, l.ny
	tab := halfValues()
	var bad uint16
	up, mid, dn := []float64(nil), ring[0], ring[1]
	free := ring[2]
	bad |= decodeRow(mid, z16[:nx], zs, tab)
	if ny > 1 {
		bad |= decodeRow(dn, z16[nx:2*nx], zs, tab)
	} else {
		dn = nil
	}
	for y := range ny {
		l.rowFrom(row, up, mid, dn)
		o := y * nx
		rr, w, zz := r[o:o+nx], row[:nx], mid[:nx]
		var zw, z2, zr float64
		if p == nil {
			for i, v := range w {
				zi := zz[i]
				zw += zi * v
				z2 += zi * zi
				zr += zi * rr[i]
			}
		} else {
			pp := p[o : o+nx]
			var wp, pr float64
			for i, v := range w {
				zi, pi := zz[i], float64(pp[i])
				zw += zi * v
				z2 += zi * zi
				wp += v * pi
				zr += zi * rr[i]
				pr += pi * rr[i]
			}
			d.wp, d.pr = d.wp+wp, d.pr+pr
		}
		d.zw, d.zz, d.zr = d.zw+zw, d.zz+z2, d.zr+zr
		// Rotate: the row above is no longer needed.
		if up == nil {
			up, mid = mid, dn
		} else {
			free, up, mid = up, mid, dn
		}
		dn = nil
		if y+2 < ny {
			if free == nil {
				free = ring[2]
			}
			dn, free = free, nil
			bad |= decodeRow(dn, z16[(y+2)*nx:(y+3)*nx], zs, tab)
		}
	}
	return d, bad&0x8000 == 0
}

// step is pass 4: p = z − β·p (in place, in float32: p only steers the
// step, whose residual is recomputed in float64), xOut = xIn + a·p (xOut
// may be xIn), then r = b − A·xOut, whose ‖·‖₂² it returns. z is the
// device's fp16 output times zs. Row y of the residual is formed once rows
// y − 1 … y + 1 of xOut are.
func (l *leanStencil) step(p []float32, z16 []uint16, zs float64, xIn, xOut, r, b []float64, beta, a float64, row []float64) float64 {
	nx := l.nx
	tab := halfValues()
	ss := 0.0
	for y := 0; y <= l.ny; y++ {
		if y < l.ny {
			o := y * nx
			pp, zz, xi, xo := p[o:o+nx], z16[o:o+nx], xIn[o:o+nx], xOut[o:o+nx]
			for i, h := range zz {
				v := float32(float64(tab[h])*zs - beta*float64(pp[i]))
				pp[i] = v
				xo[i] = xi[i] + a*float64(v)
			}
		}
		if y >= 1 {
			ss += l.residualRow(r, xOut, b, row, y-1)
		}
	}
	return ss
}

// sumSq returns ‖v‖₂ from the plain sum of squares ss of v when that is
// accurate (finite and at least 2⁻⁹⁰⁰, so that squares flushed to zero
// weigh less than 2⁻¹⁰⁰ of it), else from the scaled sum norm2 computes.
func sumSq(ss float64, v []float64) float64 {
	if ss >= 0x1p-900 && ss <= math.MaxFloat64 {
		return math.Sqrt(ss)
	}
	return norm2(v)
}

// sessionPool keeps idle sessions of the lean loop's programs, so that a
// solve does not allocate the device's surfaces again; a session serves
// one solve at a time.
var sessionPool = struct {
	sync.Mutex
	idle map[*compiled][]*shim.Session
}{idle: map[*compiled][]*shim.Session{}}

// takeSession returns an idle session of exe, or a new one.
func takeSession(exe *compiled) (*shim.Session, error) {
	sessionPool.Lock()
	if s := sessionPool.idle[exe]; len(s) > 0 {
		sess := s[len(s)-1]
		sessionPool.idle[exe] = s[:len(s)-1]
		sessionPool.Unlock()
		return sess, nil
	}
	sessionPool.Unlock()
	// The backend's executable, not the wrapper: the session runs it on
	// its fp16 surfaces (shim.HalfRunner).
	sess, err := shim.NewSession(exe.Executable)
	if err != nil {
		return nil, fmt.Errorf("krylov: CG: %w", err)
	}
	return sess, nil
}

// giveSession returns sess to the pool. The pool holds sessions of at
// most programCacheSize programs; past that it starts over.
func giveSession(exe *compiled, sess *shim.Session) {
	sessionPool.Lock()
	defer sessionPool.Unlock()
	if _, ok := sessionPool.idle[exe]; !ok && len(sessionPool.idle) >= programCacheSize {
		for k, ss := range sessionPool.idle {
			for _, s := range ss {
				_ = s.Close()
			}
			delete(sessionPool.idle, k)
		}
	}
	sessionPool.idle[exe] = append(sessionPool.idle[exe], sess)
}

// leanLoop is CG's dispatch loop for FastDiagonalization (see above; the
// stopping rules and errors are the general loop's).
func (p *cgPlan) leanLoop(r *run) error {
	set, res := p.set, r.res
	fd := p.spectral
	st := fd.op
	n := st.Dims()
	_, se := math.Frexp(fd.scale) // fd.scale = 2^(se−1)
	full, hat := newLeanStencil(st, 0), newLeanStencil(st, se-1)
	normHat := math.Ldexp(st.NormInf(), 1-se)
	rv := make([]float64, n)
	row := make([]float64, st.nx)

	// The initial residual.
	var rr float64
	if set.X0 == nil {
		copy(rv, r.b)
		rr = dot(rv, rv)
	} else {
		rr = full.residual(rv, res.X, r.b, row)
	}
	rnorm := sumSq(rr, rv)
	if rel := rnorm / r.bnorm; !finite(rel) {
		res.Residual = rel
		res.History = append(res.History, rel)
		return fmt.Errorf("krylov: CG: the initial residual b − A·x₀ is %g: A·X0 overflows float64, or the operator's MulVecTo returned NaN or Inf: %w", rel, ErrInput)
	} else {
		r.record(rel)
	}
	if res.Residual <= set.Tol {
		res.Converged = true
		return nil
	}
	exe, err := p.buildProgram(r)
	if err != nil {
		return err
	}
	sess, err := takeSession(exe)
	if err != nil {
		return err
	}
	defer giveSession(exe, sess)

	z16 := make([]uint16, n)  // the device's y, as it comes back
	dir := make([]float32, n) // the kept direction p'
	var pq float64            // p'·Â·p', 0 while there is none
	ring := [3][]float64{make([]float64, st.nx), make([]float64, st.nx), make([]float64, st.nx)}
	bufs := [2][]float64{res.X, make([]float64, n)}
	cur, bestIn := 0, -1 // the iterate's buffer; the best one's, or −1: r.best.x
	defer func() {
		if bestIn >= 0 && bestIn != cur {
			copy(r.best.x, bufs[bestIn])
		}
		if cur != 0 {
			copy(res.X, bufs[cur])
		}
	}()
	best, sinceBest := res.Residual, 0
	window := max(stagnationDispatches, (stagnationApplications+1)/2)
	shift := p.inputShift()
	for {
		if res.Residual <= set.Tol {
			res.Converged = true
			return nil
		}
		if res.Dispatches >= set.MaxDispatches {
			return fmt.Errorf("krylov: CG reached relative residual %.3g after %d dispatches (MaxDispatches), Tol %.3g%s: %w", res.Residual, res.Dispatches, set.Tol, p.notes(r), ErrNotConverged)
		}
		if !(rnorm > 0) || math.IsInf(rnorm, 0) {
			return fmt.Errorf("krylov: CG: the residual's norm is %g at relative residual %.3g%s: %w", rnorm, res.Residual, p.notes(r), ErrNotConverged)
		}
		// 2^e·‖r‖₂ in [2¹¹, 2¹²)·2^−shift (see factors).
		e := pow2Exp(rnorm) + int(math.Log2(chebInputNorm)) - shift
		if err := sess.Write64("r", rv, e); err != nil {
			return fmt.Errorf("krylov: CG dispatch %d: the residual, scaled to ‖·‖₂ < 2¹², does not fit fp16: %w", res.Dispatches+1, errors.Join(ErrInput, err))
		}
		d0 := sess.Stats().Device
		err := sess.Run()
		res.Device += sess.Stats().Device - d0
		res.charge(exe)
		if err != nil {
			return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches+1, err)
		}
		res.Dispatches++
		res.Iterations++
		// y = 2^shift·2^(se−1)·A⁻¹·(2^e·r): z = 2^(se−1)·A⁻¹·r, below ‖r‖₂.
		if err := sess.ReadHalf("y", z16); err != nil {
			return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches, err)
		}
		zs := math.Ldexp(1, -e-shift)
		var kept []float32
		if pq > 0 {
			kept = dir
		}
		d, ok := hat.dots(z16, zs, kept, rv, &ring, row)
		leanPasses.Add(3)
		if !ok {
			return fmt.Errorf("krylov: CG: the device's inverse overflowed fp16 in dispatch %d: its transforms stay below ‖r‖₂ for a positive definite stencil, so this one is not, or the device is faulty%s: %w",
				res.Dispatches, p.notes(r), errors.Join(ErrNotSPD, shim.ErrRange))
		}
		if !(d.zz > 0) || math.IsInf(d.zz, 0) {
			// Nothing usable came back (a residual below the device's
			// resolution): step along the residual itself, as the device
			// holds it.
			if err := sess.ReadHalf("r", z16); err != nil {
				return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches, err)
			}
			zs = math.Ldexp(1, -e)
			d, _ = hat.dots(z16, zs, kept, rv, &ring, row)
			leanPasses.Add(1)
		}
		beta, pAp, pr := 0.0, d.zw, d.zr
		if kept != nil {
			beta = d.wp / pq
			pAp, pr = d.zw-beta*d.wp, d.zr-beta*d.pr
			if !(pAp > 1e-12*d.zw) {
				// z lies along p' (to rounding): step along z alone.
				beta, pAp, pr = 0, d.zw, d.zr
			}
		}
		switch {
		case math.IsNaN(pAp) || math.IsInf(pAp, 0):
			// The residual below says what went wrong.
			beta, pAp = 0, 0
		case pAp < -curvatureTol*normHat*d.zz:
			return fmt.Errorf("krylov: CG found a direction with pᵀAp = %.3g < 0 (unit p, ‖A‖∞ = %.3g) in dispatch %d: %w", pAp/d.zz*fd.scale, st.NormInf(), res.Dispatches, ErrNotSPD)
		case pAp <= curvatureTol*normHat*d.zz:
			return fmt.Errorf("krylov: CG: the search direction of dispatch %d has zero curvature (pᵀAp = %.3g for a unit p): A is singular, or b is not in its range, at relative residual %.3g%s: %w",
				res.Dispatches, pAp/d.zz*fd.scale, res.Residual, p.notes(r), ErrNotConverged)
		}
		alpha := 0.0
		if pAp > 0 {
			alpha = pr / pAp / fd.scale // x += α·p for A = 2^(se−1)·Â
		}
		o := 1 - cur
		if bestIn == o {
			copy(r.best.x, bufs[o])
			bestIn = -1
		}
		rr = full.step(dir, z16, zs, bufs[cur], bufs[o], rv, r.b, beta, alpha, row)
		leanPasses.Add(1)
		cur, pq = o, pAp
		rnorm = sumSq(rr, rv)
		rel := rnorm / r.bnorm
		res.Residual = rel
		res.History = append(res.History, rel)
		if rel < r.best.res {
			r.best.res, bestIn = rel, cur
		}
		r.trace(rel)
		if res.Residual <= set.Tol {
			continue
		}
		if !finite(res.Residual) {
			return fmt.Errorf("krylov: CG residual became %g in dispatch %d (x overflowed)%s: %w", res.Residual, res.Dispatches, p.notes(r), ErrNotConverged)
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
