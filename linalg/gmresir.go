package linalg

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anemone-go/anemone/precision"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// GMRES-IR tuning.
const (
	// gmresTol: a GMRES solve of the preconditioned correction equation
	// stops at a relative residual of gmresTol at most; the refinement
	// step then reduces the error by about that + κ(Ã)·2⁻⁵³ (Carson and
	// Higham 2017, §3), so two or three such steps reach the float64
	// floor (one or two with stepTol's tighter targets).
	gmresTol = 1e-8
	// gmresTolMin, gmresAim: a step whose backward error η is far above
	// Tol asks GMRES for gmresAim·Tol/η instead (down to gmresTolMin, well
	// above what modified Gram–Schmidt twice attains in float64), so that
	// one step can reach Tol rather than two: the extra iterations cost
	// less than a second GMRES start (a residual, a preconditioner
	// application and the iterations that rebuild the Krylov space).
	gmresTolMin = 1e-12
	gmresAim    = 0.1
	// gmresMax bounds the Krylov dimension of one GMRES solve (restarts
	// are the refinement steps themselves), and n/gmresFrac too, so that
	// GMRES never becomes a dense solver of its own: its work stays
	// O(n²) per iteration and at most gmresRuns·m iterations per
	// right-hand side.
	gmresMax  = 60
	gmresFrac = 4
	gmresRuns = 4
	// fp16StepGain: with FP16 factors (and the default Precision) the
	// first refinement step must reduce the backward error by this
	// factor, or the factorization is redone with compensated products:
	// GMRES's convergence to gmresTol within its Krylov dimension is what
	// good factors give (a gain near 1e-8); a gain of less than 1e-3 means
	// the preconditioned matrix is too far from the identity, and every
	// further step would cost a full GMRES run.
	fp16StepGain = 1e-3
	// maxRefine bounds the refinement steps of one right-hand side.
	maxRefine = 12
)

// Solve solves A·x = b with the factorization: GMRES-IR in float64 (see
// SolveMany). len(b) must be n (ErrShape); NaN or ±Inf is ErrRange.
func (f *Factorization) Solve(b []float64) ([]float64, error) {
	if err := checkVector("Factorization.Solve", "b", b, f.n); err != nil {
		return nil, err
	}
	x, err := f.solve("Factorization.Solve", [][]float64{b})
	if x == nil {
		return nil, err
	}
	return x[0], err
}

// SolveMany solves A·X = B for the columns of b: for each column,
// GMRES-IR (Carson and Higham, SIAM J. Sci. Comput. 39(6), 2017 and 40(2),
// 2018) in float64 on the host with the factors as the left
// preconditioner: x₀ = U⁻¹L⁻¹P·b; then, until the normwise backward error
// ‖b − A·x‖∞/(‖A‖∞‖x‖∞ + ‖b‖∞) is at most Tol, and so is that of the
// equilibrated system B·y = D_r·b (y = D_c⁻¹·x; with columns scaled far
// apart, A's alone is met while the small entries of x are still at the
// factors' accuracy), the residual r = b − A·x in
// float64 and a GMRES solve of U⁻¹L⁻¹P·A·d = U⁻¹L⁻¹P·r to relative
// residual 1e-8, or to 0.1·Tol/η (down to 1e-12) when the backward error
// η is farther above Tol (at most 60 iterations), x += d. Everything runs
// on B's scaling (exact powers of two). O(n²) host work per GMRES
// iteration.
//
// With the default Precision, a right-hand side that FP16 factors cannot
// bring to Tol makes the factorization compute compensated factors (once;
// Stats.Mode says which) and solve again. A solve that still stagnates
// returns the best x with ErrNotConverged (and ErrSingular when the
// condition estimate says the matrix is singular to the factors'
// precision); the message has the backward-error history and Cond.
func (f *Factorization) SolveMany(b mat.Matrix) (*mat.Dense, error) {
	const fn = "Factorization.SolveMany"
	r, k, err := checkMatrix(fn, "b", b)
	if err != nil {
		return nil, err
	}
	if r != f.n {
		return nil, fmt.Errorf("linalg: %s: b has %d rows, the factorization is %d×%d: %w", fn, r, f.n, f.n, ErrShape)
	}
	cols := make([][]float64, k)
	for j := range k {
		cols[j] = mat.Col(nil, j, b)
	}
	x, err := f.solve(fn, cols)
	if x == nil {
		return nil, err
	}
	out := mat.NewDense(f.n, k, nil)
	for j, col := range x {
		out.SetCol(j, col)
	}
	return out, err
}

// solve runs GMRES-IR for every column, upgrading the factors once if the
// FP16 ones fail.
func (f *Factorization) solve(fn string, b [][]float64) ([][]float64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("linalg: %s: the factorization was closed (Close released its factors); factorize the matrix again: %w", fn, ErrInvalid)
	}
	st := f.cfg.stats
	defer st.finish()
	x := make([][]float64, len(b))
	hist := make([][]float64, len(b))
	var failed []int
	var why string
	for j := range b {
		var ok bool
		x[j], hist[j], ok, why = f.refine(b[j])
		if !ok {
			failed = append(failed, j)
		}
	}
	if len(failed) > 0 && f.mode == precision.FP16 && f.cfg.mode == 0 && !f.upgraded {
		f.upgraded = true
		if err := f.factorHost(fn, precision.Compensated); err != nil {
			return nil, err
		}
		f.condLocked()
		st.Mode = f.mode
		still := failed[:0]
		for _, j := range failed {
			var ok bool
			var h []float64
			x[j], h, ok, why = f.refine(b[j])
			hist[j] = append(hist[j], h...)
			if !ok {
				still = append(still, j)
			}
		}
		failed = still
	}
	// History: the largest backward error over the columns at each step.
	st.History = st.History[:0]
	for _, h := range hist {
		for i, v := range h {
			if i >= len(st.History) {
				st.History = append(st.History, v)
			} else if v > st.History[i] || math.IsNaN(v) {
				st.History[i] = v
			}
		}
	}
	// A converged x with ‖B‖∞‖y‖∞ > ‖D_r·b‖∞/(8·n·u) (y = D_c⁻¹·x, u =
	// 2⁻⁵³) proves κ∞(B) > 1/(8·n·u) for the equilibrated B: the forward
	// error bound n·u·κ∞ exceeds 1/8, not one correct digit is certain, and
	// the matrix counts as singular to working precision (as LAPACK's
	// dgesvx reports rcond < ε), whatever the backward error.
	if len(failed) == 0 {
		for j, col := range b {
			bn, yn := 0.0, 0.0
			for i := range col {
				bn = math.Max(bn, math.Abs(f.r[i]*col[i]))
				yn = math.Max(yn, math.Abs(x[j][i]/f.c[i]))
			}
			// 8·n·u·‖B‖∞ first: it is below 2⁻⁴⁰ for any n a device
			// can hold, so the product with yn cannot overflow.
			if g := 8 * float64(f.n) * 0x1p-53 * f.normB; g*yn > bn {
				return x, fmt.Errorf("linalg: %s: right-hand side %d: the solution is %.3g times larger than ‖b‖/‖A‖ allows for κ < 2⁵³/(8n) (equilibrated), so a is singular to float64 precision: the x returned has a small backward error but no accurate digits: %w",
					fn, j, g*yn/bn, ErrSingular)
			}
		}
	}
	if len(failed) > 0 {
		// The factors are of B: its conditioning, not A's (which the
		// scaling may inflate without limit), says whether they could.
		cond, condB := f.condLocked(), f.condBLocked()
		var sentinel error = ErrNotConverged
		if condB*f.eps >= 1 {
			sentinel = errors.Join(ErrNotConverged, ErrSingular)
		}
		return x, fmt.Errorf("linalg: %s: %d of %d right-hand sides did not reach the backward error %g: %s (%v factors, %d refinement steps, %d GMRES iterations in all), history %s; condition estimate κ₁(A) ≈ %.3g, κ₁ ≈ %.3g after equilibration (estimated from the factors, so it saturates near %.1g): the matrix is too ill-conditioned for the device's factors; %w",
			fn, len(failed), len(b), f.cfg.tol, why, f.mode, st.Refinements, st.GMRES, fmtHistory(st.History), cond, condB, 1/f.eps, sentinel)
	}
	return x, nil
}

// refine is GMRES-IR for one right-hand side (see SolveMany); why says
// how a failed one ended.
func (f *Factorization) refine(b []float64) (x, hist []float64, ok bool, why string) {
	n, st := f.n, f.cfg.stats
	start := time.Now()
	defer func() { st.Host += time.Since(start) }()
	// ‖b‖∞ and ‖D_r·b‖∞ (f.normB is the matrix's ‖B‖∞).
	nb, nbt := 0.0, 0.0
	bt := make([]float64, n)
	for i, v := range b {
		nb = math.Max(nb, math.Abs(v))
		bt[i] = f.r[i] * v
		nbt = math.Max(nbt, math.Abs(bt[i]))
	}
	x = make([]float64, n)
	if nb == 0 {
		return x, []float64{0}, true, ""
	}
	tmp := make([]float64, n)
	y := append([]float64(nil), bt...)
	f.applyInv(y, tmp)
	best := append([]float64(nil), y...)
	bestEta := math.Inf(1)
	res := make([]float64, n)
	bg := blas64.General{Rows: n, Cols: n, Stride: n, Data: f.b}
	its := 0
	polished := false
	// With FP16 factors that a compensated factorization may replace,
	// give up on them as soon as a step gains too little.
	fastFail := f.mode == precision.FP16 && f.cfg.mode == 0 && !f.upgraded
	for step := 0; ; step++ {
		copy(res, bt)
		gemv(blas.NoTrans, -1, bg, y, 1, res)
		st.HostFlops += int64(2 * n * n)
		// The normwise backward errors of A·x = b and of the equilibrated
		// B·y = D_r·b, the larger of the two: with columns scaled apart,
		// A's alone is met by an x whose small entries are still wrong.
		rn, xn, rb, yb := 0.0, 0.0, 0.0, 0.0
		for i := range n {
			rn = math.Max(rn, math.Abs(res[i]/f.r[i]))
			xn = math.Max(xn, math.Abs(f.c[i]*y[i]))
			rb = math.Max(rb, math.Abs(res[i]))
			yb = math.Max(yb, math.Abs(y[i]))
		}
		eta := math.Max(rn/(f.normA*xn+nb), rb/(f.normB*yb+nbt))
		if math.IsNaN(rn) || math.IsNaN(xn) || math.IsNaN(rb) || math.IsNaN(yb) {
			eta = math.NaN()
		}
		hist = append(hist, eta)
		if eta < bestEta || (polished && eta <= bestEta) {
			bestEta = eta
			copy(best, y)
		}
		switch {
		case eta <= f.cfg.tol && polished:
			ok = true
		case eta <= f.cfg.tol:
			// One plain refinement step more (O(n²)), kept only if it
			// does not raise the backward error: it usually brings x to
			// the last bits.
			ok, polished = true, true
			d := append([]float64(nil), res...)
			f.applyInv(d, tmp)
			for i := range y {
				y[i] += d[i]
			}
			continue
		case math.IsNaN(eta) || math.IsInf(eta, 0):
			why = fmt.Sprintf("backward error %v", eta)
		case step >= refineWindow && !(eta < refineFactor*hist[step-refineWindow]):
			why = fmt.Sprintf("refinement stagnated at backward error %.3g", bestEta)
		case step >= maxRefine:
			why = fmt.Sprintf("%d refinement steps reached at backward error %.3g", maxRefine, bestEta)
		case fastFail && step >= 1 && !(eta <= fp16StepGain*hist[step-1]):
			why = fmt.Sprintf("a refinement step with the FP16 factors gained only a factor %.2g", hist[step-1]/eta)
		case its >= gmresRuns*krylovDim(n):
			why = fmt.Sprintf("%d GMRES iterations (the budget of one right-hand side) reached at backward error %.3g", its, bestEta)
		default:
			d, k := f.gmres(res, tmp, stepTol(eta, f.cfg.tol))
			its += k
			for i := range y {
				y[i] += d[i]
			}
			st.Refinements++
			continue
		}
		break
	}
	for i := range x {
		x[i] = f.c[i] * best[i]
	}
	return x, hist, ok, why
}

// gmres approximately solves M⁻¹·B·d = M⁻¹·r (M = Pᵀ·L·U) from d = 0 to a
// relative residual tol (stepTol), at most krylovDim(n) iterations:
// Arnoldi with modified Gram–Schmidt, twice (Giraud, Langou and Rozložník
// 2005), and Givens rotations (Saad and Schultz 1986).
func (f *Factorization) gmres(r, tmp []float64, tol float64) ([]float64, int) {
	n, st := f.n, f.cfg.stats
	m := krylovDim(n)
	z := append([]float64(nil), r...)
	f.applyInv(z, tmp)
	d := make([]float64, n)
	beta := blas64.Nrm2(blas64.Vector{N: n, Inc: 1, Data: z})
	if beta == 0 || math.IsNaN(beta) {
		return d, 0
	}
	bg := blas64.General{Rows: n, Cols: n, Stride: n, Data: f.b}
	vs := [][]float64{z}
	blas64.Scal(1/beta, blas64.Vector{N: n, Inc: 1, Data: z})
	h := make([][]float64, m) // h[j] is column j, length j+2
	cs, sn := make([]float64, m), make([]float64, m)
	g := make([]float64, m+1)
	g[0] = beta
	k := 0
	for j := 0; j < m; j++ {
		w := make([]float64, n)
		gemv(blas.NoTrans, 1, bg, vs[j], 0, w)
		f.applyInv(w, tmp)
		wv := blas64.Vector{N: n, Inc: 1, Data: w}
		hj := make([]float64, j+2)
		for pass := 0; pass < 2; pass++ {
			for i := 0; i <= j; i++ {
				vi := blas64.Vector{N: n, Inc: 1, Data: vs[i]}
				c := blas64.Dot(wv, vi)
				hj[i] += c
				blas64.Axpy(-c, vi, wv)
			}
		}
		st.HostFlops += int64(2*n*n + 8*n*(j+1))
		hj[j+1] = blas64.Nrm2(wv)
		st.GMRES++
		k = j + 1
		for i := 0; i < j; i++ {
			a, b := hj[i], hj[i+1]
			hj[i], hj[i+1] = cs[i]*a+sn[i]*b, -sn[i]*a+cs[i]*b
		}
		rho := math.Hypot(hj[j], hj[j+1])
		if rho == 0 {
			h[j] = hj
			k = j
			break
		}
		cs[j], sn[j] = hj[j]/rho, hj[j+1]/rho
		next := hj[j+1]
		hj[j], hj[j+1] = rho, 0
		h[j] = hj
		g[j+1] = -sn[j] * g[j]
		g[j] = cs[j] * g[j]
		if math.Abs(g[j+1]) <= tol*beta || next == 0 || j == m-1 {
			break
		}
		blas64.Scal(1/next, wv)
		vs = append(vs, w)
	}
	// Back substitution: H(0:k, 0:k)·c = g(0:k).
	c := make([]float64, k)
	for i := k - 1; i >= 0; i-- {
		s := g[i]
		for l := i + 1; l < k; l++ {
			s -= h[l][i] * c[l]
		}
		c[i] = s / h[i][i]
	}
	for i := range k {
		blas64.Axpy(c[i], blas64.Vector{N: n, Inc: 1, Data: vs[i]}, blas64.Vector{N: n, Inc: 1, Data: d})
	}
	return d, k
}

// stepTol is the relative residual one GMRES solve aims at when the
// backward error is eta and the target tol: gmresTol, or tighter (to
// gmresTolMin) when a gain of gmresTol would leave eta above tol.
func stepTol(eta, tol float64) float64 {
	return min(gmresTol, max(gmresTolMin, gmresAim*tol/eta))
}

// krylovDim is the Krylov dimension of one GMRES solve for order n.
func krylovDim(n int) int { return max(1, min(gmresMax, max(8, n/gmresFrac), n)) }

// Cond returns an estimate of κ₁(A) = ‖A‖₁·‖A⁻¹‖₁, as LAPACK's dgecon:
// Higham's refinement of Hager's 1-norm estimator (Higham, ACM TOMS 14(4),
// 1988, Alg. 4.1; LAPACK's dlacn2), each of its at most five steps a solve
// with A and one with Aᵀ through the factors, O(n²) on the host. It is a
// lower bound of ‖A⁻¹‖₁ for the factored matrix, usually within a factor 3
// of it; since the factors are those of A perturbed by about ε‖A‖ (ε =
// 2⁻¹¹ for FP16 factors, 4e-8 for compensated ones), the estimate of A
// itself is reliable while it is well below 1/ε and saturates near 1/ε
// beyond. Computed once per factorization.
func (f *Factorization) Cond() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return math.NaN()
	}
	return f.condLocked()
}

func (f *Factorization) condLocked() float64 {
	if f.cond > 0 {
		return f.cond
	}
	start := time.Now()
	defer func() { f.cfg.stats.Host += time.Since(start) }()
	tmp := make([]float64, f.n)
	// A⁻¹·v = D_c·B⁻¹·D_r·v and A⁻ᵀ·v = D_r·B⁻ᵀ·D_c·v.
	solveA := func(v []float64) {
		for i := range v {
			v[i] *= f.r[i]
		}
		f.applyInv(v, tmp)
		for i := range v {
			v[i] *= f.c[i]
		}
	}
	solveAT := func(v []float64) {
		for i := range v {
			v[i] *= f.c[i]
		}
		f.applyInvT(v, tmp)
		for i := range v {
			v[i] *= f.r[i]
		}
	}
	f.cond = f.norm1A * invNorm1(f.n, solveA, solveAT)
	if math.IsNaN(f.cond) || f.cond == 0 {
		f.cond = math.Inf(1)
	}
	return f.cond
}

// condBLocked estimates κ₁(B) = ‖B‖₁·‖B⁻¹‖₁ for the equilibrated B whose
// factors these are, by the estimator Cond uses for A. GMRES-IR's
// convergence depends on B's conditioning, not A's: a matrix whose rows
// and columns are scaled by 10^±8 has κ(A) near 1e16 and the κ(B) of
// the unscaled matrix. The estimate is not cached (it is read for the
// choice of factors and when a solve fails, with the factors of the
// time); ‖B‖₁ is, on first use.
func (f *Factorization) condBLocked() float64 {
	start := time.Now()
	defer func() { f.cfg.stats.Host += time.Since(start) }()
	n := f.n
	if f.norm1B == 0 {
		col := make([]float64, n)
		for i := range n {
			for j, v := range f.b[i*n : (i+1)*n] {
				col[j] += math.Abs(v)
			}
		}
		f.norm1B = slices.Max(col)
	}
	tmp := make([]float64, n)
	k := f.norm1B * invNorm1(n, func(v []float64) { f.applyInv(v, tmp) }, func(v []float64) { f.applyInvT(v, tmp) })
	if math.IsNaN(k) || k == 0 {
		return math.Inf(1)
	}
	return k
}

// invNorm1 estimates ‖M⁻¹‖₁ from solve (v ← M⁻¹·v) and solveT (v ← M⁻ᵀ·v):
// Higham's refinement of Hager's estimator (see Cond), a lower bound,
// usually within a factor 3.
func invNorm1(n int, solve, solveT func(v []float64)) float64 {
	norm1 := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += math.Abs(x)
		}
		return s
	}
	sign := func(v []float64) []float64 {
		s := make([]float64, len(v))
		for i, x := range v {
			s[i] = 1
			if x < 0 {
				s[i] = -1
			}
		}
		return s
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = 1 / float64(n)
	}
	solve(x)
	est := norm1(x)
	xi := sign(x)
	z := append([]float64(nil), xi...)
	solveT(z)
	for iter := 0; iter < 4 && n > 1; iter++ {
		j, zx := 0, 0.0
		for i := range z {
			if math.Abs(z[i]) > math.Abs(z[j]) {
				j = i
			}
			zx += z[i] * x[i]
		}
		if math.Abs(z[j]) <= zx {
			break // Hager's test: x is a local maximum
		}
		clear(x)
		x[j] = 1
		y := append([]float64(nil), x...)
		solve(y)
		e := norm1(y)
		s := sign(y)
		same := true
		for i := range s {
			if s[i] != xi[i] {
				same = false
				break
			}
		}
		if e <= est || same {
			est = math.Max(est, e)
			break
		}
		est, xi = e, s
		z = append(z[:0], xi...)
		solveT(z)
	}
	// Higham's alternating-sign vector guards against the estimator's
	// known counterexamples.
	alt := make([]float64, n)
	for i := range alt {
		alt[i] = 1 + float64(i)/math.Max(1, float64(n-1))
		if i%2 == 1 {
			alt[i] = -alt[i]
		}
	}
	solve(alt)
	return math.Max(est, 2*norm1(alt)/(3*float64(n)))
}

// Stats returns the work so far: the factorization's and that of every
// solve since.
func (f *Factorization) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.History = append([]float64(nil), s.History...)
	s.Cond = f.cond
	s.finish()
	return s
}

// Dims returns n, the order of the factored matrix.
func (f *Factorization) Dims() int { return f.n }

// Close releases the factors; later calls fail with ErrInvalid.
func (f *Factorization) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.lu, f.b = nil, nil
}
