package linalg

import (
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/internal/isnil"
	"github.com/anemone-go/anemone/precision"
	"gonum.org/v1/gonum/mat"
)

// plan is C = A·B for an m×k A and k×n right operands, on the device, in
// bands of A's rows and, when B is too wide for one program, blocks of
// B's columns: one dispatch per (band, block) pair. The program must fit
// every axis limit of the target: the device writes Cᵀ = Bᵀ·Aᵀ, whose
// last axis is the band's rows (the spatial limit) and whose height is
// the block's columns, and the compensated modes stack the band's limbs
// along the rows of one input and the block's limbs along the rows of
// another (limbs × rows and limbs × columns against the height and
// channel limits, and together, with the other contraction chunks',
// against the channel limit of the one packed input surface).
// precision.MatMulBlock says how many rows and columns fit for the mode's
// limb count on the device (all n columns when they fit with one row, so
// only products past about the height limit over the limb count in
// columns are cut); contractions longer than the spatial limit are cut
// inside the program by precision's products. All bands have one size and
// all blocks one width, so one program serves every pair: the last band
// (block) starts early enough to end at row m (column n), overlapping its
// neighbour (those entries are computed twice, identically: each entry of
// C depends on its row of A and column of B alone). A is a runtime
// operand, resident on the device: the program depends on the shape
// alone, and setA changes the matrix without a compile; each band's
// session keeps its rows of A and is applied once per column block.
type plan struct {
	cfg     *config
	mode    precision.Mode
	m, k, n int
	bands   []band
	// cols are the column blocks, all of one width; none means one block
	// of all n columns (a plan built by hand, as Inverse's residual).
	cols []span
}

// span is a block of B's columns: [off, off+len).
type span struct{ off, len int }

// blocks returns the column blocks of pl.
func (pl *plan) blocks() []span {
	if len(pl.cols) == 0 {
		return []span{{0, pl.n}}
	}
	return pl.cols
}

// dispatches is the number of device dispatches of one apply.
func (pl *plan) dispatches() int { return len(pl.bands) * len(pl.blocks()) }

type band struct {
	off, len int
	p        *precision.MatMulPlan
}

// newPlan compiles A·B for n columns of B in mode (FP16, Compensated or
// Float64), with A = a.
func newPlan(fn string, cfg *config, a mat.Matrix, n int, mode precision.Mode) (*plan, error) {
	m, k := a.Dims()
	pl, err := newShapePlan(fn, cfg, m, k, n, mode)
	if err != nil {
		return nil, err
	}
	if err := pl.setA(fn, a); err != nil {
		pl.close()
		return nil, err
	}
	return pl, nil
}

// newShapePlan compiles A·B for m×k matrices A and n columns of B; setA
// gives A.
func newShapePlan(fn string, cfg *config, m, k, n int, mode precision.Mode) (*plan, error) {
	pl := &plan{cfg: cfg, mode: mode, m: m, k: k, n: n}
	start := time.Now()
	defer func() { cfg.stats.Build += time.Since(start) }()
	opts := cfg.productOptions(mode)
	rows, width, err := precision.MatMulBlock(cfg.dev, m, k, n, opts)
	if err != nil {
		return nil, wrapDevice(fn, err)
	}
	// width is already even (⌈n/width⌉ blocks of width columns cover n).
	for j := range (n + width - 1) / width {
		pl.cols = append(pl.cols, span{min(j*width, n-width), width})
	}
	nb := (m + rows - 1) / rows
	size := (m + nb - 1) / nb // ≤ rows
	for i := range nb {
		off := min(i*size, m-size)
		p, err := precision.NewMatMulShape(cfg.dev, size, k, width, opts)
		if err != nil {
			pl.close()
			return nil, wrapDevice(fn, err)
		}
		if rep := p.Compiled(); rep.Fresh {
			cfg.stats.Programs++
			cfg.stats.ModeledCompile += rep.Modeled
		}
		pl.bands = append(pl.bands, band{off, size, p})
	}
	return pl, nil
}

// setA makes a (m×k) the left operand: its bands are written to the
// device once and stay there.
func (pl *plan) setA(fn string, a mat.Matrix) error {
	start := time.Now()
	defer func() { pl.cfg.stats.Host += time.Since(start) }()
	for _, bd := range pl.bands {
		var sub mat.Matrix = a
		if len(pl.bands) > 1 {
			sub = rowSlice(a, bd.off, bd.off+bd.len)
		}
		if err := bd.p.SetA(sub); err != nil {
			return wrapDevice(fn, err)
		}
	}
	return nil
}

// rowSlice returns rows [off, end) of a as a dense copy.
func rowSlice(a mat.Matrix, off, end int) *mat.Dense {
	_, k := a.Dims()
	d := mat.NewDense(end-off, k, nil)
	for i := off; i < end; i++ {
		for j := range k {
			d.Set(i-off, j, a.At(i, j))
		}
	}
	return d
}

// colSlice returns columns [off, end) of b: a view of a *mat.Dense, else
// a dense copy.
func colSlice(b mat.Matrix, off, end int) mat.Matrix {
	if d, ok := b.(*mat.Dense); ok {
		r, _ := d.Dims()
		return d.Slice(0, r, off, end)
	}
	k, _ := b.Dims()
	d := mat.NewDense(k, end-off, nil)
	for i := range k {
		for j := off; j < end; j++ {
			d.Set(i, j-off, b.At(i, j))
		}
	}
	return d
}

// apply computes dst = A·b (dst m×n, sized if empty), one dispatch per
// band and column block (pl.dispatches in all, refused whole if they would
// pass the budget). The time inside the device's runs is Device; the rest
// (scaling, limb splits, fp16 conversion, unscaling) is host work.
func (pl *plan) apply(fn string, dst *mat.Dense, b mat.Matrix) error {
	if pl.cfg.stats.Dispatches+pl.dispatches() > pl.cfg.budget {
		return fmt.Errorf("linalg: %s: MaxDispatches = %d reached: %w", fn, pl.cfg.budget, ErrNotConverged)
	}
	if dst.IsEmpty() {
		dst.ReuseAs(pl.m, pl.n)
	}
	blocks := pl.blocks()
	for _, cb := range blocks {
		bb := b
		if len(blocks) > 1 {
			bb = colSlice(b, cb.off, cb.off+cb.len)
		}
		for _, bd := range pl.bands {
			start := time.Now()
			dev0 := bd.p.Session().Stats().Device
			var out *mat.Dense
			whole := len(pl.bands) == 1 && len(blocks) == 1
			if whole {
				out = dst
			} else {
				out = dst.Slice(bd.off, bd.off+bd.len, cb.off, cb.off+cb.len).(*mat.Dense)
			}
			err := bd.p.Apply(out, bb)
			dev := bd.p.Session().Stats().Device - dev0
			pl.cfg.stats.Device += dev
			pl.cfg.stats.Host += time.Since(start) - dev
			pl.cfg.stats.Dispatches++
			if err != nil {
				return wrapDevice(fn, err)
			}
			pl.cfg.stats.Flops += int64(math.Round(2 * float64(bd.len) * float64(pl.k) * float64(cb.len) * bd.p.Work()))
			pl.cfg.stats.ModeledTime += bd.p.Cost().Time
		}
	}
	return nil
}

func (pl *plan) close() {
	for _, bd := range pl.bands {
		_ = bd.p.Close()
	}
}

// checkMatrix rejects nil, empty and non-finite matrices; name says which
// operand.
func checkMatrix(fn, name string, a mat.Matrix) (m, n int, err error) {
	if isnil.Matrix(a) {
		return 0, 0, fmt.Errorf("linalg: %s: %s is nil: %w", fn, name, ErrShape)
	}
	m, n = a.Dims()
	if m == 0 || n == 0 {
		return 0, 0, fmt.Errorf("linalg: %s: %s is empty (%d×%d): %w", fn, name, m, n, ErrShape)
	}
	bad := func(i, j int, v float64) error {
		return fmt.Errorf("linalg: %s: %s[%d][%d] = %v; every entry must be finite: %w", fn, name, i, j, v, ErrRange)
	}
	if rm, ok := a.(mat.RawMatrixer); ok {
		if raw := rm.RawMatrix(); raw.Rows == m && raw.Cols == n {
			for i := range m {
				for j, v := range raw.Data[i*raw.Stride : i*raw.Stride+n] {
					if v-v != 0 { // NaN or ±Inf
						return 0, 0, bad(i, j, v)
					}
				}
			}
			return m, n, nil
		}
	}
	for i := range m {
		for j := range n {
			if v := a.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, bad(i, j, v)
			}
		}
	}
	return m, n, nil
}

func checkVector(fn, name string, x []float64, want int) error {
	if len(x) != want {
		return fmt.Errorf("linalg: %s: %s has length %d, want %d: %w", fn, name, len(x), want, ErrShape)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("linalg: %s: %s[%d] = %v; every entry must be finite: %w", fn, name, i, v, ErrRange)
		}
	}
	return nil
}

// productMode is the mode of MatMul and MatVec: Compensated by default.
func productMode(m precision.Mode) precision.Mode {
	if m == 0 {
		return precision.Compensated
	}
	return m
}

// MatMul returns A·B computed on the device. a is m×k and b k×n (ErrShape
// otherwise); NaN or ±Inf is ErrRange.
//
// What each mode reaches (Frobenius-norm relative error against gonum's
// float64 product, random normal operands, simulator; docs/RESULTS.md):
//
//   - FP16: one pass, each row of A and column of B scaled by a power of
//     two into [1, 2), products rounded to fp16 and summed in float32,
//     the sum rounded to fp16: about 2⁻¹¹·√(log₂ k) or better.
//   - Compensated (the default): 5 limbs of 6-bit digits whose products
//     the device computes exactly, each sum returned as an fp16 (hi, lo)
//     pair and added on the host: about 40·2⁻³⁰ ≈ 4e-8, at most 1e-6.
//   - Float64: 9 limbs: float64-class, at most 1e-14.
//
// On a device whose matmul rounds partial sums to fp16 (sim-narrow; see
// the package documentation) FP16 reaches about 2⁻¹¹·(1 + √(k/2)) (4.7e-3
// measured at k = 1024), Compensated uses 10 limbs of 3-bit digits and
// reaches the same ≤ 1e-6 (1.5e-8 to 1.9e-8 measured for k ≤ 1024, 5.3e-8
// at k = 20000, where some running digit sums pass 2¹¹ and round; 3.4
// times the device work), and Float64 is ErrUnsupported.
//
// Products past the target's limits are tiled: contractions longer than
// the exactness or spatial limit are cut into chunks inside the one
// program, A's rows into equal bands and, when B has too many columns for
// one program (in the compensated modes past about the height limit over
// the limb count; in FP16 past the height limit), B's columns into equal
// blocks, one dispatch of one program per band and block, small enough
// that every tensor of the program fits the target's axis limits for the
// mode's limb count (precision.MatMulBlock: bands of at most the spatial
// limit, and, in the compensated modes, about the height limit over the
// limb count, in rows and in columns). A product whose contraction is cut
// into too many chunks for even one row and one column to fit is
// ErrUnsupported. The errors are relative
// to ‖A‖·‖B‖: a product that cancels heavily has a correspondingly larger
// relative error. Column j of A and row j of B are first balanced by
// powers of two when the ratios of their largest entries span more than
// 2¹⁰ over j (A·B = (A·D)·(D⁻¹·B), exact), so A = G·D, B = D⁻¹·H with D
// spanning 1e-150 … 1e150 gives G·H to the mode's accuracy rather than
// losing every term to the device's per-row and per-column scaling.
// Inputs are not modified.
func MatMul(a, b mat.Matrix, s *Settings) (*mat.Dense, error) {
	cfg, err := resolve("MatMul", s)
	if err != nil {
		return nil, err
	}
	defer cfg.stats.finish()
	m, k, err := checkMatrix("MatMul", "a", a)
	if err != nil {
		return nil, err
	}
	r, n, err := checkMatrix("MatMul", "b", b)
	if err != nil {
		return nil, err
	}
	if r != k {
		return nil, fmt.Errorf("linalg: MatMul: a is %d×%d and b %d×%d; b needs as many rows as a has columns: %w", m, k, r, n, ErrShape)
	}
	mode := productMode(cfg.mode)
	cfg.stats.Mode = mode
	start := time.Now()
	a, b = balance(a, b)
	cfg.stats.Host += time.Since(start)
	pl, err := newPlan("MatMul", cfg, a, n, mode)
	if err != nil {
		return nil, err
	}
	defer pl.close()
	var c mat.Dense
	if err := pl.apply("MatMul", &c, b); err != nil {
		return nil, err
	}
	return &c, nil
}

// MatVec returns A·x computed on the device, in the modes of MatMul (with
// the same accuracy, normwise). len(x) must be A's column count (ErrShape).
func MatVec(a mat.Matrix, x []float64, s *Settings) ([]float64, error) {
	cfg, err := resolve("MatVec", s)
	if err != nil {
		return nil, err
	}
	defer cfg.stats.finish()
	m, k, err := checkMatrix("MatVec", "a", a)
	if err != nil {
		return nil, err
	}
	if err := checkVector("MatVec", "x", x, k); err != nil {
		return nil, err
	}
	mode := productMode(cfg.mode)
	cfg.stats.Mode = mode
	start := time.Now()
	a, xb := balance(a, mat.NewDense(k, 1, append([]float64(nil), x...)))
	cfg.stats.Host += time.Since(start)
	pl, err := newPlan("MatVec", cfg, a, 1, mode)
	if err != nil {
		return nil, err
	}
	defer pl.close()
	var y mat.Dense
	if err := pl.apply("MatVec", &y, xb); err != nil {
		return nil, err
	}
	out := make([]float64, m)
	for i := range m {
		out[i] = y.At(i, 0)
	}
	return out, nil
}
