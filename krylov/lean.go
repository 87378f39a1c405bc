package krylov

import (
	"errors"
	"fmt"
	"math"
	"runtime"
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
// the true residual b − A·x in float64. It does so in three passes over
// the unknowns per dispatch, each reading and writing only what the
// float64 iteration needs, in place on the device's surfaces (no copy of
// either vector):
//
//  1. the encoding: r·2^e rounded to fp16 straight into the device's
//     input surface, with its one range check;
//  2. the dots: the device's y decoded (arithmetically, no table) and
//     unscaled into z a row ahead, its overflow check included, and
//     w = Â·z row by row, never stored (Â = A/2^s, with 2^s
//     FastDiagonalization's scale near λ_min, so that every product is
//     of the size of r whatever the scale of A), with z·w, z·z, w·p',
//     z·r and p'·r accumulated;
//  3. the step: p = z − β·p' in place, x' = x + α·p, and r = b − A·x'
//     with ‖r‖₂², row by row a row behind x'.
//
// With A symmetric and w = Â·z, β = z·Âp'/p'·Âp' = w·p'/p'·Âp' and
// p·Âp = z·w − β·(w·p'), so the image of the direction is never formed
// (the general loop stores it and applies A twice per dispatch); z·r
// and p'·r give p·r. The device's vectors cross once each way as fp16:
// 2n bytes in and 2n out per dispatch for n unknowns.
//
// The residual is kept in float32, times 2^rs (rs puts ‖b‖₂ near 1, so
// that every entry that matters is a float32 normal): its sum of squares
// is taken in float64 before the rounding, so the stopping test and the
// reported residual are float64's; the float32 copy feeds only the fp16
// encoding (whose rounding, 2⁻¹¹, dwarfs float32's 2⁻²⁴) and z·r, p'·r,
// hence α, to a relative 2⁻²⁴ or so: a line search that inexact changes
// the step's residual by about 2⁻²⁴ of itself, far below the fp16
// preconditioner's own error, and the next residual is recomputed from x
// in float64 anyway. The direction is float32 for the same reason. Per
// unknown and dispatch the passes move 4 + 2 bytes (encoding), 2 + 4 + 4
// (dots) and 2 + 8 + 8 + 8 + 8 + 4 (step: z, p read and written, x in,
// x out, b, r): 54, against 70 with a float64 residual and a copy of y.
//
// On more than one core the passes split the grid's rows into bands, one
// per core (GOMAXPROCS): each band decodes its own halo rows of z, and
// the step's residual rows at a band's edge, which need the neighbour's
// x', are formed after the bands are done.
//
// The iterate is double-buffered, so that the best one met (which a
// failed solve returns) is copied only when a later one is worse, not
// after every improvement. The buffers live with the pooled session, so a
// solve allocates only its result.

// leanPasses counts the lean loop's passes over the unknowns (the three
// above per dispatch; the solve's initial residual and final copies
// apart), for tests.
var leanPasses atomic.Int64

// decodeRow sets dst[i] = src[i]·scale for fp16 src, with zsc =
// fp16.DecodeScale(scale), and returns a flag whose bit 15 is set
// when some src[i] is ±Inf or NaN (all exponent bits set: (h & 0x7c00) +
// 0x0400 carries into bit 15 exactly then).
func decodeRow(dst []float64, src []uint16, zsc float64) uint16 {
	src = src[:len(dst)]
	var bad uint16
	for i, h := range src {
		bad |= h&0x7c00 + 0x0400
		dst[i] = fp16.DecodeTimes(h, zsc)
	}
	return bad
}

// leanDots is what pass 2 accumulates.
type leanDots struct{ zw, zz, wp, zr, pr float64 }

// leanBand is one core's band of rows [lo, hi) and its scratch rows.
type leanBand struct {
	lo, hi int
	ring   [3][]float64
	row    []float64
	d      leanDots
	ss     float64
	bad    uint16
	enc    int // a row whose encoding overflowed, or −1
}

// leanScratch is a lean solve's working set, kept with its session.
type leanScratch struct {
	r     []float32 // the residual times 2^rs
	dir   []float32 // the kept direction p'
	x     []float64 // the iterate's second buffer
	bands []leanBand
}

// leanBandCount is how many bands the lean loop splits ny rows of nx
// into: one per core, of at least 16 rows, for grids of 2¹⁵ unknowns or
// more (a variable for tests).
var leanBandCount = func(nx, ny int) int {
	if nx*ny < 1<<15 {
		return 1
	}
	return max(1, min(runtime.GOMAXPROCS(0), ny/16))
}

func newLeanScratch(nx, ny int) *leanScratch {
	n := nx * ny
	sc := &leanScratch{r: make([]float32, n), dir: make([]float32, n), x: make([]float64, n)}
	sc.setBands(nx, ny)
	return sc
}

// setBands splits the rows into leanBandCount bands, unless they are.
func (sc *leanScratch) setBands(nx, ny int) {
	k := max(1, min(ny, leanBandCount(nx, ny)))
	if len(sc.bands) == k {
		return
	}
	sc.bands = sc.bands[:0]
	for i := range k {
		b := leanBand{lo: i * ny / k, hi: (i + 1) * ny / k, row: make([]float64, nx)}
		for j := range b.ring {
			b.ring[j] = make([]float64, nx)
		}
		sc.bands = append(sc.bands, b)
	}
}

// each runs f on every band, concurrently when there are several.
func (sc *leanScratch) each(f func(b *leanBand)) {
	if len(sc.bands) == 1 {
		f(&sc.bands[0])
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < len(sc.bands); i++ {
		wg.Add(1)
		go func(b *leanBand) {
			defer wg.Done()
			f(b)
		}(&sc.bands[i])
	}
	f(&sc.bands[0])
	wg.Wait()
}

// encode is pass 1: rows [lo, hi) of r·2^exp into the input surface. It
// returns the first row holding a value beyond fp16's range, or −1.
func encodeRows(in shim.HalfRows, r []float32, nx, lo, hi, exp int) int {
	for y := lo; y < hi; y++ {
		if fp16.EncodeScaled32(in.Row(y), r[y*nx:(y+1)*nx], exp) >= 0 {
			return y
		}
	}
	return -1
}

// dots is pass 2 over rows [b.lo, b.hi): z is the device's fp16 output
// times zs (zsc = fp16.DecodeScale(zs)), decoded a row ahead into the band's ring;
// p is the kept direction (nil: none); r the residual times 2^rs (the
// sums with it come back times 2^rs too). b.bad's bit 15 is set when z
// holds ±Inf or NaN (an fp16 overflow on the device).
func (l *leanStencil) dots(b *leanBand, z16 shim.HalfRows, zsc float64, p, r []float32) {
	nx, ny := l.nx, l.ny
	var d leanDots
	var bad uint16
	ring := &b.ring
	var up []float64
	mid, dn, free := ring[0], ring[1], ring[2]
	if b.lo > 0 {
		up, free = free, nil
		bad |= decodeRow(up, z16.Row(b.lo-1), zsc)
	}
	bad |= decodeRow(mid, z16.Row(b.lo), zsc)
	if b.lo+1 < ny {
		bad |= decodeRow(dn, z16.Row(b.lo+1), zsc)
	} else {
		dn = nil
	}
	row := b.row
	for y := b.lo; y < b.hi; y++ {
		l.rowFrom(row, up, mid, dn)
		o := y * nx
		rr, w, zz := r[o:o+nx], row[:nx], mid[:nx]
		var zw, z2, zr float64
		if p == nil {
			for i, v := range w {
				zi := zz[i]
				zw += zi * v
				z2 += zi * zi
				zr += zi * float64(rr[i])
			}
		} else {
			pp := p[o : o+nx]
			var wp, pr float64
			for i, v := range w {
				zi, pi, ri := zz[i], float64(pp[i]), float64(rr[i])
				zw += zi * v
				z2 += zi * zi
				wp += v * pi
				zr += zi * ri
				pr += pi * ri
			}
			d.wp, d.pr = d.wp+wp, d.pr+pr
		}
		d.zw, d.zz, d.zr = d.zw+zw, d.zz+z2, d.zr+zr
		// Rotate: the row above is no longer needed.
		if up != nil {
			free = up
		}
		up, mid, dn = mid, dn, nil
		if y+2 < ny && y+1 < b.hi {
			dn, free = free, nil
			bad |= decodeRow(dn, z16.Row(y+2), zsc)
		}
	}
	b.d, b.bad = d, bad
}

// step is pass 3 over rows [b.lo, b.hi): p = z − β·p (in place, in
// float32: p only steers the step, whose residual is recomputed in
// float64; first: there is no p yet, p = z), xOut = xIn + a·p (xOut may
// be xIn), then r = b − A·xOut (stored times 2^rs as float32) for the
// band's rows whose neighbours are all its own, the sum of their
// squares in b.ss. z is the device's fp16 output times zs (zsc = fp16.DecodeScale(zs)).
// Row y of the residual is formed once rows y − 1 … y + 1 of xOut are.
func (l *leanStencil) step(bd *leanBand, p []float32, z16 shim.HalfRows, zsc float64, xIn, xOut []float64, r []float32, rhs []float64, beta, a, rs float64, first bool) {
	nx := l.nx
	first0, last := bd.lo, bd.hi-1 // the band's residual rows
	if bd.lo > 0 {
		first0++
	}
	if bd.hi < l.ny {
		last--
	}
	ss := 0.0
	for y := bd.lo; y <= bd.hi; y++ {
		if y < bd.hi {
			o := y * nx
			pp, zz, xi, xo := p[o:o+nx], z16.Row(y), xIn[o:o+nx], xOut[o:o+nx]
			zz = zz[:len(pp)]
			if first {
				for i, h := range zz {
					v := float32(fp16.DecodeTimes(h, zsc))
					pp[i] = v
					xo[i] = xi[i] + a*float64(v)
				}
			} else {
				for i, h := range zz {
					v := float32(fp16.DecodeTimes(h, zsc) - beta*float64(pp[i]))
					pp[i] = v
					xo[i] = xi[i] + a*float64(v)
				}
			}
		}
		if y-1 >= first0 && y-1 <= last {
			ss += l.residualRow32(r, xOut, rhs, bd.row, y-1, rs)
		}
	}
	bd.ss = ss
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

// sumSq32 is sumSq for the lean loop's residual, held as float32 times
// 2^rs: its squares cannot leave float64's range.
func sumSq32(ss float64, v []float32, rs int) float64 {
	if ss >= 0x1p-900 && ss <= math.MaxFloat64 {
		return math.Sqrt(ss)
	}
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Ldexp(math.Sqrt(s), -rs)
}

// leanSession is a pooled session of the lean loop's program with the
// solve's working set.
type leanSession struct {
	sess *shim.Session
	sc   *leanScratch
}

// sessionPool keeps idle sessions of the lean loop's programs, so that a
// solve does not allocate the device's surfaces and its buffers again; a
// session serves one solve at a time.
var sessionPool = struct {
	sync.Mutex
	idle map[*compiled][]*leanSession
}{idle: map[*compiled][]*leanSession{}}

// takeSession returns an idle session of exe, or a new one.
func takeSession(exe *compiled) (*leanSession, error) {
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
	return &leanSession{sess: sess}, nil
}

// giveSession returns ls to the pool. The pool holds sessions of at most
// programCacheSize programs; past that it starts over.
func giveSession(exe *compiled, ls *leanSession) {
	sessionPool.Lock()
	defer sessionPool.Unlock()
	if _, ok := sessionPool.idle[exe]; !ok && len(sessionPool.idle) >= programCacheSize {
		for k, ss := range sessionPool.idle {
			for _, s := range ss {
				_ = s.sess.Close()
			}
			delete(sessionPool.idle, k)
		}
	}
	sessionPool.idle[exe] = append(sessionPool.idle[exe], ls)
}

// leanLoop is CG's dispatch loop for FastDiagonalization (see above; the
// stopping rules and errors are the general loop's).
func (p *cgPlan) leanLoop(r *run) error {
	set, res := p.set, r.res
	fd := p.spectral
	st := fd.op
	nx, ny := st.nx, st.ny
	_, se := math.Frexp(fd.scale) // fd.scale = 2^(se−1)
	full, hat := newLeanStencil(st, 0), newLeanStencil(st, se-1)
	normHat := math.Ldexp(st.NormInf(), 1-se)
	exe, err := p.buildProgram(r)
	if err != nil {
		return err
	}
	ls, err := takeSession(exe)
	if err != nil {
		return err
	}
	defer giveSession(exe, ls)
	sess := ls.sess
	if ls.sc == nil {
		ls.sc = newLeanScratch(nx, ny)
	}
	sc := ls.sc
	sc.setBands(nx, ny)
	rv, dir := sc.r, sc.dir
	// The residual is held times 2^rsExp, which puts ‖b‖₂ in [1/2, 1).
	rsExp := pow2Exp(r.bnorm)
	rs := math.Ldexp(1, rsExp)

	// The initial residual.
	var rr float64
	if set.X0 == nil {
		for i, v := range r.b {
			rv[i] = float32(v * rs)
		}
		rr = dot(r.b, r.b)
	} else {
		sc.each(func(b *leanBand) {
			b.ss = 0
			for y := b.lo; y < b.hi; y++ {
				b.ss += full.residualRow32(rv, res.X, r.b, b.row, y, rs)
			}
		})
		for i := range sc.bands {
			rr += sc.bands[i].ss
		}
	}
	rnorm := sumSq32(rr, rv, rsExp)
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

	var pq float64 // p'·Â·p', 0 while there is none
	bufs := [2][]float64{res.X, sc.x}
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
		in, err := sess.InputRows("r")
		if err == nil && (in.Rows != ny || in.RowLen != nx) {
			err = fmt.Errorf("krylov: CG: the program's input r is %d rows of %d, the grid %d of %d", in.Rows, in.RowLen, ny, nx)
		}
		if err != nil {
			return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches+1, err)
		}
		sc.each(func(b *leanBand) { b.enc = encodeRows(in, rv, nx, b.lo, b.hi, e-rsExp) })
		for i := range sc.bands {
			if y := sc.bands[i].enc; y >= 0 {
				return fmt.Errorf("krylov: CG dispatch %d: the residual, scaled to ‖·‖₂ < 2¹², does not fit fp16 (row %d): %w", res.Dispatches+1, y, errors.Join(ErrInput, shim.ErrRange))
			}
		}
		d0 := sess.Stats().Device
		err = sess.Run()
		res.Device += sess.Stats().Device - d0
		res.charge(exe)
		if err != nil {
			return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches+1, err)
		}
		res.Dispatches++
		res.Iterations++
		// y = 2^shift·2^(se−1)·A⁻¹·(2^e·r): z = 2^(se−1)·A⁻¹·r, below ‖r‖₂.
		z16, err := sess.OutputRows("y")
		if err != nil {
			return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches, err)
		}
		zs := math.Ldexp(1, -e-shift)
		var kept []float32
		if pq > 0 {
			kept = dir
		}
		dots := func(z16 shim.HalfRows, zs float64) (leanDots, bool) {
			zsc := fp16.DecodeScale(zs)
			sc.each(func(b *leanBand) { hat.dots(b, z16, zsc, kept, rv) })
			var d leanDots
			var bad uint16
			for i := range sc.bands {
				b := &sc.bands[i]
				d.zw, d.zz, d.wp = d.zw+b.d.zw, d.zz+b.d.zz, d.wp+b.d.wp
				d.zr, d.pr = d.zr+b.d.zr, d.pr+b.d.pr
				bad |= b.bad
			}
			// The sums with r were taken with r·2^rs.
			d.zr, d.pr = math.Ldexp(d.zr, -rsExp), math.Ldexp(d.pr, -rsExp)
			return d, bad&0x8000 == 0
		}
		d, ok := dots(z16, zs)
		leanPasses.Add(2)
		if !ok {
			return fmt.Errorf("krylov: CG: the device's inverse overflowed fp16 in dispatch %d: its transforms stay below ‖r‖₂ for a positive definite stencil, so this one is not, or the device is faulty%s: %w",
				res.Dispatches, p.notes(r), errors.Join(ErrNotSPD, shim.ErrRange))
		}
		if !(d.zz > 0) || math.IsInf(d.zz, 0) {
			// Nothing usable came back (a residual below the device's
			// resolution): step along the residual itself, as the device
			// holds it.
			if z16, err = sess.OutputRows("r"); err != nil {
				return fmt.Errorf("krylov: CG dispatch %d: %w", res.Dispatches, err)
			}
			zs = math.Ldexp(1, -e)
			d, _ = dots(z16, zs)
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
		xIn, xOut := bufs[cur], bufs[o]
		zsc, first := fp16.DecodeScale(zs), beta == 0
		sc.each(func(b *leanBand) { full.step(b, dir, z16, zsc, xIn, xOut, rv, r.b, beta, alpha, rs, first) })
		rr = 0
		for i := range sc.bands {
			b := &sc.bands[i]
			rr += b.ss
			// The residual rows at the band's edges, whose neighbours
			// other bands formed.
			if b.lo > 0 {
				rr += full.residualRow32(rv, xOut, r.b, b.row, b.lo, rs)
			}
			if b.hi < ny && (b.lo == 0 || b.hi-1 > b.lo) {
				rr += full.residualRow32(rv, xOut, r.b, b.row, b.hi-1, rs)
			}
		}
		leanPasses.Add(1)
		cur, pq = o, pAp
		rnorm = sumSq32(rr, rv, rsExp)
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
