package krylov

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
)

// MaxSpectralSide bounds each side of a FastDiagonalization grid. Its sine
// matrices are side² fp16 weights (2 MiB at 1024), and their smallest
// entries, about √(2/(n+1))·π/(n+1), are fp16 normal numbers up to a side
// of about 1500 (1.4e-4 at 1024, against fp16's smallest normal 6.1e-5).
const MaxSpectralSide = 1024

// FastDiagonalization returns the exact inverse of a Stencil2D that is
// symmetric about both axes (c[dy][0] = c[dy][2] and c[0][dx] = c[2][dx])
// and positive definite, as a preconditioner for CG, applied on the device
// by the fast diagonalization method (Lynch, Rice and Thomas 1964,
// Numer. Math. 6). Such a stencil is diagonalized by the orthonormal sine
// transforms S_x (nx×nx) and S_y (ny×ny): for the grid R of a vector,
// A⁻¹·r is S_y·(M ∘ (S_y·R·S_x))·S_x with M the inverse eigenvalues, so a
// dispatch is four 1×1 convs with constant sine matrices and one product;
// no dot product, and no application of A on the device.
//
// It is CG's default for such a stencil (Settings.Precond nil); pass it
// explicitly to be told when a stencil does not qualify. CG with it needs
// a few dispatches whatever the right-hand side (the fp16
// rounding of the transforms limits each to a fixed reduction of the
// error, which the float64 outer iteration compounds), where the default
// polynomial needs many for a smooth one; Settings.Unroll is then unused.
// The device work per dispatch is 4·n·(nx + ny) multiply-adds against the
// polynomial's 27·n·Unroll: more per dispatch on large grids, far less
// per solve. The device bytes per unknown per dispatch are
// 30 + 4·(nx/ny + ny/nx) by lower.Estimate (the last term the sine
// matrices), 38 on a square grid, against the polynomial's 12·Unroll.
// Both sides must be at most MaxSpectralSide (ErrUnsupported); another
// operator, a stencil without the symmetry or one that is not positive
// definite is refused (ErrInput, ErrNotSPD).
func FastDiagonalization(a Operator) (Preconditioner, error) {
	st, ok := a.(*stencilOp)
	if !ok {
		return nil, fmt.Errorf("krylov: FastDiagonalization needs a Stencil2D, got %T (use Jacobi, or no preconditioner): %w", a, ErrInput)
	}
	lam, ok := st.lambdaMin()
	if !ok {
		return nil, fmt.Errorf("krylov: FastDiagonalization needs a stencil symmetric about both axes (c[dy][0] = c[dy][2], c[0][dx] = c[2][dx]); this one is not, so sine transforms do not diagonalize it: %w", ErrInput)
	}
	if !(lam > 0) {
		return nil, fmt.Errorf("krylov: FastDiagonalization: the stencil's smallest eigenvalue is %g, so it is not positive definite: %w", lam, ErrNotSPD)
	}
	if st.nx > MaxSpectralSide || st.ny > MaxSpectralSide {
		return nil, fmt.Errorf("krylov: FastDiagonalization: grid %d×%d; each side may be at most %d (a side of n needs an n×n sine matrix of fp16 weights, whose smallest entries must stay normal): %w",
			st.nx, st.ny, MaxSpectralSide, ErrUnsupported)
	}
	f := &spectral{op: st, id: nextID(), sx: sineMatrix(st.nx), sy: sineMatrix(st.ny), m: make([]float64, st.nx*st.ny)}
	// M[j][i] = 2^e/λ_ij with 2^e the largest power of two ≤ λ_min: entries
	// in (0, 1].
	_, e := math.Frexp(lam)
	scale := math.Ldexp(1, e-1)
	for j := range st.ny {
		v := 2 * math.Cos(float64(j+1)*math.Pi/float64(st.ny+1))
		for i := range st.nx {
			u := 2 * math.Cos(float64(i+1)*math.Pi/float64(st.nx+1))
			f.m[j*st.nx+i] = scale / st.eigenvalue(u, v)
		}
	}
	f.scale = scale
	f.shift, f.q = f.factors()
	return f, nil
}

// sineMatrix is the orthonormal DST-I matrix of order n, S[x][k] =
// √(2/(n+1))·sin((x+1)(k+1)π/(n+1)): symmetric, S² = I, and its columns
// are the eigenvectors of the Dirichlet neighbour sum.
func sineMatrix(n int) []float64 {
	s := make([]float64, n*n)
	f := math.Sqrt(2 / float64(n+1))
	for x := range n {
		for k := range n {
			// The argument reduced mod 2(n+1), so that the multiples of π
			// give exact zeros (not 1e-17, a subnormal to fp16).
			m := (x + 1) * (k + 1) % (2 * (n + 1))
			if m%(n+1) != 0 {
				s[x*n+k] = f * math.Sin(float64(m)*math.Pi/float64(n+1))
			}
		}
	}
	return s
}

type spectral struct {
	id     uint64
	op     *stencilOp
	sx, sy []float64 // sine matrices, nx×nx and ny×ny
	m      []float64 // scale/λ_ij, row j (y mode), column i (x mode)
	scale  float64   // a power of two ≤ λ_min
	shift  int       // the device applies 2^shift·M to 2^−shift·r (see factors)
	q      int       // as q equal factors
}

// minM is M's smallest entry, scale/λ_max.
func (f *spectral) minM() float64 {
	m := 1.0
	for _, v := range f.m {
		m = math.Min(m, v)
	}
	return m
}

// maxInputShift bounds factors' shift: the device's input then has
// ‖r‖₂ ≥ 2^(11 − maxInputShift), entries of root mean square at least 2⁻⁹
// for a million unknowns, five binades above fp16's subnormals (2⁻¹⁴).
const maxInputShift = 10

// factors returns how the device applies M, whose smallest entry is about
// 1/(2κ) and so subnormal in fp16 once κ passes about 2¹⁴ (Poisson 256²), where the
// lowering would refuse it and a flushed entry would drop an upper mode.
// M is multiplied by 2^shift, the least power of two that puts its
// smallest entry in fp16's normal range (at most maxInputShift), and the
// host scales the device's input by 2^−shift, so that every conv output
// stays bounded by ‖r‖₂ as before; only if that is not enough (κ past
// 2²³, not reached by Poisson on MaxSpectralSide² grids) is 2^shift·M
// applied as q > 1 equal factors with normal entries. For every grid the
// package's tests use, q = 1: one product.
func (f *spectral) factors() (shift, q int) {
	minM := f.minM()
	for shift < maxInputShift && math.Ldexp(minM, shift) < 0x1p-14 {
		shift++
	}
	q = 1
	for math.Pow(math.Ldexp(minM, shift), 1/float64(q)) < 0x1p-14 {
		q++
	}
	return shift, q
}

// ApplyTo sets dst = A⁻¹·r in float64 (dense transforms, O(n·(nx+ny))).
func (f *spectral) ApplyTo(dst, r []float64) {
	nx, ny := f.op.nx, f.op.ny
	t := make([]float64, nx*ny)
	mulRight(t, r, f.sx, ny, nx) // R·S_x
	u := make([]float64, nx*ny)
	mulLeft(u, f.sy, t, ny, nx) // S_y·R·S_x
	for i, v := range f.m {
		u[i] *= v / f.scale
	}
	mulRight(t, u, f.sx, ny, nx)
	mulLeft(dst, f.sy, t, ny, nx)
}

// mulRight sets dst = a·s for a (rows×cols) and s (cols×cols).
func mulRight(dst, a, s []float64, rows, cols int) {
	for r := range rows {
		out := dst[r*cols : (r+1)*cols]
		clear(out)
		for k, v := range a[r*cols : (r+1)*cols] {
			if v == 0 {
				continue
			}
			for c, w := range s[k*cols : (k+1)*cols] {
				out[c] += v * w
			}
		}
	}
}

// mulLeft sets dst = s·a for s (rows×rows) and a (rows×cols).
func mulLeft(dst, s, a []float64, rows, cols int) {
	clear(dst[:rows*cols])
	for r := range rows {
		out := dst[r*cols : (r+1)*cols]
		for k := range rows {
			w := s[r*rows+k]
			for c, v := range a[k*cols : (k+1)*cols] {
				out[c] += w * v
			}
		}
	}
}

// DeviceApply adds z = scale·A⁻¹·r, for r of shape [1, n], the grid
// [1, 1, ny, nx] or its rows as channels, [1, ny, 1, nx] (z has r's
// shape; CG's program takes the last, which needs no reshape). The grid R is viewed as [1, ny, 1, nx]
// (a channel per grid row), so that a 1×1 conv with weights S_y mixes the
// rows, S_y·R, with no layout change; one transpose to [1, nx, 1, ny] lets
// the next conv mix the columns:
//
//	conv S_y, transpose, conv S_x → (S_y·R·S_x)ᵀ; ∘ Mᵀ;
//	conv S_x, transpose, conv S_y → S_y·(M ∘ (S_y·R·S_x))·S_x.
//
// The transforms are orthogonal and M ≤ 1, so every conv output is
// bounded by ‖r‖₂: below 2¹⁴ for the solver's inputs (‖r‖₂ ≤ 2¹²).
func (f *spectral) DeviceApply(g *dataflow.Graph, r dataflow.Value) dataflow.Value {
	nx, ny := f.op.nx, f.op.ny
	konst := func(name string, shape dataflow.Shape, data []float64) dataflow.Value {
		name = weightName("fd_"+name, f.id, 0)
		if v, ok := g.Lookup(name); ok {
			return v
		}
		return g.Const(name, shape, data)
	}
	sx := konst("sx", dataflow.Shape{nx, nx, 1, 1}, f.sx)
	sy := konst("sy", dataflow.Shape{ny, ny, 1, 1}, f.sy)
	shift, q := f.shift, f.q
	mt := make([]float64, nx*ny) // ((2^shift·M)^(1/q))ᵀ, [1, nx, 1, ny]
	for j := range ny {
		for i := range nx {
			mt[i*ny+j] = math.Pow(math.Ldexp(f.m[j*nx+i], shift), 1/float64(q))
		}
	}
	m := konst(fmt.Sprintf("mt%d", q), dataflow.Shape{1, nx, 1, ny}, mt)
	conv := func(x, w dataflow.Value) dataflow.Value { return g.Conv2D(x, w, dataflow.Conv2DOptions{}) }
	swap := []int{0, 3, 2, 1}
	shape, rows := r.Shape(), dataflow.Shape{1, ny, 1, nx}
	if !shape.Equal(rows) {
		r = g.Reshape(r, rows)
	}
	t := g.Transpose(conv(r, sy), swap)
	t = conv(t, sx)
	for range q {
		t = g.Mul(t, m)
	}
	z := conv(g.Transpose(conv(t, sx), swap), sy)
	if !shape.Equal(rows) {
		z = g.Reshape(z, shape)
	}
	return z
}
