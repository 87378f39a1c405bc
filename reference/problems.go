package reference

import (
	"fmt"
	"math"
	"slices"
)

// Finite-difference test problems on the unit interval and square with zero
// Dirichlet boundary conditions. The unknowns are the interior grid values;
// an n-point interior grid has spacing h = 1/(n+1) and nodes x_i = (i+1)·h,
// i = 0, …, n−1. Every operator approximates a positive (−Δ-type) operator
// and is scaled by 1/h², so it is consistent with the differential
// equation and its eigenvalues lie in (0, 4/h²] per dimension (LeVeque,
// Finite Difference Methods for ODEs and PDEs, 2007, §2.10 and §3.4).
// In 2-D, grid point (x, y) with 0 ≤ x < nx, 0 ≤ y < ny is vector index
// y*nx + x (x varies fastest).

// Poisson1D returns the n×n matrix (1/h²)·tridiag(−1, 2, −1), h = 1/(n+1),
// the three-point discretization of −u″ on (0, 1) with u(0) = u(1) = 0.
// It fails with ErrInput if n < 1.
func Poisson1D(n int) (*CSR, error) {
	if err := checkPositive("Poisson1D", "n", n); err != nil {
		return nil, err
	}
	s := invH2(n)
	var t triplets
	for i := range n {
		if i > 0 {
			t.add(i, i-1, -s)
		}
		t.add(i, i, 2*s)
		if i < n-1 {
			t.add(i, i+1, -s)
		}
	}
	return t.csr(n), nil
}

// Poisson1DEigenvalues returns the exact eigenvalues of Poisson1D(n) in
// increasing order, λ_k = (4/h²)·sin²(kπh/2), k = 1, …, n, h = 1/(n+1)
// (LeVeque 2007, §2.10). The eigenvector of λ_k is sin(kπx_j). It fails
// with ErrInput if n < 1.
func Poisson1DEigenvalues(n int) ([]float64, error) {
	if err := checkPositive("Poisson1DEigenvalues", "n", n); err != nil {
		return nil, err
	}
	return poisson1DEigenvalues(n), nil
}

// poisson1DEigenvalues is Poisson1DEigenvalues for a validated n ≥ 1.
func poisson1DEigenvalues(n int) []float64 {
	h := 1 / float64(n+1)
	lam := make([]float64, n)
	for k := 1; k <= n; k++ {
		s := math.Sin(float64(k) * math.Pi * h / 2)
		lam[k-1] = 4 * invH2(n) * s * s
	}
	return lam
}

// Poisson2D returns the five-point discretization of −Δu = −u_xx − u_yy on
// the unit square with zero Dirichlet boundary, on an nx×ny interior grid
// with h_x = 1/(nx+1), h_y = 1/(ny+1):
//
//	(2u_{x,y} − u_{x−1,y} − u_{x+1,y})/h_x² + (2u_{x,y} − u_{x,y−1} − u_{x,y+1})/h_y².
//
// The matrix is symmetric positive definite, of order nx·ny, and equals
// I⊗T_x + T_y⊗I with T the Poisson1D matrices (LeVeque 2007, §3.3–3.4).
// It fails with ErrInput if nx < 1, ny < 1 or nx·ny overflows int.
func Poisson2D(nx, ny int) (*CSR, error) {
	if err := checkGrid("Poisson2D", nx, ny); err != nil {
		return nil, err
	}
	return anisotropic2D(nx, ny, 1), nil
}

// Poisson2DEigenvalues returns the exact eigenvalues of Poisson2D(nx, ny) in
// increasing order: all sums λ_j(T_x) + λ_k(T_y) of the 1-D eigenvalues
// (LeVeque 2007, §3.4). It fails with ErrInput on the arguments Poisson2D
// rejects.
func Poisson2DEigenvalues(nx, ny int) ([]float64, error) {
	if err := checkGrid("Poisson2DEigenvalues", nx, ny); err != nil {
		return nil, err
	}
	return anisotropic2DEigenvalues(nx, ny, 1), nil
}

// Anisotropic2D returns the five-point discretization of −ε·u_xx − u_yy on
// the unit square with zero Dirichlet boundary, on the grid of Poisson2D:
// the x-couplings of Poisson2D are multiplied by ε. For ε > 0 it is
// symmetric positive definite; small ε makes the x-direction weakly coupled,
// the classic hard case for point smoothers and for CG (its condition number
// grows like 1/ε). It fails with ErrInput on the grid sizes Poisson2D
// rejects or if ε is not positive and finite.
func Anisotropic2D(nx, ny int, eps float64) (*CSR, error) {
	if err := checkAnisotropic("Anisotropic2D", nx, ny, eps); err != nil {
		return nil, err
	}
	return anisotropic2D(nx, ny, eps), nil
}

// anisotropic2D is Anisotropic2D for validated arguments.
func anisotropic2D(nx, ny int, eps float64) *CSR {
	sx, sy := eps*invH2(nx), invH2(ny)
	return stencil2D(nx, ny, 2*sx+2*sy, -sx, -sx, -sy, -sy)
}

// Anisotropic2DEigenvalues returns the exact eigenvalues of
// Anisotropic2D(nx, ny, eps) in increasing order: ε·λ_j(T_x) + λ_k(T_y).
// It fails with ErrInput on the arguments Anisotropic2D rejects.
func Anisotropic2DEigenvalues(nx, ny int, eps float64) ([]float64, error) {
	if err := checkAnisotropic("Anisotropic2DEigenvalues", nx, ny, eps); err != nil {
		return nil, err
	}
	return anisotropic2DEigenvalues(nx, ny, eps), nil
}

// anisotropic2DEigenvalues is Anisotropic2DEigenvalues for validated
// arguments.
func anisotropic2DEigenvalues(nx, ny int, eps float64) []float64 {
	lx, ly := poisson1DEigenvalues(nx), poisson1DEigenvalues(ny)
	lam := make([]float64, 0, nx*ny)
	for _, b := range ly {
		for _, a := range lx {
			lam = append(lam, eps*a+b)
		}
	}
	slices.Sort(lam)
	return lam
}

// checkAnisotropic validates the arguments of Anisotropic2D.
func checkAnisotropic(fn string, nx, ny int, eps float64) error {
	if err := checkGrid(fn, nx, ny); err != nil {
		return err
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("reference: %s: ε = %v, want positive and finite: %w", fn, eps, ErrInput)
	}
	return nil
}

// ConvectionDiffusion2D returns the discretization of
//
//	−Δu + Pe·(w·∇u),  w = (1, 1)/√2,
//
// on the unit square with zero Dirichlet boundary, on the grid of Poisson2D:
// −Δ by the five-point stencil and each first derivative by the first-order
// upwind difference, backward ((u_x − u_{x−1})/h) where the velocity
// component Pe·w is positive and forward where it is negative (Morton,
// Numerical Solution of Convection–Diffusion Problems, 1996). The matrix is nonsymmetric for Pe ≠ 0, has positive diagonal and
// nonpositive off-diagonal entries and is weakly diagonally dominant with
// strict dominance next to the boundary, hence a nonsingular M-matrix for
// every Pe. It fails with ErrInput on the grid sizes Poisson2D rejects or if
// Pe is NaN or Inf.
func ConvectionDiffusion2D(nx, ny int, peclet float64) (*CSR, error) {
	if err := checkGrid("ConvectionDiffusion2D", nx, ny); err != nil {
		return nil, err
	}
	if math.IsNaN(peclet) || math.IsInf(peclet, 0) {
		return nil, fmt.Errorf("reference: ConvectionDiffusion2D: Pe = %v, want finite: %w", peclet, ErrInput)
	}
	wx := peclet / math.Sqrt2 // velocity components Pe·w
	wy := peclet / math.Sqrt2
	dx, dy := invH2(nx), invH2(ny)
	center := 2*dx + 2*dy + math.Abs(wx)*float64(nx+1) + math.Abs(wy)*float64(ny+1)
	west, east := -dx, -dx
	if wx > 0 {
		west -= wx * float64(nx+1)
	} else {
		east += wx * float64(nx+1)
	}
	south, north := -dy, -dy
	if wy > 0 {
		south -= wy * float64(ny+1)
	} else {
		north += wy * float64(ny+1)
	}
	return stencil2D(nx, ny, center, west, east, south, north), nil
}

// stencil2D builds the constant five-point stencil matrix on the nx×ny grid;
// neighbours outside the grid are the zero boundary and are dropped.
func stencil2D(nx, ny int, center, west, east, south, north float64) *CSR {
	var t triplets
	for y := range ny {
		for x := range nx {
			i := y*nx + x
			if y > 0 {
				t.add(i, i-nx, south)
			}
			if x > 0 {
				t.add(i, i-1, west)
			}
			t.add(i, i, center)
			if x < nx-1 {
				t.add(i, i+1, east)
			}
			if y < ny-1 {
				t.add(i, i+nx, north)
			}
		}
	}
	return t.csr(nx * ny)
}

// Grid2D returns the coordinates of the interior grid points of the nx×ny
// grid: point i = y*nx + x sits at (x[i], y[i]) = ((x+1)·h_x, (y+1)·h_y).
// It fails with ErrInput on the grid sizes Poisson2D rejects.
func Grid2D(nx, ny int) (x, y []float64, err error) {
	if err := checkGrid("Grid2D", nx, ny); err != nil {
		return nil, nil, err
	}
	x, y = grid2D(nx, ny)
	return x, y, nil
}

// grid2D is Grid2D for validated sizes.
func grid2D(nx, ny int) (x, y []float64) {
	hx, hy := 1/float64(nx+1), 1/float64(ny+1)
	x = make([]float64, nx*ny)
	y = make([]float64, nx*ny)
	for j := range ny {
		for i := range nx {
			x[j*nx+i] = float64(i+1) * hx
			y[j*nx+i] = float64(j+1) * hy
		}
	}
	return x, y
}

// Poisson2DRHS samples f at the interior grid points of the nx×ny grid, in
// the vector order of Poisson2D, giving the right-hand side of the
// discretized −Δu = f. It fails with ErrInput on the grid sizes Poisson2D
// rejects or if f is nil.
func Poisson2DRHS(nx, ny int, f func(x, y float64) float64) ([]float64, error) {
	if err := checkGrid("Poisson2DRHS", nx, ny); err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("reference: Poisson2DRHS: nil f: %w", ErrInput)
	}
	return sample2D(nx, ny, f), nil
}

// sample2D is Poisson2DRHS for validated arguments.
func sample2D(nx, ny int, f func(x, y float64) float64) []float64 {
	xs, ys := grid2D(nx, ny)
	b := make([]float64, len(xs))
	for i := range b {
		b[i] = f(xs[i], ys[i])
	}
	return b
}

// ManufacturedU is the smooth function sampled by ManufacturedPoisson2D:
// u(x, y) = sin(πx)·sin(πy)·exp(x + 2y). It vanishes on the boundary of the
// unit square and, unlike sin(πx)·sin(πy) alone, is not an eigenvector of
// the discrete Laplacian, so a Krylov solver needs many iterations.
func ManufacturedU(x, y float64) float64 {
	return math.Sin(math.Pi*x) * math.Sin(math.Pi*y) * math.Exp(x+2*y)
}

// ManufacturedPoisson2D returns a = Poisson2D(nx, ny), xExact = ManufacturedU
// at the grid points and b = a·xExact computed in float64. The discrete
// solution of a·x = b is therefore xExact itself (to within cond(a)·ε from
// the rounding of b), not merely an O(h²) approximation of it, so a solver's
// error can be measured directly with RelErr. It fails with ErrInput on the
// grid sizes Poisson2D rejects.
func ManufacturedPoisson2D(nx, ny int) (a *CSR, b, xExact []float64, err error) {
	if err := checkGrid("ManufacturedPoisson2D", nx, ny); err != nil {
		return nil, nil, nil, err
	}
	a = anisotropic2D(nx, ny, 1)
	xExact = sample2D(nx, ny, ManufacturedU)
	b = make([]float64, len(xExact))
	a.MulVecTo(b, xExact)
	return a, b, xExact, nil
}

// triplets accumulates matrix entries for NewCSR.
type triplets struct {
	rows, cols []int
	vals       []float64
}

func (t *triplets) add(i, j int, v float64) {
	t.rows = append(t.rows, i)
	t.cols = append(t.cols, j)
	t.vals = append(t.vals, v)
}

// csr builds the matrix. The generators validate their arguments and only
// produce valid triplets, so an error here is a bug in this package, not bad
// input, and panics.
func (t *triplets) csr(n int) *CSR {
	m, err := NewCSR(n, t.rows, t.cols, t.vals)
	if err != nil {
		panic(err)
	}
	return m
}

// invH2 returns 1/h² = (n+1)² for h = 1/(n+1), exactly (for n < 2²⁶).
func invH2(n int) float64 { return float64(n+1) * float64(n+1) }

// checkPositive returns an ErrInput error naming fn, name and v unless
// v ≥ 1.
func checkPositive(fn, name string, v int) error {
	if v < 1 {
		return fmt.Errorf("reference: %s: %s = %d, want ≥ 1: %w", fn, name, v, ErrInput)
	}
	return nil
}

// checkGrid validates the sizes of an nx×ny grid: both at least 1 and the
// order nx·ny representable as an int.
func checkGrid(fn string, nx, ny int) error {
	if err := checkPositive(fn, "nx", nx); err != nil {
		return err
	}
	if err := checkPositive(fn, "ny", ny); err != nil {
		return err
	}
	if nx > math.MaxInt/ny {
		return fmt.Errorf("reference: %s: nx·ny = %d·%d overflows int: %w", fn, nx, ny, ErrInput)
	}
	return nil
}
