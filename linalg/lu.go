package linalg

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/isnil"
	"github.com/anemone-go/anemone/internal/parallel"
	"github.com/anemone-go/anemone/precision"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// Factorization is P·B = L·U for the equilibrated B = D_r·A·D_c of a
// square matrix A (see Factorize), held on the host in float64: L unit
// lower triangular, U upper triangular, P a row permutation. The factors
// are those of an fp16 (or compensated) factorization, so they are a
// preconditioner, not a solver: Solve and SolveMany refine with them in
// float64 (GMRES-IR). A Factorization is safe for concurrent use; Close
// releases nothing the garbage collector would not, and makes every later
// call fail.
type Factorization struct {
	mu     sync.Mutex
	cfg    *config
	n      int
	a      mat.Matrix // the caller's A, for nothing but error messages
	b      []float64  // B = D_r·A·D_c, row-major, float64
	r, c   []float64  // the power-of-two scalings
	normA  float64    // ‖A‖∞
	normB  float64    // ‖B‖∞
	norm1A float64    // ‖A‖₁
	norm1B float64    // ‖B‖₁, 0 until condBLocked needs it
	maxB   float64    // max|b_ij|
	lu     []float64  // L (strictly lower, unit diagonal implied) and U, row-major
	perm   []int      // row i of P·B is row perm[i] of B
	mode   precision.Mode
	eps    float64 // the factors' relative accuracy, about: 2⁻¹¹ (FP16), 4e-8 (Compensated)
	cond   float64 // κ₁(A) estimate of the current factors, 0 until computed
	stats  Stats
	closed bool
	// upgraded: the FP16 factors were replaced by compensated ones (once).
	upgraded bool
}

// Factorize computes an LU factorization with partial pivoting of the
// square matrix a, the O(n³) work on the device:
//
//  1. A is equilibrated by powers of two, B = D_r·A·D_c (iterated row and
//     column scaling, see equilibrateIter), exactly.
//  2. Right-looking blocked LU with partial pivoting in panels of b
//     columns (b from 16 to 256 with n, Settings.Block overrides). The
//     host factors each n×b panel (O(n·b²): in float32, recursively, for
//     the FP16 factors, see panelLU32; in float64, LAPACK's dgetrf, for
//     the compensated ones) and forms the multipliers; the device updates the trailing matrix,
//     A₂₂ −= L₂₁·U₁₂, in one program compiled once per (n, b). By
//     default (and with Precision FP16) the whole n×n matrix stays
//     resident on the device in fp16 for the whole factorization; with
//     Precision Compensated (or Float64) it stays on the host in float64
//     and the device computes each L₂₁·U₁₂ as a compensated product.
//  3. With the default Precision, if the FP16 factors' condition
//     estimates of A (Cond) and of the equilibrated B both say they cannot
//     precondition (κ₁·2⁻¹¹ > fp16CondLimit), or the FP16 elimination
//     meets an exactly zero pivot, the matrix is factored again with
//     compensated products.
//
// Rows are never moved on the device: the pivot rows of each step are
// gathered by a product (W·A with W = L₁₁⁻¹·S, S selecting the pivot
// rows), which also gives U₁₂; the rows already eliminated get zero
// multipliers. One dispatch per panel after the first.
//
// Errors: ErrShape (nil, empty, not square), ErrRange (NaN, ±Inf, or a
// row whose absolute sum, hence ‖A‖∞, overflows float64),
// ErrSingular (a zero row or column, or an exactly zero pivot in float64),
// and the device's errors.
func Factorize(a mat.Matrix, s *Settings) (*Factorization, error) {
	const fn = "Factorize"
	cfg, err := resolve(fn, s)
	if err != nil {
		return nil, err
	}
	user := cfg.stats
	f, err := factorize(fn, cfg, a)
	if f == nil {
		cfg.stats.finish()
		return nil, err
	}
	f.stats = *cfg.stats
	f.cfg.stats = &f.stats
	*user = f.Stats()
	return f, nil
}

func factorize(fn string, cfg *config, a mat.Matrix) (*Factorization, error) {
	if cfg.tol == 0 {
		cfg.tol = DefaultTol
	}
	start := time.Now()
	e, err := equilibrateNorms(fn, a)
	if err != nil {
		return nil, err
	}
	n := e.n
	f := &Factorization{cfg: cfg, n: n, a: a, b: e.b, r: e.r, c: e.c, maxB: e.maxB}
	f.normA, f.norm1A, f.normB = e.normA, e.norm1A, e.normB
	cfg.stats.HostFlops += int64(6 * n * n)
	cfg.stats.Host += time.Since(start)
	mode := cfg.mode
	if mode == 0 {
		mode = precision.FP16
	}
	if mode == precision.FP16 {
		err = f.factorFP16(fn)
		if err == errZeroPivot && cfg.mode == 0 {
			mode, err = precision.Compensated, nil
		} else if err == errZeroPivot {
			return nil, fmt.Errorf("linalg: %s: the FP16 elimination met an exactly zero pivot: the matrix is singular, or too ill-conditioned for FP16 updates; use the default Precision or Compensated: %w", fn, ErrSingular)
		} else if err != nil {
			return nil, err
		}
		if err == nil && mode == precision.FP16 && cfg.mode == 0 {
			// κ₁(A) first (Cond needs it anyway); only when it is large,
			// κ₁(B), which bounds what the factors can do: equilibration
			// may have removed what made A ill-conditioned.
			if f.Cond()*0x1p-11 > fp16CondLimit && f.condBLocked()*0x1p-11 > fp16CondLimit {
				mode = precision.Compensated
				f.upgraded = true
			}
		}
	}
	if mode != precision.FP16 {
		if err := f.factorHost(fn, mode); err != nil {
			return nil, err
		}
		f.condLocked()
	}
	cfg.stats.Mode = f.mode
	return f, nil
}

// fp16CondLimit: the FP16 factors are kept while κ₁(A)·2⁻¹¹ or κ₁(B)·2⁻¹¹
// (the FP16 factors' condition estimates, for A and for the equilibrated
// B they factor, times fp16's unit roundoff) is at most this.
// Beyond it GMRES-IR could not converge in few iterations (its
// preconditioned matrix has condition number of order (1 + κ·2⁻¹¹)²,
// Carson and Higham 2017, §3), and the compensated factors are computed
// at once. Between the two, the first refinement step decides (see
// fp16StepGain): κ₁ exceeds κ₂ by up to a factor n, so the estimate alone
// would reject FP16 factors that work.
const fp16CondLimit = 4096

var errZeroPivot = fmt.Errorf("zero pivot")

// blockSize is the panel width for n: more columns mean fewer dispatches
// (each reads the whole resident matrix) and more host work in the panels
// (O(n²·b) in all).
func blockSize(n, override int) int {
	if override > 0 {
		return min(override, n)
	}
	switch {
	case n >= 2048:
		return 256
	case n >= 512:
		return 128
	case n >= 128:
		return 64
	case n >= 32:
		return 16
	}
	return max(1, (n+1)/2)
}

// panelLU factors the m×bw panel (row-major in p, rows act) with partial
// pivoting (LAPACK's dgetrf) and returns the rows in pivot order: rows[:bw]
// are the pivot rows, rows[bw:] the rest, p permuted likewise. ok is false
// when a pivot is exactly zero.
func panelLU(p []float64, m, bw int, act []int, st *Stats) (rows []int, ok bool) {
	ipiv := make([]int, bw)
	ok = lapack64.Getrf(blas64.General{Rows: m, Cols: bw, Stride: bw, Data: p}, ipiv)
	st.HostFlops += int64(2*m*bw*bw - 2*bw*bw*bw/3)
	rows = append([]int(nil), act...)
	for i, q := range ipiv {
		rows[i], rows[q] = rows[q], rows[i]
	}
	return rows, ok
}

// panelLU32 is panelLU on a float32 panel, for the FP16 factorization:
// its panels hold fp16 values from the device (the first, B rounded to
// float32, finer than the device's copy), and its factors are a
// preconditioner accurate to fp16's 2⁻¹¹, which float32's rounding (2⁻²⁴,
// times the growth of b columns) does not disturb. From panel32Min
// columns it runs getrf32, whose products hold nearly all of the panel's
// flops and run in float32 at about twice float64's speed; narrower
// panels go through float64 and LAPACK's dgetrf, whose unblocked
// elimination is the faster there (BenchmarkPanels). The multipliers are rounded to fp16 afterwards, as the device
// uses them.
func panelLU32(p []float32, m, bw int, act []int, st *Stats) (rows []int, ok bool) {
	if bw < panel32Min {
		p64 := make([]float64, m*bw)
		for i, v := range p[:m*bw] {
			p64[i] = float64(v)
		}
		rows, ok = panelLU(p64, m, bw, act, st)
		for i, v := range p64 {
			p[i] = float32(v)
		}
		return rows, ok
	}
	ipiv := make([]int, bw)
	ok = getrf32(m, bw, p, bw, ipiv)
	st.HostFlops += int64(2*m*bw*bw - 2*bw*bw*bw/3)
	rows = append([]int(nil), act...)
	for i, q := range ipiv {
		rows[i], rows[q] = rows[q], rows[i]
	}
	return rows, ok
}

// panel32Min is the narrowest panel getrf32 factors (see panelLU32 and
// BenchmarkPanels: on 2048×256 panels it beat dgetrf by about 1.4× on
// this project's test machine, drew on 512×128 and lost on 256×64).
const panel32Min = 256

// unitLowerInverse returns L₁₁⁻¹ for the unit lower triangle of the bw×bw
// top of p (row stride bw): LAPACK's dtrtri, on a copy whose upper
// triangle is zeroed.
func unitLowerInverse[T float32 | float64](p []T, bw int) []float64 {
	inv := make([]float64, bw*bw)
	for i := range bw {
		for j, v := range p[i*bw : i*bw+i] {
			inv[i*bw+j] = float64(v)
		}
		inv[i*bw+i] = 1
	}
	lapack64.Trtri(blas64.Triangular{Uplo: blas.Lower, Diag: blas.Unit, N: bw, Stride: bw, Data: inv})
	return inv
}

// outBound is 2¹⁴ shrunk by the worst rounding growth of a product with
// contraction length k: fp16 rounding of both operands and the output,
// and, on an fp16 accumulator, of every partial sum ((1 + 2⁻¹⁰)^(k+4)
// covers both; with a float32 accumulator the sum's own error is below
// k·2⁻²⁴, far less).
func outBound(k int) float64 { return engine.Headroom / math.Pow(1+0x1p-10, float64(k+4)) }

// factorFP16 is the device-resident factorization (see Factorize): the
// n×n matrix lives in the program's input surface, scaled by 2^σ, and
// every dispatch computes, with operands the host writes each step,
//
//	U  = W·A             (W = L₁₁⁻¹·S: the pivot rows, solved by L₁₁)
//	A' = A − L₂₁·U       (L₂₁ zero on the rows already eliminated)
//	m  = max|A'|
//
// and A' becomes the next dispatch's A (Session.Carry). The host reads U
// (b×n), the next panel's b columns of A' on the device's surface, and m:
// O(n·b) a step, O(n²) in all.
//
// Range, by construction: before each dispatch the host bounds every
// product output by m·g, g = max(1 + max_i Σ_t |l_it|·w_t, max_t w_t) with
// w_t = Σ_s |W_ts| (the device's A' and U satisfy |U| ≤ max_t w_t·m and
// |A'| ≤ m + max_i Σ_t |l_it|·|U_t|), and keeps m·g ≤ outBound(b) < 2¹⁴ by
// rescaling the resident matrix by a power of two (a host read and write
// of it, exact, rare); when m·g falls below 2⁻⁶ of the bound it scales up,
// which keeps the shrinking Schur complements of ill-conditioned matrices
// out of fp16's subnormal range.
func (f *Factorization) factorFP16(fn string) error {
	cfg, n := f.cfg, f.n
	b := blockSize(n, cfg.block)
	st := cfg.stats
	st.Block = b
	var prog *luProgram
	if n > b {
		var err error
		if prog, err = newLUProgram(fn, cfg, n, b); err != nil {
			return err
		}
		defer prog.close()
	}
	hostStart := time.Now()
	deviceTime := time.Duration(0)
	defer func() { st.Host += time.Since(hostStart) - deviceTime }()

	// U goes to its place in the packed factors at once; the multipliers
	// wait by original row until the pivot order is known (assemble).
	f.lu = make([]float64, n*n)
	lbuf := make([]float64, n*n)
	f.perm = make([]int, 0, n)
	act := make([]int, n)
	for i := range act {
		act[i] = i
	}
	// The panel is in float32 (see panelLU32), in the units of the
	// resident matrix, 2^pexp·B: the first comes from B itself (pexp = 0),
	// the later ones from the device's fp16 surface (pexp = σ), exactly.
	bw := min(b, n)
	panel := make([]float32, n*bw) // row i of the panel: B[act[i]][c:c+bw]·2^pexp
	for i := range n {
		for j, v := range f.b[i*n : i*n+bw] {
			panel[i*bw+j] = float32(v)
		}
	}
	pexp := 0
	sigma := 0 // the device holds 2^sigma·A
	mx := 0.0  // max |resident entry|, in device units
	written := false
	var wsum []float64
	if prog != nil {
		wsum = make([]float64, b)
	}
	for c := 0; c < n; c += b {
		bw = min(b, n-c)
		m := len(act)
		rows, ok := panelLU32(panel[:m*bw], m, bw, act, st)
		if !ok {
			return errZeroPivot
		}
		// Record the pivot rows: L₁₁ and U₁₁ (in B's units).
		for t := range bw {
			f.perm = append(f.perm, rows[t])
			pr := panel[t*bw : (t+1)*bw]
			l := lbuf[rows[t]*n+c : rows[t]*n+c+t]
			for s, v := range pr[:t] {
				l[s] = float64(v)
			}
			u := f.lu[(c+t)*n+c+t : (c+t)*n+c+bw]
			for s, v := range pr[t:] {
				u[s] = math.Ldexp(float64(v), -pexp)
			}
		}
		// The rows left, in ascending order: the next panel is gathered
		// from the device's output, and the next operands scattered into
		// it, by these indices, which then run in order.
		last := c+bw >= n
		act = slices.Clone(rows[bw:])
		slices.Sort(act)
		// W = L₁₁⁻¹·S (rounded to fp16, as the device uses it), and its
		// row sums w_t for the bound g of the outputs relative to m.
		var inv []float64
		wmax := 0.0
		if !last {
			inv = unitLowerInverse(panel[:bw*bw], bw)
			st.HostFlops += int64(bw * bw * bw / 3)
			for t := range bw {
				wsum[t] = 0
				for s := 0; s <= t; s++ {
					v := fp16.Round64(inv[t*bw+s])
					inv[t*bw+s] = v
					wsum[t] += math.Abs(v)
				}
				wmax = math.Max(wmax, wsum[t])
			}
		}
		// Multipliers of the other rows, rounded to fp16 as the device
		// will use them (in the panel too, which the step's operands are
		// taken from), and max_i Σ_t |l_it|·w_t, in one pass split across
		// cores by rows.
		k := parts(m-bw, bw)
		lsums := make([]float64, k)
		parallel.Ranges(m-bw, k, func(part, lo, hi int) {
			lsum := 0.0
			for i := bw + lo; i < bw+hi; i++ {
				row := panel[i*bw : (i+1)*bw]
				l := lbuf[rows[i]*n+c : rows[i]*n+c+bw]
				s := 0.0
				for t, v := range row {
					r := fp16.Round32(v)
					row[t], l[t] = r, float64(r)
					if !last {
						// Rounded before the sum, so arm64 does not fuse
						// it into an FMA: g picks σ by its binade.
						s += float64(math.Abs(float64(r)) * wsum[t])
					}
				}
				lsum = math.Max(lsum, s)
			}
			lsums[part] = lsum
		})
		st.HostFlops += int64((m - bw) * bw)
		if last {
			break
		}
		lsum := slices.Max(lsums)
		nbw := min(b, n-c-bw)
		g := math.Max(1+lsum, wmax)
		bound := outBound(b)
		if !(g <= 0x1p24) {
			return fmt.Errorf("linalg: %s: the panel at column %d has multipliers whose products could reach %.3g times the matrix's largest entry, beyond what fp16 can scale (pivot growth); use Precision Compensated: %w", fn, c, g, ErrRange)
		}
		// Scale: the largest σ' with max|2^σ'·A|·g ≤ bound.
		if !written {
			_, e := math.Frexp(bound / (g * f.maxB)) // bound/(g·max|B|) ∈ [2^(e−1), 2^e)
			sigma = e - 2                            // one bit below the largest
			if err := prog.writeMatrix(fn, f.b, sigma); err != nil {
				return err
			}
			mx = math.Ldexp(f.maxB, sigma)
			written = true
		} else if mx*g > bound || (mx > 0 && mx*g < bound*0x1p-6) {
			_, e := math.Frexp(bound / (g * mx))
			if err := prog.rescale(fn, e-2); err != nil {
				return err
			}
			sigma += e - 2
			mx = math.Ldexp(mx, e-2)
			st.Rescales++
		}
		if err := prog.writeOps(fn, inv, panel, rows, bw, m, c); err != nil {
			return err
		}
		d, err := prog.run(fn)
		deviceTime += d
		if err != nil {
			return err
		}
		if mx, err = prog.readStep(fn, f.lu, panel, act, bw, c, nbw, -sigma); err != nil {
			return err
		}
		pexp = sigma
	}
	f.assemble(lbuf)
	f.mode = precision.FP16
	f.eps = 0x1p-11
	return nil
}

// assemble completes the packed factors of P·B, whose U part is in
// place, with the multipliers (lbuf, by original row).
func (f *Factorization) assemble(lbuf []float64) {
	n := f.n
	parallel.Ranges(n, parts(n, n/2), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			copy(f.lu[i*n:i*n+i], lbuf[f.perm[i]*n:f.perm[i]*n+i])
		}
	})
}

// factorHost is the compensated factorization: the trailing matrix stays
// on the host in float64, the host factors the panels and solves for U₁₂
// (O(n²·b) in all), and the device computes every L₂₁·U₁₂ (n×b times
// b×n, zero-padded to one shape) in mode; the host subtracts it. The
// products' relative error (about 4e-8 for 5 compensated limbs) bounds the
// factors' accuracy.
func (f *Factorization) factorHost(fn string, mode precision.Mode) error {
	cfg, n := f.cfg, f.n
	b := blockSize(n, cfg.block)
	st := cfg.stats
	st.Block = b
	var pl *plan
	if n > b {
		var err error
		if pl, err = newShapePlan(fn, cfg, n, b, n, mode); err != nil {
			return err
		}
		defer pl.close()
	}
	t := append([]float64(nil), f.b...) // the trailing matrix, by original row
	lbuf := make([]float64, n*n)
	f.lu = make([]float64, n*n)
	ubuf := f.lu // U in place; assemble adds L
	f.perm = f.perm[:0]
	act := make([]int, n)
	for i := range act {
		act[i] = i
	}
	lm := mat.NewDense(n, b, nil)
	um := mat.NewDense(b, n, nil)
	var d mat.Dense
	hostStart := time.Now()
	hostPaused := time.Duration(0)
	defer func() { st.Host += time.Since(hostStart) - hostPaused }()
	for c := 0; c < n; c += b {
		bw := min(b, n-c)
		m := len(act)
		panel := make([]float64, m*bw)
		for i, r := range act {
			copy(panel[i*bw:(i+1)*bw], t[r*n+c:r*n+c+bw])
		}
		rows, ok := panelLU(panel, m, bw, act, st)
		if !ok {
			return fmt.Errorf("linalg: %s: elimination with partial pivoting met an exactly zero pivot at column %d (in float64 arithmetic on the compensated trailing matrix): a is singular: %w", fn, c, ErrSingular)
		}
		for s := range bw {
			f.perm = append(f.perm, rows[s])
			pr := panel[s*bw : (s+1)*bw]
			copy(lbuf[rows[s]*n+c:rows[s]*n+c+s], pr[:s])
			copy(ubuf[(c+s)*n+c+s:(c+s)*n+c+bw], pr[s:])
		}
		for i := bw; i < m; i++ {
			copy(lbuf[rows[i]*n+c:rows[i]*n+c+bw], panel[i*bw:(i+1)*bw])
		}
		act = rows[bw:]
		if c+bw >= n {
			break
		}
		// U₁₂ = L₁₁⁻¹·A₁₂ on the host (bw² per column).
		w := n - c - bw
		u12 := make([]float64, bw*w)
		for s := range bw {
			copy(u12[s*w:(s+1)*w], t[rows[s]*n+c+bw:(rows[s]+1)*n])
		}
		blas64.Trsm(blas.Left, blas.NoTrans, 1,
			blas64.Triangular{Uplo: blas.Lower, Diag: blas.Unit, N: bw, Stride: bw, Data: panel[:bw*bw]},
			blas64.General{Rows: bw, Cols: w, Stride: w, Data: u12})
		st.HostFlops += int64(bw * bw * w)
		for s := range bw {
			copy(ubuf[(c+s)*n+c+bw:(c+s+1)*n], u12[s*w:(s+1)*w])
		}
		// The device: L₂₁·U₁₂, zero-padded to n×b·b×n.
		lraw, uraw := lm.RawMatrix(), um.RawMatrix()
		clear(lraw.Data)
		clear(uraw.Data)
		for _, r := range act {
			copy(lraw.Data[r*lraw.Stride:r*lraw.Stride+bw], lbuf[r*n+c:r*n+c+bw])
		}
		for s := range bw {
			copy(uraw.Data[s*uraw.Stride+c+bw:(s+1)*uraw.Stride], u12[s*w:(s+1)*w])
		}
		// plan accounts its own host and device time.
		paused := time.Now()
		err := pl.setA(fn, lm)
		if err == nil {
			err = pl.apply(fn, &d, um)
		}
		hostPaused += time.Since(paused)
		if err != nil {
			return err
		}
		draw := d.RawMatrix()
		for _, r := range act {
			tr := t[r*n+c+bw : (r+1)*n]
			dr := draw.Data[r*draw.Stride+c+bw : r*draw.Stride+n]
			for j := range tr {
				tr[j] -= dr[j]
			}
		}
		st.HostFlops += int64(len(act) * w)
	}
	f.assemble(lbuf)
	f.mode = mode
	f.cond = 0 // an estimate of the factors just replaced
	// The narrow accumulator's 3-bit digits carry the same 30 bits.
	f.eps = 40 * 0x1p-30
	if mode == precision.Float64 {
		f.eps = 0x1p-50
	}
	return nil
}

// applyInv overwrites v (length n, in B's scaling) by (P·B)⁻¹-applied:
// v ← U⁻¹·L⁻¹·P·v, with the float64 factors.
func (f *Factorization) applyInv(v, tmp []float64) {
	n := f.n
	for i, p := range f.perm {
		tmp[i] = v[p]
	}
	solveLU(f.lu, n, tmp, false)
	copy(v, tmp)
	f.cfg.stats.HostFlops += int64(2 * n * n)
}

// applyInvT overwrites v by (P·B)⁻ᵀ-applied: v ← Pᵀ·L⁻ᵀ·U⁻ᵀ·v.
func (f *Factorization) applyInvT(v, tmp []float64) {
	n := f.n
	copy(tmp, v)
	solveLU(f.lu, n, tmp, true)
	for i, p := range f.perm {
		v[p] = tmp[i]
	}
	f.cfg.stats.HostFlops += int64(2 * n * n)
}

// equilibrateIter checks that a is square and finite and scales it by
// powers of two, B = D_r·A·D_c: precision.Equilibrate (Higham, Pranesh
// and Zounon 2019, Alg. 2.1), then up to equilIters sweeps of Ruiz's
// iteration (Ruiz 2001, the iterated form the same paper discusses):
// every row and then every column divided by the power of two nearest the
// square root of its largest entry, until every row and column maximum
// lies in (½, 2]; then Alg. 2.1 again, so that every |b_ij| ≤ 1. For
// A = D₁·G·D₂ with any diagonal D₁, D₂ this recovers G up to powers of
// two within a few sweeps, which the single pass of Alg. 2.1 does not
// when both sides are scaled. A zero row or column is ErrSingular.
func equilibrateIter(fn string, a mat.Matrix) (n int, b, r, c []float64, err error) {
	e, err := equilibrateNorms(fn, a)
	if err != nil {
		return 0, nil, nil, nil, err
	}
	return e.n, e.b, e.r, e.c, nil
}

// scaledMatrix is equilibrateIter's result with the norms the
// factorization needs, taken in the same passes.
type scaledMatrix struct {
	n             int
	b, r, c       []float64
	normA, norm1A float64 // ‖A‖∞, ‖A‖₁
	normB, maxB   float64 // ‖B‖∞, max|b_ij|
}

// equilibrateNorms is equilibrateIter in few passes over the matrix, each
// on every core (parallel.Ranges): the first checks finiteness and takes A's
// norms and maxima; each of Ruiz's sweeps and Alg. 2.1 then read A once,
// scaling a row and taking its share of the column maxima while it is in
// cache, and only the last pass writes B (and takes B's norm). Ruiz's
// iteration stops at the first sweep that changes no scale.
func equilibrateNorms(fn string, a mat.Matrix) (*scaledMatrix, error) {
	if isnil.Matrix(a) {
		return nil, fmt.Errorf("linalg: %s: a is nil: %w", fn, ErrShape)
	}
	m, n := a.Dims()
	if m == 0 || n == 0 {
		return nil, fmt.Errorf("linalg: %s: a is empty (%d×%d): %w", fn, m, n, ErrShape)
	}
	if m != n {
		if _, _, err := checkMatrix(fn, "a", a); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("linalg: %s: a is %d×%d; it must be square: %w", fn, m, n, ErrShape)
	}
	e := &scaledMatrix{n: n, b: make([]float64, n*n), r: make([]float64, n), c: make([]float64, n)}
	b, r, c := e.b, e.r, e.c
	for i := range n {
		r[i], c[i] = 1, 1
	}
	// src is row i of A: the caller's storage when it is a RawMatrixer,
	// else b, which the first pass fills.
	var raw blas64.General
	if rm, ok := a.(mat.RawMatrixer); ok {
		if raw = rm.RawMatrix(); raw.Rows != n || raw.Cols != n {
			raw.Data = nil
		}
	}
	src := func(i int) []float64 {
		if raw.Data != nil {
			return raw.Data[i*raw.Stride : i*raw.Stride+n]
		}
		return b[i*n : (i+1)*n]
	}
	p := parts(n, n)
	rowMax, rowSum, colMax := make([]float64, n), make([]float64, n), make([]float64, n)
	partMax := make([][]float64, p) // each part's column maxima
	for k := range p {
		partMax[k] = make([]float64, n)
	}
	// pass runs row(i, its part's column maxima) for every row, then
	// reduces the parts' column maxima into colMax.
	pass := func(row func(i int, cm []float64)) {
		parallel.Ranges(n, p, func(k, lo, hi int) {
			cm := partMax[k]
			clear(cm)
			for i := lo; i < hi; i++ {
				row(i, cm)
			}
		})
		copy(colMax, partMax[0])
		for _, cm := range partMax[1:] {
			for j, v := range cm {
				if v > colMax[j] {
					colMax[j] = v
				}
			}
		}
	}
	// The first pass: finiteness (an infinite or NaN row sum), A's row
	// maxima and sums, and its column sums (one slice per part).
	colSum := make([][]float64, p)
	for k := range p {
		colSum[k] = make([]float64, n)
	}
	parallel.Ranges(n, p, func(k, lo, hi int) {
		cm, cs := partMax[k], colSum[k]
		for i := lo; i < hi; i++ {
			row := b[i*n : (i+1)*n]
			if raw.Data != nil {
				row = src(i)
			} else {
				for j := range row {
					row[j] = a.At(i, j)
				}
			}
			mx, sum := 0.0, 0.0
			cm, cs := cm[:n], cs[:n]
			for j, v := range row {
				v = math.Abs(v)
				if v > mx {
					mx = v
				}
				sum += v
				if v > cm[j] {
					cm[j] = v
				}
				cs[j] += v
			}
			rowMax[i], rowSum[i] = mx, sum
		}
	})
	for i := range n {
		if s := rowSum[i]; s-s != 0 { // NaN or ±Inf somewhere in row i
			_, _, err := checkMatrix(fn, "a", a)
			if err == nil { // finite entries whose sum overflows
				err = fmt.Errorf("linalg: %s: row %d of a sums to %v in magnitude; scale a below 1e300 first: %w", fn, i, s, ErrRange)
			}
			return nil, err
		}
		e.normA = max(e.normA, rowSum[i])
	}
	for j := range n {
		s, cm := 0.0, 0.0
		for k := range p {
			s += colSum[k][j]
			cm = max(cm, partMax[k][j])
		}
		e.norm1A = max(e.norm1A, s)
		colMax[j] = cm
	}
	for i := range n {
		if rowMax[i] == 0 {
			return nil, fmt.Errorf("linalg: %s: row %d of a is zero, so a is singular: %w", fn, i, ErrSingular)
		}
		if colMax[i] == 0 {
			return nil, fmt.Errorf("linalg: %s: column %d of a is zero, so a is singular: %w", fn, i, ErrSingular)
		}
	}
	// sweep scales every row by rowScale of its maximum, taking the
	// column maxima of the row-scaled matrix as it goes, then every column
	// by colScale of its maximum; it reports whether any scale was not 1.
	sweep := func(rowScale, colScale func(float64) float64) bool {
		pass(func(i int, cm []float64) {
			row := src(i)
			cs, cm := c[:len(row)], cm[:len(row)]
			mx := 0.0
			for j, v := range row {
				if v = math.Abs(v) * cs[j]; v > mx {
					mx = v
				}
			}
			f := rowScale(mx * r[i])
			r[i] *= f
			ri := r[i]
			for j, v := range row {
				if v = math.Abs(v) * cs[j] * ri; v > cm[j] {
					cm[j] = v
				}
			}
			rowMax[i] = f // the row's scale, read below
		})
		changed := false
		for _, f := range rowMax {
			changed = changed || f != 1
		}
		for j := range n {
			f := colScale(colMax[j])
			c[j] *= f
			changed = changed || f != 1
		}
		return changed
	}
	// Ruiz's iteration, then Alg. 2.1. Where every row maximum and every
	// column maximum of A lie within a factor 2 of the largest entry, and
	// that entry within 2^±8 of 1, the sweeps are skipped: one power of
	// two would put every maximum in Ruiz's stopping interval (½, 2], and
	// Alg. 2.1 applies it, on the rows, which it leaves within 2^±9 of 1.
	// Farther from 1 the sweeps run, and share the scale between D_r and
	// D_c (square roots), so that D_r·b cannot overflow for any b that
	// A·x can produce.
	if m := slices.Max(rowMax); spread(rowMax) > 2 || spread(colMax) > 2 || m < 0x1p-8 || m > 0x1p8 {
		for range equilIters {
			if !sweep(sqrtPow2, sqrtPow2) {
				break
			}
		}
	}
	// Alg. 2.1: rows into (½, 1], then columns (whose factors are ≥ 1).
	sweep(pow2AtMostOne, pow2AtMostOne)
	// The write: B = D_r·A·D_c, its row sums and maxima.
	parallel.Ranges(n, p, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			row, out := src(i), b[i*n:(i+1)*n]
			out, cs := out[:len(row)], c[:len(row)]
			ri := r[i]
			mx, sum := 0.0, 0.0
			for j, v := range row {
				w := ri * v * cs[j]
				out[j] = w
				w = math.Abs(w)
				if w > mx {
					mx = w
				}
				sum += w
			}
			rowMax[i], rowSum[i] = mx, sum
		}
	})
	for i := range n {
		e.normB = max(e.normB, rowSum[i])
		e.maxB = max(e.maxB, rowMax[i])
	}
	return e, nil
}

// spread is max(v)/min(v) for positive v.
func spread(v []float64) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return hi / lo
}

// equilIters bounds Ruiz's sweeps: each halves the logarithm of every
// row and column imbalance, so 2^±64 imbalances settle within about 7.
const equilIters = 12

// sqrtPow2 is the power of two nearest 1/√m.
func sqrtPow2(m float64) float64 {
	_, e := math.Frexp(m) // m ∈ [2^(e−1), 2^e)
	return math.Ldexp(1, -(e-1)/2)
}

// pow2AtMostOne returns 2^−⌈log₂ m⌉, the power of two that puts m in
// (½, 1]; 1 for m = 0.
func pow2AtMostOne(m float64) float64 {
	if m == 0 {
		return 1
	}
	fr, p := math.Frexp(m)
	if fr == 0.5 {
		p--
	}
	return math.Ldexp(1, -p)
}
