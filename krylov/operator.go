package krylov

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/isnil"
	"github.com/anemone-go/anemone/precision"
)

// Operator is a square linear operator A that the solvers apply both on the
// host, in float64, and on the device, inside an unrolled graph.
type Operator interface {
	// Dims is n: A is n×n.
	Dims() int
	// MulVecTo sets dst = A·x in float64.
	MulVecTo(dst, x []float64)
	// NormInf is ‖A‖∞, the largest absolute row sum; the solvers scale A by
	// a power of two so that its device image stays inside fp16's range.
	NormInf() float64
	// Diagonal returns the diagonal of A (used by Jacobi).
	Diagonal() []float64
	// DeviceApply adds y = 2^scale·A·x to g, for x and y of shape [1, n]
	// (a GridOperator's: [1, 1, ny, nx]), and returns y. Errors are
	// recorded in g (see dataflow.Graph). Calls on one graph share the
	// operator's weights (see dataflow.Graph.Lookup) and the scale. The solvers call it with ‖2^scale·A‖∞ < 1 and entries
	// of x below 2¹⁴ in magnitude, so that y is too; an implementation
	// keeps its own intermediates in that range.
	DeviceApply(g *dataflow.Graph, x dataflow.Value, scale int) dataflow.Value
}

// Dense returns the operator of a square matrix. The matrix is copied: later
// changes to a do not reach the operator. On the device, A·x is one matmul
// with a constant operand, which lowering turns into a 1×1 conv.
func Dense(a mat.Matrix) (Operator, error) {
	if isnil.Matrix(a) {
		return nil, fmt.Errorf("krylov: nil matrix: %w", ErrShape)
	}
	r, c := a.Dims()
	if r != c || r == 0 {
		return nil, fmt.Errorf("krylov: matrix is %d×%d, want square and non-empty: %w", r, c, ErrShape)
	}
	if r > MaxDenseUnknowns {
		return nil, fmt.Errorf("krylov: the matrix has %d unknowns; a Dense operator may have at most %d: its 2·n² bytes of fp16 weights must fit the engine's weight file, at most %d bytes; use a matrix-free Operator or a GridOperator past that: %w",
			r, MaxDenseUnknowns, engine.WeightFileLimit, ErrUnsupported)
	}
	d := &denseOp{n: r, a: make([]float64, r*r), id: nextID()}
	for i := range r {
		row := 0.0
		for j := range r {
			v := a.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("krylov: matrix entry (%d, %d) is %g: %w", i, j, v, ErrInput)
			}
			d.a[i*r+j] = v
			row += math.Abs(v)
		}
		if math.IsInf(row, 0) {
			return nil, fmt.Errorf("krylov: row %d's absolute sum overflows float64, so ‖A‖∞ is not finite: scale the matrix: %w", i, ErrInput)
		}
		d.norm = math.Max(d.norm, row)
	}
	return d, nil
}

// MaxUnknowns is the largest n of an operator that is neither Dense nor a
// GridOperator (Stencil2D included): its vectors live in one device row,
// and a row holds 16384 fp16 values (32 KiB) on the simulator and the
// M1–M3 engines. Grids go further (MaxGridWidth, MaxGridHeight), and so
// does Dense (MaxDenseUnknowns).
const MaxUnknowns = engine.RowLimit

// MaxDenseUnknowns is the largest n of a Dense operator: its fp16 weights,
// 2·n² bytes, must fit the engine's weight file (engine.WeightFileLimit,
// 2³¹ bytes) with the program's other constants and the file's records:
// at n = 32767 that leaves 128 KiB, and n = 32768 would fill it exactly.
// Up to MaxUnknowns the device vectors are one row, [1, n]; past it they
// are channel blocks, [1, n/w, 1, w] with w the largest divisor of n not
// above MaxUnknowns, and the product is a sum of 1×1 convs over bands of
// at most MaxUnknowns input channels (the engine's contraction limit),
// each with one output channel per row of A (within the channel limit,
// 65536). CG in FP16 mode and GMRES with its polynomial preconditioner
// (n > 1024) use the blocked layout; Compensated mode keeps the row
// limit.
const MaxDenseUnknowns = 32767

// denseRowLimit is MaxUnknowns, the length past which a Dense operator's
// vectors are channel blocks and its product is split into bands; the
// package's tests lower it to exercise the blocked layout at small n.
var denseRowLimit = MaxUnknowns

// denseShape is the device shape of a Dense operator's vectors: [1, n], or
// past denseRowLimit the channel blocks [1, n/w, 1, w] with w the largest
// divisor of n not above denseRowLimit (for a prime n, w = 1: one value
// per channel).
func denseShape(n int) dataflow.Shape {
	if n <= denseRowLimit {
		return dataflow.Shape{1, n}
	}
	w := denseRowLimit
	for n%w != 0 {
		w--
	}
	return dataflow.Shape{1, n / w, 1, w}
}

// GridOperator is an Operator whose unknowns are the points of an nx×ny
// grid, point (x, y) at vector index y·nx + x, as for Stencil2D. The
// solvers then keep its device vectors on the grid: its DeviceApply gets x
// of shape [1, 1, ny, nx] and returns y of that shape, and n is not limited
// to one device row (MaxUnknowns) but to nx ≤ MaxGridWidth and ny ≤
// MaxGridHeight. A variable-coefficient stencil is the typical one: a conv
// gathers the neighbours and a product with a constant [1, k, ny, nx]
// tensor of coefficients weights them (see the Operator example). The grid
// need not be geometric: any operator whose n factors as nx·ny within the
// limits may use the layout, if its DeviceApply works on it.
type GridOperator interface {
	Operator
	// Grid returns the grid's width nx and height ny, with nx·ny = Dims().
	Grid() (nx, ny int)
}

// deviceShape is the shape of an operator's vectors on the device: its
// grid, [1, 1, ny, nx], for a GridOperator (Stencil2D included), else
// [1, n]. A grid that does not match Dims or exceeds the grid limits, and
// a row vector past MaxUnknowns, are refused here, before any graph is
// built.
func deviceShape(solver string, a Operator) (dataflow.Shape, error) {
	n := a.Dims()
	if d, ok := a.(*denseOp); ok {
		return denseShape(d.n), nil
	}
	ga, ok := a.(GridOperator)
	if !ok {
		if err := checkUnknowns(fmt.Sprintf("%s operator (%T)", solver, a), float64(n)); err != nil {
			return nil, err
		}
		return dataflow.Shape{1, n}, nil
	}
	nx, ny := ga.Grid()
	if nx <= 0 || ny <= 0 || float64(nx)*float64(ny) != float64(n) {
		return nil, fmt.Errorf("krylov: %s: the operator's Grid() is %d×%d but Dims() is %d: want nx·ny = n, both positive: %w", solver, nx, ny, n, ErrShape)
	}
	if err := checkGrid(fmt.Sprintf("%s operator (%T)", solver, a), nx, ny); err != nil {
		return nil, err
	}
	return dataflow.Shape{1, 1, ny, nx}, nil
}

// checkGrid refuses a grid past MaxGridWidth × MaxGridHeight.
func checkGrid(what string, nx, ny int) error {
	if nx > MaxGridWidth || ny > MaxGridHeight {
		return fmt.Errorf("krylov: %s grid %d×%d (%.0f unknowns): a grid row may hold at most %d points (one device row of %d KiB) and the grid at most %d rows, %.0f unknowns in all (%d GiB of fp16 per device vector): %w",
			what, nx, ny, float64(nx)*float64(ny), MaxGridWidth, MaxGridWidth*2/1024, MaxGridHeight, float64(MaxGridWidth)*MaxGridHeight, MaxGridWidth*MaxGridHeight*2>>30, ErrUnsupported)
	}
	return nil
}

// checkUnknowns refuses an operator of n unknowns past MaxUnknowns (n is a
// float64 so that a product of two grid sides cannot overflow).
func checkUnknowns(what string, n float64) error {
	if n > MaxUnknowns {
		return fmt.Errorf("krylov: the %s has %.0f unknowns; at most %d unknowns on this target (each vector must fit one device row of %d fp16 values, %d KiB): %w",
			what, n, MaxUnknowns, MaxUnknowns, MaxUnknowns*2/1024, ErrUnsupported)
	}
	return nil
}

type denseOp struct {
	id   uint64 // names the operator's weights in graphs
	n    int
	a    []float64 // row-major
	norm float64

	peakOnce sync.Once
	peak     float64 // max |a_ij|

	symCheck sync.Once
	asymI    int // an entry (asymI, asymJ) that breaks symmetry, or −1
	asymJ    int

	// The scaled operators the solvers put on the device, made once.
	symOnce  sync.Once
	sym      *denseOp // S·A·S (CG), or nil when A needs no scaling
	symS     []float64
	eqOnce   sync.Once
	eq       *denseOp // R·A·C (GMRES), or nil
	eqR, eqC []float64
}

func (d *denseOp) Dims() int        { return d.n }
func (d *denseOp) NormInf() float64 { return d.norm }

// MulVecTo is gonum's BLAS matrix–vector product (its assembly dot
// kernels), the host's float64 share of every dispatch.
func (d *denseOp) MulVecTo(dst, x []float64) {
	blas64.Implementation().Dgemv(blas.NoTrans, d.n, d.n, 1, d.a, d.n, x, 1, 0, dst, 1)
}

func (d *denseOp) Diagonal() []float64 {
	out := make([]float64, d.n)
	for i := range out {
		out[i] = d.a[i*d.n+i]
	}
	return out
}

// DeviceApply multiplies by the weights 2^(scale+k)·A, whose largest entry
// is in [½, 1), and scales the product back by 2^−k. A dense row of n
// entries can have ‖2^scale·A‖∞ < 1 with every entry near 1/n; raised so,
// its entries stay in fp16's normal range (the lowering flushes only
// entries below 2⁻¹³ of the largest), the products a_ij·x_j stay clear of
// subnormals, and the matmul's output, at most max|a|·‖x‖₁ ≤ ‖x‖₁, stays
// below 2¹³ for the solvers' vectors (‖x‖₂ ≤ √n/2, so ‖x‖₁ ≤ n/2). x is
// a row [1, n], or past MaxUnknowns the channel blocks of
// MaxDenseUnknowns, and y has x's shape.
func (d *denseOp) DeviceApply(g *dataflow.Graph, x dataflow.Value, scale int) dataflow.Value {
	k := 0
	if peak := d.maxAbs(); peak > 0 {
		k = max(0, pow2Exp(math.Ldexp(peak, scale)))
	}
	if len(x.Shape()) == 4 { // channel blocks (denseShape)
		return d.blockedApply(g, x, scale, k)
	}
	name := weightName("A", d.id, scale)
	w, ok := g.Lookup(name)
	if !ok {
		data := make([]float64, len(d.a))
		for i, v := range d.a {
			data[i] = math.Ldexp(v, scale+k)
		}
		w = g.Const(name, dataflow.Shape{d.n, d.n}, data)
	}
	// y = x·Aᵀ for the row vector x: y_i = Σ_j A_ij x_j.
	return scalePow2(g, g.MatMul(x, w, false, true), -k)
}

// blockedApply is DeviceApply for channel blocks x of shape [1, c, 1, w]:
// the vector as channels, [1, n, 1, 1], and y = Σ_b A[:, band b]·x_b over
// bands of at most denseRowLimit channels, each a 1×1 conv with weights
// [n, band, 1, 1] (2^(scale+k)·A's columns), so that no contraction passes
// the engine's limit. Each partial sum is bounded as the whole product is
// (by max|a|·‖x‖₁), and so is every running sum of them.
func (d *denseOp) blockedApply(g *dataflow.Graph, x dataflow.Value, scale, k int) dataflow.Value {
	n := d.n
	xc := g.Reshape(x, dataflow.Shape{1, n, 1, 1})
	var y dataflow.Value
	for lo := 0; lo < n; lo += denseRowLimit {
		hi := min(n, lo+denseRowLimit)
		name := weightName(fmt.Sprintf("A%d_", lo), d.id, scale)
		w, ok := g.Lookup(name)
		if !ok {
			data := make([]float64, n*(hi-lo))
			for i := range n {
				for j := lo; j < hi; j++ {
					data[i*(hi-lo)+j-lo] = math.Ldexp(d.a[i*n+j], scale+k)
				}
			}
			w = g.Const(name, dataflow.Shape{n, hi - lo, 1, 1}, data)
		}
		xb := xc
		if lo > 0 || hi < n {
			xb = g.Slice(xc, []int{0, lo, 0, 0}, []int{1, hi - lo, 1, 1})
		}
		p := g.Conv2D(xb, w, dataflow.Conv2DOptions{})
		if y.Valid() {
			y = g.Add(y, p)
		} else {
			y = p
		}
	}
	return scalePow2(g, g.Reshape(y, x.Shape()), -k)
}

// symmetryTol: CG takes a dense matrix as symmetric when |a_ij − a_ji| ≤
// symmetryTol·√(a_ii·a_jj) for every pair, a bound that diagonal scaling
// does not change and that rounding in forming A (a product such as
// Q·Λ·Qᵀ, say) stays far below.
const symmetryTol = 1e-8

// asymmetry reports whether A is symmetric to symmetryTol, and if not the
// first entry (i, j), i < j in row-major order, that is not (as
// stencilOp.asymmetry does for a stencil), checked once per operator.
func (d *denseOp) asymmetry() (int, int, bool) {
	d.symCheck.Do(func() {
		d.asymI, d.asymJ = -1, -1
		n := d.n
		for i := range n {
			si := math.Sqrt(math.Abs(d.a[i*n+i]))
			for j := i + 1; j < n; j++ {
				u, v := d.a[i*n+j], d.a[j*n+i]
				if u == v {
					continue
				}
				if math.Abs(u-v) > symmetryTol*si*math.Sqrt(math.Abs(d.a[j*n+j])) {
					d.asymI, d.asymJ = i, j
					return
				}
			}
		}
	})
	return d.asymI, d.asymJ, d.asymI < 0
}

// maxAbs is the largest |a_ij|.
func (d *denseOp) maxAbs() float64 {
	d.peakOnce.Do(func() {
		for _, v := range d.a {
			d.peak = math.Max(d.peak, math.Abs(v))
		}
	})
	return d.peak
}

// Stencil2D returns the operator of a constant-coefficient 9-point stencil
// on an nx×ny grid with zero Dirichlet boundary: grid point (x, y) is vector
// index y·nx + x, and c[dy+1][dx+1] weights the neighbour (x+dx, y+dy).
// On the device it is a 3×3 conv with zero padding over the grid, which CG
// fuses with its vector updates into one conv per step.
//
// The coefficients are the matrix entries as given: Stencil2D applies no
// mesh scaling, so a discretization's 1/h² (or any other factor) belongs
// in c. The 5-point Laplacian −Δ on the unit square with h = 1/(nx+1) is
// c = 1/h²·[[0, −1, 0], [−1, 4, −1], [0, −1, 0]]; c = [[0, −1, 0],
// [−1, 4, −1], [0, −1, 0]] is h²·(−Δ), whose solution is h² times
// smaller. The solvers scale A by a power of two themselves, so either
// form is fine, in both precision modes.
//
// The grid is laid out on the device as [1, C, ny, nx]: a grid row of nx
// points is one device row, so nx ≤ MaxGridWidth, and the rows are
// channels of the program's input and output, so ny ≤ MaxGridHeight; past
// either the operator is refused here (ErrUnsupported, said in unknowns
// and bytes). That allows 2³⁰ unknowns; the practical limit is memory:
// CG keeps about 2·FCGTruncation + 6 float64 vectors on the host (176
// bytes per unknown) and 3 fp16 channels on the device. A coefficient that
// is NaN or ±Inf, or whose absolute sum overflows, is an error wrapping
// ErrInput. GMRES keeps a stencil's vectors on the grid too, within the
// same limits; its host keeps 2·Restart + 4 float64 vectors.
func Stencil2D(nx, ny int, c [3][3]float64) (Operator, error) {
	if nx <= 0 || ny <= 0 {
		return nil, fmt.Errorf("krylov: stencil grid %d×%d must be positive: %w", nx, ny, ErrShape)
	}
	if err := checkGrid("stencil", nx, ny); err != nil {
		return nil, err
	}
	s := &stencilOp{nx: nx, ny: ny, c: c, id: nextID()}
	for _, row := range c {
		for _, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("krylov: stencil coefficient %g: %w", v, ErrInput)
			}
			s.norm += math.Abs(v)
		}
	}
	if math.IsInf(s.norm, 0) {
		return nil, fmt.Errorf("krylov: the stencil's absolute coefficient sum overflows float64, so ‖A‖∞ is not finite: scale the coefficients: %w", ErrInput)
	}
	return s, nil
}

// Grid limits of Stencil2D: a grid row is one device row of the strictest
// target (the simulator and M1–M3 hold 16384 fp16 values in a row), and
// the rows are channels of one device surface (at most 65536).
const (
	MaxGridWidth  = engine.RowLimit
	MaxGridHeight = engine.ChannelLimit
)

type stencilOp struct {
	id     uint64
	nx, ny int
	c      [3][3]float64
	norm   float64

	fdOnce sync.Once
	fd     *spectral // CG's default preconditioner, or nil (see defaultSpectral)
}

// defaultSpectral returns the FastDiagonalization CG uses when Precond is
// nil, made once per operator so that a re-solve reuses its program; nil
// for a stencil it does not accept (then the polynomial is the default).
func (s *stencilOp) defaultSpectral() *spectral {
	s.fdOnce.Do(func() {
		if pre, err := FastDiagonalization(s); err == nil {
			s.fd = pre.(*spectral)
		}
	})
	return s.fd
}

// lambdaMin returns the smallest eigenvalue of a stencil that is symmetric
// about both axes (c[dy][0] = c[dy][2], c[0][dx] = c[2][dx]), and false
// for any other. Such a stencil is c₀₀ + c₁₀·Tx + c₀₁·Ty + c₁₁·Tx·Ty, with
// Tx, Ty the Dirichlet grid's neighbour sums, whose eigenvectors are the
// products of sines with eigenvalues 2·cos(iπ/(nx+1)) (Tx) and
// 2·cos(jπ/(ny+1)) (Ty): the eigenvalues are bilinear in the two cosines,
// so the smallest is at a corner of their range.
func (s *stencilOp) lambdaMin() (float64, bool) {
	c := s.c
	for d := range 3 {
		if c[d][0] != c[d][2] || c[0][d] != c[2][d] {
			return 0, false
		}
	}
	ux := 2 * math.Cos(math.Pi/float64(s.nx+1))
	uy := 2 * math.Cos(math.Pi/float64(s.ny+1))
	lam := math.Inf(1)
	for _, u := range []float64{-ux, ux} {
		for _, v := range []float64{-uy, uy} {
			lam = math.Min(lam, s.eigenvalue(u, v))
		}
	}
	return lam, true
}

// eigenvalue is the eigenvalue of a stencil symmetric about both axes on
// the sine mode where Tx has eigenvalue u and Ty has v.
func (s *stencilOp) eigenvalue(u, v float64) float64 {
	c := s.c
	return c[1][1] + c[1][0]*u + c[0][1]*v + c[0][0]*u*v
}

// asymmetry reports whether the stencil's matrix is symmetric, and if not
// a coefficient c[i][j] ≠ c[2−i][2−j]; a coefficient of an offset the grid
// has no room for (dx ≠ 0 with nx = 1, dy ≠ 0 with ny = 1) is no entry
// of the matrix and is not compared.
func (s *stencilOp) asymmetry() (int, int, bool) {
	for i := range 3 {
		for j := range 3 {
			if (i != 1 && s.ny == 1) || (j != 1 && s.nx == 1) {
				continue
			}
			if s.c[i][j] != s.c[2-i][2-j] {
				return i, j, false
			}
		}
	}
	return 0, 0, true
}

func (s *stencilOp) Dims() int        { return s.nx * s.ny }
func (s *stencilOp) Grid() (int, int) { return s.nx, s.ny }
func (s *stencilOp) NormInf() float64 { return s.norm }

func (s *stencilOp) MulVecTo(dst, x []float64) {
	for y := range s.ny {
		for xx := range s.nx {
			sum := 0.0
			for dy := -1; dy <= 1; dy++ {
				yy := y + dy
				if yy < 0 || yy >= s.ny {
					continue
				}
				for dx := -1; dx <= 1; dx++ {
					xn := xx + dx
					if xn < 0 || xn >= s.nx {
						continue
					}
					sum += s.c[dy+1][dx+1] * x[yy*s.nx+xn]
				}
			}
			dst[y*s.nx+xx] = sum
		}
	}
}

func (s *stencilOp) Diagonal() []float64 {
	out := make([]float64, s.nx*s.ny)
	for i := range out {
		out[i] = s.c[1][1]
	}
	return out
}

func (s *stencilOp) DeviceApply(g *dataflow.Graph, x dataflow.Value, scale int) dataflow.Value {
	name := weightName("stencil", s.id, scale)
	k, ok := g.Lookup(name)
	if !ok {
		w := make([]float64, 9)
		for i := range 3 {
			for j := range 3 {
				w[i*3+j] = math.Ldexp(s.c[i][j], scale)
			}
		}
		k = g.Const(name, dataflow.Shape{1, 1, 3, 3}, w)
	}
	gridShape := dataflow.Shape{1, 1, s.ny, s.nx}
	if x.Shape().Equal(gridShape) { // already on the grid (GMRES past one device row)
		return g.Conv2D(x, k, dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}})
	}
	grid := g.Reshape(x, gridShape)
	y := g.Conv2D(grid, k, dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}})
	return g.Reshape(y, dataflow.Shape{1, s.nx * s.ny})
}

// Preconditioner applies M⁻¹ ≈ A⁻¹ on the host and on the device.
type Preconditioner interface {
	// ApplyTo sets dst = M⁻¹·r in float64.
	ApplyTo(dst, r []float64)
	// DeviceApply adds z = c·M⁻¹·r to g for r of shape [1, n], where c > 0 is
	// a power of two the preconditioner may choose to keep z in fp16's range
	// (the solvers normalize search directions, so c cancels).
	DeviceApply(g *dataflow.Graph, r dataflow.Value) dataflow.Value
}

// Polynomial returns the choice of no preconditioner but CG's device
// polynomial in A itself (see CG): M = I, so ApplyTo copies r and
// DeviceApply returns it. It is what a nil Settings.Precond means for
// every operator except a Stencil2D that FastDiagonalization accepts,
// whose default is its exact inverse; pass Polynomial to have the
// polynomial there too (to compare them, or for a grid whose sine
// matrices would be larger than the polynomial's work).
func Polynomial(a Operator) (Preconditioner, error) {
	if a == nil {
		return nil, fmt.Errorf("krylov: nil operator: %w", ErrShape)
	}
	return polynomial{}, nil
}

type polynomial struct{}

func (polynomial) ApplyTo(dst, r []float64) { copy(dst, r) }

func (polynomial) DeviceApply(_ *dataflow.Graph, r dataflow.Value) dataflow.Value { return r }

// Jacobi returns the diagonal preconditioner M = diag(A), for CG. A
// diagonal entry that is zero, negative or NaN is an error wrapping
// ErrNotSPD (an SPD matrix has a positive diagonal).
func Jacobi(a Operator) (Preconditioner, error) {
	if a == nil {
		return nil, fmt.Errorf("krylov: nil operator: %w", ErrShape)
	}
	d := a.Diagonal()
	inv := make([]float64, len(d))
	maxInv := 0.0
	for i, v := range d {
		if !(v > 0) {
			return nil, fmt.Errorf("krylov: Jacobi needs a positive diagonal; entry %d is %g: %w", i, v, ErrNotSPD)
		}
		inv[i] = 1 / v
		maxInv = math.Max(maxInv, inv[i])
	}
	_, e := math.Frexp(maxInv)
	return &jacobi{inv: inv, scale: -e, id: nextID()}, nil
}

type jacobi struct {
	id    uint64
	inv   []float64
	scale int // device applies 2^scale·D⁻¹, so its largest entry is in [½, 1)

	mu     sync.Mutex
	scaled map[*denseOp]*denseOp // D^(−½)·A·D^(−½) per dense operator, made once
	sqrt   []float64             // D^(−½)
}

// constant reports whether every diagonal entry is the same.
func (j *jacobi) constant() bool {
	for _, v := range j.inv {
		if v != j.inv[0] {
			return false
		}
	}
	return true
}

// sqrtInv returns s = D^(−½) and its largest entry.
func (j *jacobi) sqrtInv() ([]float64, float64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.sqrt == nil {
		j.sqrt = make([]float64, len(j.inv))
		for i, v := range j.inv {
			j.sqrt[i] = math.Sqrt(v)
		}
	}
	peak := 0.0
	for _, v := range j.sqrt {
		peak = math.Max(peak, v)
	}
	return j.sqrt, peak
}

// scaledDense returns S·A·S with S = D^(−½) for a dense A, and S; the
// scaled operator is made once per operator, so that its program is
// reused.
func (j *jacobi) scaledDense(d *denseOp) (*denseOp, []float64) {
	s, _ := j.sqrtInv()
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(s) != d.n {
		// A Jacobi of another size: scale by nothing rather than index
		// past it (CG's checks report the mismatch).
		return d, nil
	}
	if j.scaled == nil {
		j.scaled = map[*denseOp]*denseOp{}
	}
	sa, ok := j.scaled[d]
	if !ok {
		sa = d.scaled(s, s)
		j.scaled[d] = sa
	}
	return sa, s
}

func (j *jacobi) ApplyTo(dst, r []float64) {
	for i, v := range r {
		dst[i] = v * j.inv[i]
	}
}

func (j *jacobi) DeviceApply(g *dataflow.Graph, r dataflow.Value) dataflow.Value {
	name := weightName("jacobi", j.id, 0)
	w, ok := g.Lookup(name)
	if !ok {
		data := make([]float64, len(j.inv))
		for i, v := range j.inv {
			data[i] = math.Ldexp(v, j.scale)
		}
		w = g.Const(name, dataflow.Shape{1, len(data)}, data)
	}
	return g.Mul(r, w)
}

var operatorIDs atomic.Uint64

// nextID numbers operators, so that two operators' weights in one graph
// never share a name.
func nextID() uint64 { return operatorIDs.Add(1) }

// weightName names an operator's weights at a scale; names must be MIL
// identifiers, so a negative scale is spelled with an m.
func weightName(kind string, id uint64, scale int) string {
	if scale < 0 {
		return fmt.Sprintf("%s%d_m%d", kind, id, -scale)
	}
	return fmt.Sprintf("%s%d_%d", kind, id, scale)
}

// exactInFP16 reports whether every coefficient, scaled by 2^scale, is an
// fp16 number, so that the conv's products are exact.
func (s *stencilOp) exactInFP16(scale int) bool {
	for _, row := range s.c {
		for _, v := range row {
			w := math.Ldexp(v, scale)
			if fp16.Round64(w) != w {
				return false
			}
		}
	}
	return true
}

// scalingRange: a positive diagonal spanning more than this factor is
// scaled to about 1 before the operator reaches the device.
const scalingRange = 16

// symmetricScaling returns S·A·S for the power-of-two diagonal S with
// s_i ≈ a_ii^(−½), and S, when A is dense with a positive diagonal spanning
// more than scalingRange; otherwise nil. Scaling by powers of two is exact,
// and S·A·S has a unit-order diagonal, so small entries of a badly scaled
// matrix stay above fp16's subnormals (Higham, Pranesh and Zounon 2019 §2
// make the same argument for two-sided scaling). The result is cached per
// operator (it lives as long as the operator), so that its device program
// is too.
func symmetricScaling(a Operator) (Operator, []float64) {
	d, ok := a.(*denseOp)
	if !ok {
		return nil, nil
	}
	d.symOnce.Do(func() { d.sym, d.symS = d.symmetricScaling() })
	if d.sym == nil {
		return nil, nil
	}
	return d.sym, d.symS
}

func (d *denseOp) symmetricScaling() (*denseOp, []float64) {
	diag := d.Diagonal()
	lo, hi := math.Inf(1), 0.0
	for _, v := range diag {
		if !(v > 0) {
			return nil, nil // not SPD: CG will say so
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if hi <= scalingRange*lo {
		return nil, nil
	}
	s := make([]float64, d.n)
	for i, v := range diag {
		s[i] = math.Exp2(-math.Round(math.Log2(v) / 2))
	}
	return d.scaled(s, s), s
}

// twoSidedScaling returns R·A·C for the power-of-two row and column scalings
// of precision.Equilibrate (Higham, Pranesh and Zounon 2019, Alg. 2.1), and
// R and C, when A is dense and its row or column scales span more than
// scalingRange; otherwise nil. For GMRES, which needs no symmetry.
func twoSidedScaling(a Operator) (Operator, []float64, []float64) {
	d, ok := a.(*denseOp)
	if !ok {
		return nil, nil, nil
	}
	d.eqOnce.Do(func() { d.eq, d.eqR, d.eqC = d.twoSidedScaling() })
	if d.eq == nil {
		return nil, nil, nil
	}
	return d.eq, d.eqR, d.eqC
}

func (d *denseOp) twoSidedScaling() (*denseOp, []float64, []float64) {
	r, c, err := precision.Equilibrate(mat.NewDense(d.n, d.n, d.a))
	if err != nil || (spread(r) <= scalingRange && spread(c) <= scalingRange) {
		return nil, nil, nil
	}
	return d.scaled(r, c), r, c
}

// spread is max(x)/min(x) for positive x.
func spread(x []float64) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, v := range x {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi / lo
}

// scaled returns diag(r)·A·diag(c) as a new operator.
func (d *denseOp) scaled(r, c []float64) *denseOp {
	sa := &denseOp{n: d.n, a: make([]float64, len(d.a)), id: nextID()}
	for i := range d.n {
		row := 0.0
		for j := range d.n {
			v := r[i] * d.a[i*d.n+j] * c[j]
			sa.a[i*d.n+j] = v
			row += math.Abs(v)
		}
		sa.norm = math.Max(sa.norm, row)
	}
	return sa
}
