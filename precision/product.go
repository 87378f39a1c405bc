package precision

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/internal/dense"
	"github.com/anemone-go/anemone/internal/isnil"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	"gonum.org/v1/gonum/mat"
)

// MatVecOptions configures NewMatVec (and, as MatMulOptions, NewMatMul and
// MatMul). Zero fields mean defaults.
type MatVecOptions struct {
	// Mode: FP16, Compensated (the default) or Float64.
	Mode Mode
	// Limbs is the number of limbs per operand, 1 to MaxLimbs; 0 means
	// DefaultLimbs for Compensated and ⌈53/Bits⌉ (9 at 6 bits) for Float64.
	// FP16 ignores it.
	Limbs int
	// Bits is the digit width, 1 to MaxBits; 0 means DefaultBits (6).
	// FP16 ignores it.
	Bits int
}

// MatMulOptions configures NewMatMul and MatMul; the fields mean what they
// mean for NewMatVec.
type MatMulOptions = MatVecOptions

// Limits of the FP16 product. With both operands scaled into [1, 2)
// (Pow2Target), products are below 4 and a dot product of fp16Chunk terms
// below 4·8192 = 32768 < 65504: it cannot overflow, whatever the signs.
const fp16Chunk = 8192

// Compensated products keep at most this many columns of the right operand
// in one lo pass: the pass appends a −I block of that width to the
// contraction (see newProduct).
const maxBlock = 256

// shiftTarget bounds the largest possible fp16 output of a compensated pass:
// digit sums are scaled by 2^−shift so that their worst case stays below
// 2^shiftTarget = 32768 < 65504.
const shiftTarget = 15

type span struct{ off, len int }

// outRef says what one program output holds: the hi or lo result of limb
// sum s (0 for FP16) over contraction chunk kc for column block nb. The
// host adds hi and lo alike.
type outRef struct {
	s, kc, nb int
}

// product computes Y = A·X for an m×k matrix A and k×n matrices X, both
// runtime operands: the program is compiled once per shape and mode, A is
// written into the device's input surface once per matrix (setA) and stays
// there, X is written at every apply. The device computes Yᵀ = Xᵀ·Aᵀ, so
// the outputs are n×m blocks.
type product struct {
	exe         shim.Executable
	ses         *shim.Session
	compiled    shim.CompileReport
	cost        lower.Cost // of one dispatch, modeled for the device's family
	aSet        bool
	mode        Mode
	m, k, n     int
	limbs, bits int
	shift       int
	rowExp      []int // A's per-row exponent: limb exponent (compensated) or scaling (FP16)
	kch, nbl    []span
	outs        []outRef
	outNames    []string  // the program output of each outs entry
	out         []float64 // one output block, reused
	passes      int
	work        float64 // products computed, in units of m·k·n (one plain pass)

	mu         sync.Mutex // guards exe (Close) and dispatches
	dispatches int
}

// resolve fills in the defaults of opts and checks them.
func resolve(fn string, opts MatVecOptions) (mode Mode, limbs, nbits int, err error) {
	mode = opts.Mode
	if !mode.valid() {
		return 0, 0, 0, fmt.Errorf("precision: %s: unknown %v: %w", fn, mode, ErrInvalid)
	}
	if mode == 0 {
		mode = Compensated
	}
	if mode == FP16 {
		return mode, 1, 0, nil
	}
	nbits = opts.Bits
	if nbits == 0 {
		nbits = DefaultBits
	}
	limbs = opts.Limbs
	if limbs == 0 {
		limbs = DefaultLimbs
		if mode == Float64 {
			limbs = float64Limbs(nbits)
		}
	}
	if err := checkLimbs(fn, limbs, nbits); err != nil {
		return 0, 0, 0, err
	}
	return mode, limbs, nbits, nil
}

// chunks splits [0, total) into the fewest near-equal spans of at most
// size elements.
func chunks(total, size int) []span {
	num := (total + size - 1) / size
	out := make([]span, num)
	off := 0
	for i := range out {
		l := total / num
		if i < total%num {
			l++
		}
		out[i] = span{off, l}
		off += l
	}
	return out
}

func maxSpan(s []span) int {
	m := 0
	for _, x := range s {
		m = max(m, x.len)
	}
	return m
}

// newProduct builds and compiles the program for A (m×k) times n columns.
//
// Compensated (L limbs of b bits): A is split per row and every column of X
// per column into balanced digits (SplitMatrix). The pairs (l, m') of A- and
// X-limbs are kept on the triangle l + m' ≤ L − 1 and grouped by s = l + m':
// for each s the A limbs [A_0 … A_s] are concatenated along the contraction
// against the X limbs [X_s … X_0], so one matmul gives the integer sum
// S_s = Σ_l A_l·X_(s−l) (every product ≤ 2^(2b−2) exact in fp16, every
// float32 partial sum an integer ≤ 2^24 in units of 2^−shift, hence exact);
// its fp16 rounding is hi_s. The lo pass appends hiᵀ to the A stack and a
// −I block to the X stack, so the same wide accumulator computes
// S_s − hi_s exactly and rounds it once: lo_s. The host adds
// Σ_s 2^(shift−b(s+2))·(hi_s + lo_s) in float64 and applies the row and
// column exponents. Contraction length per chunk: L·kc ≤ 2^(26−2b) (16384 at
// b = 6) keeps the sums exact, and L·kc + block ≤ the target's MaxSpatial
// keeps the lo pass legal; longer contractions are cut into chunks whose
// results the host adds. The hiᵀ·(−I) term comes last in the contraction, so in
// the natural summation order every partial sum is bounded by Σ|products|.
// hi_s + lo_s equals S_s exactly while |S_s| < 2²² units (11 bits each;
// random data stays far below), and within 2⁻²² relative up to the 2²⁴
// bound.
//
// FP16: A is scaled per row and X per column into [1, 2) (Pow2Scale),
// rounded to fp16 and multiplied in one pass per chunk of ≤ 8192 (no
// overflow possible); the host unscales and adds the chunks.
func newProduct(fn string, dev shim.Device, m, k, n int, opts MatVecOptions) (*product, error) {
	if dev == nil {
		return nil, fmt.Errorf("precision: %s: nil device: %w", fn, shim.ErrNoDevice)
	}
	if m < 1 || k < 1 || n < 1 {
		return nil, fmt.Errorf("precision: %s: empty product (%d×%d times %d columns): %w", fn, m, k, n, ErrShape)
	}
	target := dev.Info().Target
	p, g, err := buildProduct(fn, target, m, k, n, opts)
	if err != nil {
		return nil, err
	}
	exe, rep, err := shim.BuildReported(dev, g)
	if err != nil {
		return nil, fmt.Errorf("precision: %s: building the %v program for %d×%d times %d columns: %w", fn, p.mode, m, k, n, err)
	}
	ses, err := shim.NewSession(exe)
	if err != nil {
		return nil, fmt.Errorf("precision: %s: %w", fn, err)
	}
	p.exe, p.ses, p.compiled = exe, ses, rep
	if c, err := lower.Estimate(exe.Program(), target.Name); err == nil {
		p.cost = c
	}
	return p, nil
}

// buildProduct resolves opts and builds the graph of the product (A m×k
// times n columns) for target t, without compiling it: p holds the layout
// (chunks, blocks, limbs, shift), g the program.
func buildProduct(fn string, t lower.Target, m, k, n int, opts MatVecOptions) (*product, *dataflow.Graph, error) {
	mode, limbs, nbits, err := resolve(fn, opts)
	if err != nil {
		return nil, nil, err
	}
	maxK := t.MaxSpatial
	if maxK <= 0 {
		maxK = engine.RowLimit
	}
	p := &product{mode: mode, m: m, k: k, n: n, limbs: limbs, bits: nbits}
	g := dataflow.New()
	if mode == FP16 {
		err = p.buildFP16(g, maxK)
	} else {
		err = p.buildCompensated(fn, g, maxK)
	}
	if err != nil {
		return nil, nil, err
	}
	return p, g, nil
}

// MatMulRows returns the largest row count r ≤ m for which
// NewMatMulShape(dev, r, k, n, opts) builds a program that fits dev's
// target: every tensor it takes or computes within the target's rank,
// its last axis within MaxSpatial, its second to last (height) within
// engine.HeightLimit and every other axis within MaxChannels, and every
// input and output, on a target with PackedIO all inputs together and all
// outputs together, within MaxChannels device rows. The limb count is the
// one opts resolves to (Compensated stacks the limbs of A along the rows
// of its input, so r shrinks with it); the contraction and column
// layout do not depend on the row count, so one r serves every band of
// A's rows. Products with more rows are cut into bands of at most r rows
// by the caller (package linalg). If not even one row fits (too many
// columns, or a contraction cut into too many chunks, for the limbs), the
// error wraps lower.ErrUnsupported and names the tensor and the limit;
// MatMulBlock then cuts B's columns into blocks as well.
// Bad options are ErrInvalid and an empty shape ErrShape, as in
// NewMatMulShape. Nothing is compiled.
func MatMulRows(dev shim.Device, m, k, n int, opts MatMulOptions) (int, error) {
	if dev == nil {
		return 0, fmt.Errorf("precision: MatMulRows: nil device: %w", shim.ErrNoDevice)
	}
	return maxRows("MatMulRows", dev.Info().Target, m, k, n, opts)
}

// maxRows is MatMulRows for target t: a bisection over the row count,
// each step building the graph (every row-dependent axis grows with the
// row count, so the rows that fit are an interval [1, r]).
func maxRows(fn string, t lower.Target, m, k, n int, opts MatMulOptions) (int, error) {
	if m < 1 || k < 1 || n < 1 {
		return 0, fmt.Errorf("precision: %s: empty product (%d×%d times %d columns): %w", fn, m, k, n, ErrShape)
	}
	fitsRows := func(r int) (*product, error) {
		p, g, err := buildProduct(fn, t, r, k, n, opts)
		if err != nil {
			return nil, err
		}
		return p, checkFits(g, t)
	}
	if _, err := fitsRows(m); err == nil {
		return m, nil
	} else if !errors.Is(err, lower.ErrUnsupported) {
		return 0, err
	}
	p, err := fitsRows(1)
	if err != nil {
		if p != nil && errors.Is(err, lower.ErrUnsupported) {
			return 0, fmt.Errorf("precision: %s: no band of A's rows fits: the %v product with %d limbs, a contraction of %d (chunks: %d) and %d columns does not fit target %s even for one row (use fewer columns, or a shorter contraction, per product): %w",
				fn, p.mode, p.limbs, k, len(p.kch), n, t.Name, err)
		}
		return 0, err
	}
	return largestFitting(m, func(r int) error { _, err := fitsRows(r); return err })
}

// MatMulBlock returns a band of rows ≤ m and a block of columns ≤ n for
// which NewMatMulShape(dev, rows, k, cols, opts) builds a program that
// fits dev's target (the limits of MatMulRows), for products too wide for
// one program over all of B's n columns: the compensated modes stack the
// right operand's limbs along the rows of one input too, [L·cols, k], so
// past about engine.HeightLimit/L columns no band of A fits, whatever its
// rows. The columns are chosen first: cols = n if one row fits with all n
// columns, else the largest count c for which one row fits, evened out
// into ⌈n/c⌉ equal blocks (cols = ⌈n/⌈n/c⌉⌉ ≤ c, so ⌈n/cols⌉ blocks of
// cols columns cover n, the last one overlapping its neighbour); rows is
// then MatMulRows for cols columns. Every (band, block) pair is one
// dispatch of one program. Products that fit whole return (m, n). If not
// even one row and one column fit (a contraction cut into too many
// chunks for the limbs), the error wraps lower.ErrUnsupported and names
// the tensor and the limit. Bad options are ErrInvalid and an empty shape
// ErrShape, as in NewMatMulShape. Nothing is compiled.
func MatMulBlock(dev shim.Device, m, k, n int, opts MatMulOptions) (rows, cols int, err error) {
	if dev == nil {
		return 0, 0, fmt.Errorf("precision: MatMulBlock: nil device: %w", shim.ErrNoDevice)
	}
	return maxBandBlock("MatMulBlock", dev.Info().Target, m, k, n, opts)
}

// maxBandBlock is MatMulBlock for target t.
func maxBandBlock(fn string, t lower.Target, m, k, n int, opts MatMulOptions) (rows, cols int, err error) {
	c, err := maxCols(fn, t, k, n, opts)
	if err != nil {
		return 0, 0, err
	}
	nc := (n + c - 1) / c
	cols = (n + nc - 1) / nc
	rows, err = maxRows(fn, t, m, k, cols, opts)
	if err != nil {
		return 0, 0, err
	}
	return rows, cols, nil
}

// maxCols returns the largest column count c ≤ n for which the product's
// program fits t with one row of A: a bisection over the column count, as
// maxRows over the rows (every column-dependent axis, and the contraction
// chunks, grow with the columns, so the columns that fit are an interval
// [1, c]).
func maxCols(fn string, t lower.Target, k, n int, opts MatMulOptions) (int, error) {
	if k < 1 || n < 1 {
		return 0, fmt.Errorf("precision: %s: empty product (%d×%d times %d columns): %w", fn, 1, k, n, ErrShape)
	}
	fitsCols := func(c int) (*product, error) {
		p, g, err := buildProduct(fn, t, 1, k, c, opts)
		if err != nil {
			return nil, err
		}
		return p, checkFits(g, t)
	}
	p, err := fitsCols(n)
	if err == nil {
		return n, nil
	} else if !errors.Is(err, lower.ErrUnsupported) {
		return 0, err
	}
	if n > 1 {
		p, err = fitsCols(1)
	}
	if err != nil {
		if p != nil && errors.Is(err, lower.ErrUnsupported) {
			return 0, fmt.Errorf("precision: %s: no block of the product fits: the %v product with %d limbs and a contraction of %d (chunks: %d) does not fit target %s even for one row and one column (use a shorter contraction per product): %w",
				fn, p.mode, p.limbs, k, len(p.kch), t.Name, err)
		}
		return 0, err
	}
	return largestFitting(n, func(c int) error { _, err := fitsCols(c); return err })
}

// largestFitting bisects for the largest v in [1, hi) for which fits
// succeeds, given that 1 fits and hi does not, and that fitting is
// monotone; an error other than lower.ErrUnsupported stops it.
func largestFitting(hi int, fits func(int) error) (int, error) {
	lo := 1
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if err := fits(mid); err == nil {
			lo = mid
		} else if errors.Is(err, lower.ErrUnsupported) {
			hi = mid
		} else {
			return 0, err
		}
	}
	return lo, nil
}

// checkFits holds the graph to t's axis limits (see MatMulRows), as the
// lowering (spatial axis, device rows) and the hardware's tensor check
// (height axis, every other axis; shim/ane.CheckTensors) do. Constants are
// weights, not tensors the engine lays out, and are skipped as there. The
// error wraps lower.ErrUnsupported.
func checkFits(g *dataflow.Graph, t lower.Target) error {
	spatial, channels := t.MaxSpatial, t.MaxChannels
	if spatial <= 0 { // as buildProduct
		spatial = engine.RowLimit
	}
	if channels <= 0 {
		channels = engine.ChannelLimit
	}
	nodes := g.Nodes()
	name := func(nd *dataflow.Node) string {
		if nd.Name != "" {
			return fmt.Sprintf("%q", nd.Name)
		}
		return fmt.Sprintf("node %d (%s)", nd.ID, nd.Op)
	}
	for _, nd := range nodes {
		if nd.Op == dataflow.OpConst {
			continue
		}
		r := len(nd.Shape)
		if t.MaxRank > 0 && r > t.MaxRank {
			return fmt.Errorf("%s of shape %v has rank %d, over target %s's %d: %w", name(nd), nd.Shape, r, t.Name, t.MaxRank, lower.ErrUnsupported)
		}
		for i, d := range nd.Shape {
			role, limit := "channel", channels
			switch i {
			case r - 1:
				role, limit = "spatial", spatial
			case r - 2:
				role, limit = "height", engine.HeightLimit
			}
			if d > limit {
				return fmt.Errorf("%s of shape %v: axis %d (%s) is %d, over target %s's %s limit of %d: %w", name(nd), nd.Shape, i, role, d, t.Name, role, limit, lower.ErrUnsupported)
			}
		}
	}
	io := func(kind string, ids []int, names []string) error {
		total := 0
		for i, id := range ids {
			rows := 1
			if s := nodes[id].Shape; len(s) > 0 {
				for _, d := range s[:len(s)-1] {
					rows *= d
				}
			}
			if rows > channels {
				return fmt.Errorf("%s %q of shape %v needs %d device rows, over target %s's channel limit of %d: %w", kind, names[i], nodes[id].Shape, rows, t.Name, channels, lower.ErrUnsupported)
			}
			total += rows
		}
		if t.PackedIO && total > channels {
			return fmt.Errorf("the %d %ss need %d device rows together in their one surface, over target %s's channel limit of %d: %w", len(ids), kind, total, t.Name, channels, lower.ErrUnsupported)
		}
		return nil
	}
	in := g.Inputs()
	inNames := make([]string, len(in))
	for i, id := range in {
		inNames[i] = nodes[id].Name
	}
	var out []int
	var outNames []string
	for _, o := range g.Outputs() {
		out = append(out, o.Node)
		outNames = append(outNames, o.Name)
	}
	if err := io("input", in, inNames); err != nil {
		return err
	}
	return io("output", out, outNames)
}

// newProductFor is newProduct for a's shape with A set to a.
func newProductFor(fn string, dev shim.Device, a mat.Matrix, n int, opts MatVecOptions) (*product, error) {
	if isnil.Matrix(a) {
		return nil, fmt.Errorf("precision: %s: nil matrix: %w", fn, ErrShape)
	}
	m, k := a.Dims()
	p, err := newProduct(fn, dev, m, k, n, opts)
	if err != nil {
		return nil, err
	}
	if err := p.setA(fn, a); err != nil {
		_ = p.close()
		return nil, err
	}
	return p, nil
}

// setA writes A into the device's input surface: scaled per row into
// [1, 2) and rounded (FP16), or split into limbs (Compensated). No compile.
func (p *product) setA(fn string, a mat.Matrix) error {
	if isnil.Matrix(a) {
		return fmt.Errorf("precision: %s: nil matrix: %w", fn, ErrShape)
	}
	if r, c := a.Dims(); r != p.m || c != p.k {
		return fmt.Errorf("precision: %s: A is %d×%d, the program multiplies %d×%d: %w", fn, r, c, p.m, p.k, ErrShape)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ses == nil {
		return fmt.Errorf("precision: %s: closed: %w", fn, ErrInvalid)
	}
	p.aSet = false
	m, k := p.m, p.k
	if p.mode == FP16 {
		return p.setAFP16(fn, a)
	}
	al, err := SplitMatrix(a, p.limbs, p.bits)
	if err != nil {
		return fmt.Errorf("precision: %s: A: %w", fn, err)
	}
	p.rowExp = al.RowExp
	L := p.limbs
	for c, ks := range p.kch {
		buf := make([]float64, L*m*ks.len)
		for l := range L {
			for i := range m {
				copy(buf[(l*m+i)*ks.len:(l*m+i+1)*ks.len], al.Digits[l][i*k+ks.off:i*k+ks.off+ks.len])
			}
		}
		if err := p.ses.Write64(fmt.Sprintf("a_k%d", c), buf, 0); err != nil {
			return fmt.Errorf("precision: %s: A: %w", fn, err)
		}
	}
	p.aSet = true
	return nil
}

func (p *product) buildFP16(g *dataflow.Graph, maxK int) error {
	m, k, n := p.m, p.k, p.n
	p.kch = chunks(k, min(fp16Chunk, maxK))
	p.nbl = []span{{0, n}}
	for c, ks := range p.kch {
		a := g.Input(fmt.Sprintf("a_k%d", c), dataflow.Shape{m, ks.len})
		x := g.Input(fmt.Sprintf("x_k%d", c), dataflow.Shape{n, ks.len})
		name := fmt.Sprintf("y_k%d", c)
		g.Output(name, g.MatMul(x, a, false, true))
		p.outs = append(p.outs, outRef{kc: c})
		p.outNames = append(p.outNames, name)
		p.passes++
		p.work += float64(ks.len) / float64(k)
	}
	return g.Err()
}

func (p *product) buildCompensated(fn string, g *dataflow.Graph, maxK int) error {
	m, k, n, L, b := p.m, p.k, p.n, p.limbs, p.bits
	exactK := 1 << (26 - 2*b) // L·kc·2^(2b−2) ≤ 2^24
	block := min(n, maxBlock)
	kcMax := min(exactK, maxK-block) / L
	if kcMax < 1 {
		return fmt.Errorf("precision: %s: %d limbs do not fit the target's contraction limit %d: %w", fn, L, maxK, ErrInvalid)
	}
	p.kch = chunks(k, kcMax)
	kc := maxSpan(p.kch)
	block = min(block, maxK-L*kc)
	p.nbl = chunks(n, block)
	// Worst case of a digit sum: L·kc products of magnitude ≤ 2^(2b−2).
	worst := uint64(L*kc) << (2*b - 2)
	p.shift = max(0, bits.Len64(worst-1)-shiftTarget)

	negI := map[int]dataflow.Value{}
	for c, ks := range p.kch {
		a := g.Input(fmt.Sprintf("a_k%d", c), dataflow.Shape{L * m, ks.len})
		limbs := make([]dataflow.Value, L)
		for l := range L {
			limbs[l] = g.Slice(a, []int{l * m, 0}, []int{m, ks.len})
		}
		x := g.Input(fmt.Sprintf("x_k%d", c), dataflow.Shape{L * n, ks.len})
		for nb, bs := range p.nbl {
			ni, ok := negI[bs.len]
			if !ok {
				data := make([]float64, bs.len*bs.len)
				for j := range bs.len {
					data[j*bs.len+j] = -1
				}
				ni = g.Const(fmt.Sprintf("neg_eye_%d", bs.len), dataflow.Shape{bs.len, bs.len}, data)
				negI[bs.len] = ni
			}
			xl := make([]dataflow.Value, L)
			for l := range L {
				xl[l] = g.Slice(x, []int{l*n + bs.off, 0}, []int{bs.len, ks.len})
			}
			astack, xstack := limbs[0], xl[0]
			for s := range L {
				if s > 0 {
					astack = g.Concat(1, astack, limbs[s]) // [A_0 … A_s]
					xstack = g.Concat(1, xl[s], xstack)    // [X_s … X_0]
				}
				hi := g.MatMul(xstack, astack, false, true) // [block, m]
				aext := g.Concat(1, astack, g.Transpose(hi, []int{1, 0}))
				xext := g.Concat(1, xstack, ni)
				lo := g.MatMul(xext, aext, false, true)
				hiName, loName := fmt.Sprintf("hi_s%d_k%d_n%d", s, c, nb), fmt.Sprintf("lo_s%d_k%d_n%d", s, c, nb)
				g.Output(hiName, hi)
				g.Output(loName, lo)
				p.outs = append(p.outs, outRef{s, c, nb}, outRef{s, c, nb}) // hi, lo
				p.outNames = append(p.outNames, hiName, loName)
				p.passes += 2
				// hi: (s+1)·kc products per output, lo: (s+1)·kc + block.
				p.work += float64(bs.len*(2*(s+1)*ks.len+bs.len)) / float64(k*n)
			}
		}
	}
	return g.Err()
}

// apply computes Y = A·X: x holds X row-major (k×n), dst receives Y
// row-major (m×n).
func (p *product) apply(fn string, dst, x []float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ses == nil {
		return fmt.Errorf("precision: %s: closed: %w", fn, ErrInvalid)
	}
	if !p.aSet {
		return fmt.Errorf("precision: %s: no matrix A was set (SetA): %w", fn, ErrInvalid)
	}
	m, k, n := p.m, p.k, p.n
	if len(p.out) < m*maxSpan(p.nbl) {
		p.out = make([]float64, m*maxSpan(p.nbl))
	}
	if len(x) != k*n || len(dst) != m*n {
		return fmt.Errorf("precision: %s: x has %d elements and dst %d, want %d and %d: %w", fn, len(x), len(dst), k*n, m*n, ErrShape)
	}
	// The columns of X, contiguous, for the general passes.
	columns := func() [][]float64 {
		cols := make([][]float64, n)
		for j := range n {
			col := make([]float64, k)
			for i := range k {
				col[i] = x[i*n+j]
			}
			cols[j] = col
		}
		return cols
	}
	var colExp []int
	fast := false
	if p.mode == FP16 {
		colExp, fast = columnExps(x, k, n)
	}
	if fast {
		if err := p.writeXFP16(fn, x, colExp); err != nil {
			return err
		}
	} else if p.mode == FP16 {
		// columnExps found NaN or ±Inf: name the first column holding one.
		for j, col := range columns() {
			if _, err := Pow2Scale(col); err != nil {
				return fmt.Errorf("precision: %s: column %d of x: %w", fn, j, err)
			}
		}
		return fmt.Errorf("precision: %s: x is not finite: %w", fn, ErrRange)
	} else {
		cols := columns()
		colExp = make([]int, n)
		L := p.limbs
		bufs := make([][]float64, len(p.kch))
		for c, ks := range p.kch {
			bufs[c] = make([]float64, L*n*ks.len)
		}
		for j, col := range cols {
			v, err := SplitVector(col, L, p.bits)
			if err != nil {
				return fmt.Errorf("precision: %s: column %d of x: %w", fn, j, err)
			}
			colExp[j] = v.Exp
			for c, ks := range p.kch {
				for l := range L {
					copy(bufs[c][(l*n+j)*ks.len:(l*n+j+1)*ks.len], v.Digits[l][ks.off:ks.off+ks.len])
				}
			}
		}
		for c := range p.kch {
			// |d|·2^−shift ≥ 2^−9: an fp16 normal, exact.
			if err := p.ses.Write64(fmt.Sprintf("x_k%d", c), bufs[c], -p.shift); err != nil {
				return fmt.Errorf("precision: %s: %w: %w", fn, ErrRange, err)
			}
		}
	}
	err := p.ses.Run()
	p.dispatches++
	if err != nil {
		if errors.Is(err, shim.ErrRange) {
			return fmt.Errorf("precision: %s: %w: %w", fn, ErrRange, err)
		}
		return fmt.Errorf("precision: %s: %w", fn, err)
	}
	if fast {
		if over, ok := p.readYFP16(dst, colExp); ok {
			if over >= 0 {
				return overflowError(fn, dst, over, n)
			}
			return nil
		}
	}
	// acc[j·m + i] accumulates Yᵀ in the units of 2^(rowExp_i + colExp_j).
	acc := make([]float64, n*m)
	for o, ref := range p.outs {
		bs := p.nbl[ref.nb]
		scale := 0
		if p.mode != FP16 {
			scale = p.shift - p.bits*(ref.s+2)
		}
		out := p.out[:bs.len*m]
		if err := p.ses.Read64(p.outNames[o], out, scale); err != nil {
			return fmt.Errorf("precision: %s: %w: %w", fn, ErrRange, err)
		}
		for jj := range bs.len {
			a := acc[(bs.off+jj)*m : (bs.off+jj+1)*m]
			for i, v := range out[jj*m : (jj+1)*m] {
				a[i] += v
			}
		}
	}
	over := -1
	for i := range m {
		for j := range n {
			e := p.rowExp[i] + colExp[j]
			if p.mode == FP16 {
				e = -e
			}
			dst[i*n+j] = math.Ldexp(acc[j*m+i], e)
			if over < 0 && math.IsInf(dst[i*n+j], 0) {
				over = i*n + j
			}
		}
	}
	if over >= 0 {
		return overflowError(fn, dst, over, n)
	}
	return nil
}

// close releases the session's surfaces; the compiled program stays in
// the device's cache for the next product of its shape.
func (p *product) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ses == nil {
		return nil
	}
	err := p.ses.Close()
	p.ses = nil
	_ = p.exe.Close()
	return err
}

func (p *product) dispatchCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dispatches
}

// MatVec is a matrix–vector product y = A·x on a device, compiled once per
// shape: A is a runtime operand written into the device's input surface
// once (its limbs, in Compensated mode) and kept there, x is scaled or
// split on the host and sent at every Apply.
//
// What each mode reaches (normwise relative error ‖y − A·x‖₂/‖A·x‖₂ for a
// random normal 1024×1024 A and x, as in docs/RESULTS.md, Compensated
// products):
//
//   - FP16: one pass, both operands scaled by powers of two into [1, 2):
//     about u16 = 2⁻¹¹ under the wide accumulator (sim: 4.1e-4), ten times
//     that under an fp16 accumulator (sim-narrow: 4.6e-3).
//   - Compensated (default 4 limbs of 6 bits: 8 matmul passes, 20× the
//     products of a plain pass): about 40·2^(−bits·limbs) under sim —
//     6.5e-7 with the default, 1.1e-8 with 5 limbs, 1.9e-10 with 6.
//   - Float64: ⌈53/bits⌉ limbs (9 at 6 bits: 18 passes, 90× the products):
//     float64-class under sim, 1.2e-15.
//
// The compensated digit sums are exact only with the wide (float32)
// accumulator docs/ARCHITECTURE.md states for the ANE. Under sim-narrow the fp16
// running sum rounds once it passes 2048 units: 6-bit digits stall at about
// 3e-3 whatever the limb count, 5-bit at 5e-4, 4-bit at 6e-5, while 3-bit
// digits keep the running sums of random data exact (8 limbs: 9.6e-7 under
// both models); this is data-dependent, not guaranteed.
//
// The errors are relative to ‖A‖·‖x‖ really: a product that cancels heavily
// (‖A·x‖ ≪ ‖A‖‖x‖) has a correspondingly larger relative error.
// A MatVec is safe for concurrent use.
type MatVec struct{ p *product }

// NewMatVec compiles y = A·x for the m×n matrix a on dev (see MatVec for the
// modes). Limb counts and digit widths outside [1, MaxLimbs] and
// [1, MaxBits] are ErrInvalid, NaN or ±Inf in a ErrRange; a that the target
// cannot hold (m past its MaxSpatial, 16384 on the simulator, or, in the
// compensated modes, limbs·m past its channel limit; MatMulRows says how
// many rows fit) fails in lowering with lower.ErrUnsupported. Contractions longer than the exactness
// and target limits are cut into chunks (see Passes).
func NewMatVec(dev shim.Device, a mat.Matrix, opts MatVecOptions) (*MatVec, error) {
	p, err := newProductFor("NewMatVec", dev, a, 1, opts)
	if err != nil {
		return nil, err
	}
	return &MatVec{p}, nil
}

// Apply computes dst = A·x with one device dispatch. len(x) must be A's
// column count and len(dst) its row count (ErrShape); NaN or ±Inf in x is
// ErrRange, and so is an fp16 overflow on the device (which the scaling
// rules out for finite input) and a result beyond float64's range (dst is
// then filled, with ±Inf there). x is not modified.
func (v *MatVec) Apply(dst, x []float64) error {
	if len(dst) != v.p.m || len(x) != v.p.k {
		return fmt.Errorf("precision: MatVec.Apply: len(dst) = %d, len(x) = %d for a %d×%d matrix: %w", len(dst), len(x), v.p.m, v.p.k, ErrShape)
	}
	return v.p.apply("MatVec.Apply", dst, x)
}

// SetA makes a the matrix of every later Apply, without a compile (see
// MatMulPlan.SetA).
func (v *MatVec) SetA(a mat.Matrix) error { return v.p.setA("MatVec.SetA", a) }

// Compiled reports whether building the product compiled its program, and
// the modeled compile time.
func (v *MatVec) Compiled() shim.CompileReport { return v.p.compiled }

// Cost is the modeled engine cost of one Apply on the device's family.
func (v *MatVec) Cost() lower.Cost { return v.p.cost }

// Dims returns A's dimensions.
func (v *MatVec) Dims() (rows, cols int) { return v.p.m, v.p.k }

// Mode returns the mode in use (never the zero Mode).
func (v *MatVec) Mode() Mode { return v.p.mode }

// Limbs returns the limb count per operand (1 in FP16 mode) and the digit
// width (0 in FP16 mode).
func (v *MatVec) Limbs() (limbs, bits int) { return v.p.limbs, v.p.bits }

// Passes returns the number of matmul passes in the program: 2·limbs per
// contraction chunk in Compensated and Float64 mode (a hi and a lo pass for
// every limb sum s), one per chunk in FP16 mode.
func (v *MatVec) Passes() int { return v.p.passes }

// Work returns the products the program computes per Apply, in units of
// one plain fp16 matvec (m·n products): 1 in FP16 mode, about
// limbs·(limbs+1) in Compensated mode (each of the limbs·(limbs+1)/2 limb
// pairs once in the hi pass and once in the lo pass).
func (v *MatVec) Work() float64 { return v.p.work }

// Dispatches returns the number of device dispatches so far (one per Apply).
func (v *MatVec) Dispatches() int { return v.p.dispatchCount() }

// Close releases the compiled program; Apply fails afterwards.
func (v *MatVec) Close() error { return v.p.close() }

// MatMulPlan is a matrix product C = A·B on a device for an m×k matrix A,
// resident on the device until SetA changes it, and k×n right operands B,
// compiled once per shape. Its modes and accuracy are
// those of MatVec, per column of C (normwise, Frobenius, relative to ‖A‖‖B‖).
// A MatMulPlan is safe for concurrent use.
type MatMulPlan struct{ p *product }

// NewMatMul compiles C = A·B for the fixed matrix a and right operands with
// n columns. Errors as NewMatVec; in Compensated mode the columns of B are
// processed in blocks of at most 256 per pass (the lo pass appends a −I
// block of that width to the contraction).
func NewMatMul(dev shim.Device, a mat.Matrix, n int, opts MatMulOptions) (*MatMulPlan, error) {
	p, err := newProductFor("NewMatMul", dev, a, n, opts)
	if err != nil {
		return nil, err
	}
	return &MatMulPlan{p}, nil
}

// Apply computes dst = A·b with one dispatch. b must be k×n; dst must be
// m×n or empty (it is then sized), else ErrShape. NaN or ±Inf in b is
// ErrRange, and so is a result beyond float64's range (dst is then
// filled, with ±Inf there). b is not modified.
func (mp *MatMulPlan) Apply(dst *mat.Dense, b mat.Matrix) error {
	p := mp.p
	if dst == nil || isnil.Matrix(b) {
		return fmt.Errorf("precision: MatMulPlan.Apply: nil matrix: %w", ErrShape)
	}
	if r, c := b.Dims(); r != p.k || c != p.n {
		return fmt.Errorf("precision: MatMulPlan.Apply: b is %d×%d, want %d×%d: %w", r, c, p.k, p.n, ErrShape)
	}
	if dst.IsEmpty() {
		dst.ReuseAs(p.m, p.n)
	} else if r, c := dst.Dims(); r != p.m || c != p.n {
		return fmt.Errorf("precision: MatMulPlan.Apply: dst is %d×%d, want %d×%d: %w", r, c, p.m, p.n, ErrShape)
	}
	// b's data as it is when its rows lie end to end, else a copy; dst's
	// likewise, copied back after.
	var x []float64
	if rm, ok := b.(mat.RawMatrixer); ok && rm.RawMatrix().Stride == p.n && rm.RawMatrix().Rows == p.k && rm.RawMatrix().Cols == p.n {
		x = rm.RawMatrix().Data[:p.k*p.n]
	} else {
		x = make([]float64, 0, p.k*p.n)
		for _, row := range dense.Rows(b) {
			x = append(x, row...)
		}
	}
	out := dst.RawMatrix()
	y := out.Data[:p.m*p.n]
	if out.Stride != p.n {
		y = make([]float64, p.m*p.n)
	}
	err := p.apply("MatMulPlan.Apply", y, x)
	if out.Stride != p.n {
		for i := range p.m {
			copy(out.Data[i*out.Stride:i*out.Stride+p.n], y[i*p.n:(i+1)*p.n])
		}
	}
	return err
}

// NewMatMulShape compiles C = A·B for m×k matrices A and right operands
// with n columns, A to be given by SetA. The program depends on the shape
// and options only: every plan of one shape on a device shares one
// compiled program, and changing A compiles nothing.
func NewMatMulShape(dev shim.Device, m, k, n int, opts MatMulOptions) (*MatMulPlan, error) {
	p, err := newProduct("NewMatMulShape", dev, m, k, n, opts)
	if err != nil {
		return nil, err
	}
	return &MatMulPlan{p}, nil
}

// SetA makes a the left operand of every later Apply. It is written into
// the device's input surface once, scaled or split into limbs, and stays
// there: no compile, and Apply sends only B. a must be m×k (ErrShape);
// NaN or ±Inf is ErrRange.
func (mp *MatMulPlan) SetA(a mat.Matrix) error { return mp.p.setA("MatMulPlan.SetA", a) }

// Compiled reports whether building the plan compiled its program (a
// plan of a shape the device already holds does not) and the modeled
// compile time.
func (mp *MatMulPlan) Compiled() shim.CompileReport { return mp.p.compiled }

// Cost is the modeled engine cost of one Apply on the device's family
// (zero if the model cannot price the program).
func (mp *MatMulPlan) Cost() lower.Cost { return mp.p.cost }

// Session returns the plan's device session, whose statistics count the
// host bytes of every SetA and Apply.
func (mp *MatMulPlan) Session() *shim.Session { return mp.p.ses }

// Dims returns the dimensions of A and the column count of B: C is m×n.
func (mp *MatMulPlan) Dims() (m, k, n int) { return mp.p.m, mp.p.k, mp.p.n }

// Mode returns the mode in use (never the zero Mode).
func (mp *MatMulPlan) Mode() Mode { return mp.p.mode }

// Passes returns the number of matmul passes in the program (see
// MatVec.Passes; column blocks multiply it).
func (mp *MatMulPlan) Passes() int { return mp.p.passes }

// Work returns the products computed per Apply in units of one plain
// product (m·k·n); see MatVec.Work.
func (mp *MatMulPlan) Work() float64 { return mp.p.work }

// Dispatches returns the number of device dispatches so far.
func (mp *MatMulPlan) Dispatches() int { return mp.p.dispatchCount() }

// Close releases the compiled program.
func (mp *MatMulPlan) Close() error { return mp.p.close() }

// MatMul computes A·B on dev in one program compiled for this call (see
// MatMulPlan for the modes; the zero options mean Compensated with 4 limbs
// of 6 bits). a is m×k and b k×n (ErrShape otherwise).
func MatMul(dev shim.Device, a, b mat.Matrix, opts MatMulOptions) (*mat.Dense, error) {
	if isnil.Matrix(a) || isnil.Matrix(b) {
		return nil, fmt.Errorf("precision: MatMul: nil matrix: %w", ErrShape)
	}
	_, k := a.Dims()
	r, n := b.Dims()
	if r != k {
		return nil, fmt.Errorf("precision: MatMul: a has %d columns, b %d rows: %w", k, r, ErrShape)
	}
	mp, err := NewMatMul(dev, a, n, opts)
	if err != nil {
		return nil, err
	}
	defer mp.Close()
	var c mat.Dense
	if err := mp.Apply(&c, b); err != nil {
		return nil, err
	}
	return &c, nil
}

// overflowError reports dst[over], an m×n result's entry beyond float64's
// range.
func overflowError(fn string, dst []float64, over, n int) error {
	return fmt.Errorf("precision: %s: result [%d][%d] = %v: the product is beyond float64's range (scale A or x down): %w", fn, over/n, over%n, dst[over], ErrRange)
}
