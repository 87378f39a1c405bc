package reference

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// eigTol bounds the relative difference between the closed-form Poisson
// eigenvalues and gonum's EigenSym (LAPACK dsyev). dsyev is backward stable:
// |λ̂ − λ| ≤ c·n·u·‖A‖₂ (Golub & Van Loan, 4th ed., §8.3), so relative to
// λ_min the error is about c·n·u·κ₂ ≤ 10·64·1.1e-16·60 ≈ 4e-12 for the sizes
// below (n ≤ 64, κ₂ ≤ 60); the closed form itself is accurate to a few u.
const eigTol = 1e-10

func eigenvaluesSym(t *testing.T, a *mat.Dense) []float64 {
	t.Helper()
	n, _ := a.Dims()
	s := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			s.SetSym(i, j, a.At(i, j))
		}
	}
	var es mat.EigenSym
	require.True(t, es.Factorize(s, false))
	return es.Values(nil) // ascending
}

func requireRelClose(t *testing.T, want, got []float64, tol float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.False(t, math.IsNaN(got[i]), "index %d is NaN", i)
		require.LessOrEqual(t, math.Abs(got[i]-want[i]), tol*math.Abs(want[i]), "index %d: want %v got %v", i, want[i], got[i])
	}
}

func TestPoisson1DEigenvalues(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 16, 40} {
		a := Poisson1D(n)
		require.True(t, IsSymmetric(a.Dense(), 0))
		requireRelClose(t, Poisson1DEigenvalues(n), eigenvaluesSym(t, a.Dense()), eigTol)
	}
	// Closed form for n = 1: h = 1/2, λ = 2/h² = 8.
	require.InDelta(t, 8, Poisson1DEigenvalues(1)[0], 8*4*u64)
}

func TestPoisson2DEigenvalues(t *testing.T) {
	for _, sz := range [][2]int{{1, 1}, {3, 4}, {5, 2}, {8, 8}, {7, 9}} {
		a := Poisson2D(sz[0], sz[1])
		require.True(t, IsSymmetric(a.Dense(), 0))
		requireRelClose(t, Poisson2DEigenvalues(sz[0], sz[1]), eigenvaluesSym(t, a.Dense()), eigTol)
	}
	for _, eps := range []float64{1, 0.1, 1e-3} {
		a := Anisotropic2D(6, 5, eps)
		require.True(t, IsSymmetric(a.Dense(), 0))
		require.True(t, IsSPD(a.Dense()))
		requireRelClose(t, Anisotropic2DEigenvalues(6, 5, eps), eigenvaluesSym(t, a.Dense()), eigTol)
	}
}

func TestPoissonStructure(t *testing.T) {
	a := Poisson1D(4) // h = 1/5, 1/h² = 25
	want := mat.NewDense(4, 4, []float64{
		50, -25, 0, 0,
		-25, 50, -25, 0,
		0, -25, 50, -25,
		0, 0, -25, 50,
	})
	require.True(t, mat.Equal(want, a.Dense()))

	// nx = 3, ny = 2: h_x = 1/4, h_y = 1/3, so x-couplings are 16 and
	// y-couplings 9. Point (x=1, y=1) is index 4.
	p := Poisson2D(3, 2)
	require.Equal(t, 6, p.Dims())
	require.Equal(t, 2*16.0+2*9.0, p.At(4, 4))
	require.Equal(t, -16.0, p.At(4, 3))
	require.Equal(t, -16.0, p.At(4, 5))
	require.Equal(t, -9.0, p.At(4, 1))
	require.Zero(t, p.At(3, 2), "(0,1) and (2,0) are not neighbours")
	require.Equal(t, 3*2+2*(2*2)+2*(3*1), p.NNZ()) // diagonal, 2 x-links in each of 2 rows and 3 y-links, each stored twice
}

// TestStencilsOnPolynomials checks the operators against the differential
// operators they approximate, on polynomials for which the difference
// formulas are exact. The terms are O(1/h²)·|u| and cancel to O(1), so the
// rounding error is about 8·u·(4/h²)·max|u|; consTol allows that with
// margin for h = 1/33 (4/h² ≈ 4356, max|u| ≤ 3): ≈ 1e-11.
func TestStencilsOnPolynomials(t *testing.T) {
	const nx, ny = 32, 32
	const consTol = 1e-9
	xs, ys := Grid2D(nx, ny)
	interior := func(i int) bool {
		x, y := i%nx, i/nx
		return x > 0 && x < nx-1 && y > 0 && y < ny-1
	}
	apply := func(a *CSR, f func(x, y float64) float64) []float64 {
		u := Poisson2DRHS(nx, ny, f)
		out := make([]float64, len(u))
		a.MulVecTo(out, u)
		return out
	}
	// −Δ(x² + y²) = −4.
	lap := apply(Poisson2D(nx, ny), func(x, y float64) float64 { return x*x + y*y })
	// −(ε·∂xx + ∂yy)(x² + 3y²) = −(2ε + 6).
	aniso := apply(Anisotropic2D(nx, ny, 0.25), func(x, y float64) float64 { return x*x + 3*y*y })
	// −Δ(x + 2y) + Pe·w·∇(x + 2y) = Pe·3/√2 (upwind is exact on linear u).
	const pe = 20
	cd := apply(ConvectionDiffusion2D(nx, ny, pe), func(x, y float64) float64 { return x + 2*y })
	cdNeg := apply(ConvectionDiffusion2D(nx, ny, -pe), func(x, y float64) float64 { return x + 2*y })
	checked := 0
	for i := range xs {
		if !interior(i) {
			continue
		}
		checked++
		require.InDelta(t, -4, lap[i], consTol, "point (%g, %g)", xs[i], ys[i])
		require.InDelta(t, -(2*0.25 + 6), aniso[i], consTol)
		require.InDelta(t, pe*3/math.Sqrt2, cd[i], consTol*pe)
		require.InDelta(t, -pe*3/math.Sqrt2, cdNeg[i], consTol*pe)
	}
	require.Equal(t, (nx-2)*(ny-2), checked)
}

func TestConvectionDiffusionProperties(t *testing.T) {
	require.True(t, mat.Equal(ConvectionDiffusion2D(5, 4, 0).Dense(), Poisson2D(5, 4).Dense()))
	for _, pe := range []float64{1, 10, 100, -50} {
		a := ConvectionDiffusion2D(8, 8, pe)
		d := a.Dense()
		require.False(t, IsSymmetric(d, 1e-3), "Pe = %g", pe)
		// M-matrix sign pattern and weak diagonal dominance.
		n := a.Dims()
		for i := range n {
			cols, vals := a.Row(i)
			var off float64
			for k, j := range cols {
				if j == i {
					require.Positive(t, vals[k])
					continue
				}
				require.LessOrEqual(t, vals[k], 0.0)
				off += -vals[k]
			}
			require.LessOrEqual(t, off, a.At(i, i)*(1+4*u64))
		}
		require.Less(t, Cond2(d), 1e4)
	}
	require.True(t, IsSymmetric(Poisson2D(6, 7).Dense(), 0))
	require.True(t, IsSymmetric(Anisotropic2D(6, 7, 1e-2).Dense(), 0))
}

func TestManufacturedPoisson2D(t *testing.T) {
	a, b, x := ManufacturedPoisson2D(12, 9)
	require.Equal(t, 12*9, a.Dims())
	xs, ys := Grid2D(12, 9)
	ax := make([]float64, len(x))
	a.MulVecTo(ax, x)
	require.Equal(t, ax, b, "b must be exactly A·xExact")
	for i := range x {
		require.Equal(t, ManufacturedU(xs[i], ys[i]), x[i])
	}
	// Not an eigenvector: CG needs more than a handful of steps.
	res, err := CG(a, b, CGSettings{})
	require.NoError(t, err)
	require.Greater(t, res.Iterations, 10)
	// The discrete solution is close to the continuous one too: −Δu sampled
	// agrees with b to O(h²) relative.
	f := Poisson2DRHS(12, 9, func(x, y float64) float64 {
		s, c := math.Sincos(math.Pi * x)
		sy, cy := math.Sincos(math.Pi * y)
		e := math.Exp(x + 2*y)
		uxx := e * (s*(1-math.Pi*math.Pi) + 2*math.Pi*c) * sy
		uyy := e * (sy*(4-math.Pi*math.Pi) + 4*math.Pi*cy) * s
		return -uxx - uyy
	})
	require.Less(t, RelErr(b, f), 0.05) // h² ≈ 1/100 times derivative ratios
}

func TestGridAndRHSOrdering(t *testing.T) {
	xs, ys := Grid2D(3, 2)
	require.InDeltaSlice(t, []float64{0.25, 0.5, 0.75, 0.25, 0.5, 0.75}, xs, 1e-15)
	require.InDeltaSlice(t, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3, 2.0 / 3}, ys, 1e-15)
	b := Poisson2DRHS(3, 2, func(x, y float64) float64 { return 4*x + 30*y })
	require.InDeltaSlice(t, []float64{11, 12, 13, 21, 22, 23}, b, 1e-13)
}

func TestCSR(t *testing.T) {
	// Unsorted triplets with a duplicate and an explicit zero.
	a, err := NewCSR(3,
		[]int{2, 0, 1, 0, 2, 0},
		[]int{0, 2, 1, 0, 0, 1},
		[]float64{5, 3, 4, 1, 2, 0})
	require.NoError(t, err)
	want := mat.NewDense(3, 3, []float64{
		1, 0, 3,
		0, 4, 0,
		7, 0, 0,
	})
	require.True(t, mat.Equal(want, a.Dense()))
	require.Equal(t, 5, a.NNZ(), "explicit zero kept, duplicate merged")
	require.Equal(t, 7.0, a.At(2, 0))
	require.Zero(t, a.At(1, 2))
	cols, vals := a.Row(0)
	require.Equal(t, []int{0, 1, 2}, cols)
	require.Equal(t, []float64{1, 0, 3}, vals)
	require.Equal(t, []float64{1, 4, 0}, a.Diagonal())
	require.InEpsilon(t, mat.Norm(want, 2), a.FrobeniusNorm(), 4*u64)

	rows, cs, vs := a.Triplets()
	b, err := NewCSR(3, rows, cs, vs)
	require.NoError(t, err)
	require.Equal(t, a, b)

	x := []float64{1, -2, 0.5}
	got := make([]float64, 3)
	a.MulVecTo(got, x)
	var wantv mat.VecDense
	wantv.MulVec(want, mat.NewVecDense(3, x))
	require.Equal(t, wantv.RawVector().Data, got)

	require.Panics(t, func() { a.MulVecTo(got[:2], x) })
	require.Panics(t, func() { a.MulVecTo(x, x) })
	require.Panics(t, func() { a.At(3, 0) })
	require.Panics(t, func() { a.Row(-1) })

	_, err = JacobiPreconditioner(a)
	require.ErrorIs(t, err, ErrSingular)
}

func TestNewCSRBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		r, c []int
		v    []float64
		want error
	}{
		{"n = 0", 0, nil, nil, nil, ErrInput},
		{"lengths", 2, []int{0}, []int{0, 1}, []float64{1}, ErrShape},
		{"row out of range", 2, []int{2}, []int{0}, []float64{1}, ErrInput},
		{"negative col", 2, []int{0}, []int{-1}, []float64{1}, ErrInput},
		{"NaN", 2, []int{0}, []int{0}, []float64{math.NaN()}, ErrInput},
		{"Inf", 2, []int{0}, []int{0}, []float64{math.Inf(1)}, ErrInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewCSR(tc.n, tc.r, tc.c, tc.v)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, "reference: NewCSR")
		})
	}
}

func TestGeneratorsPanicOnBadArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"Poisson1D(0)":              func() { Poisson1D(0) },
		"Poisson1DEigenvalues(-1)":  func() { Poisson1DEigenvalues(-1) },
		"Poisson2D(0,3)":            func() { Poisson2D(0, 3) },
		"Anisotropic2D(eps=0)":      func() { Anisotropic2D(3, 3, 0) },
		"Anisotropic2D(eps=NaN)":    func() { Anisotropic2D(3, 3, math.NaN()) },
		"ConvectionDiffusion2D Inf": func() { ConvectionDiffusion2D(3, 3, math.Inf(1)) },
		"Poisson2DRHS(nil)":         func() { Poisson2DRHS(3, 3, nil) },
		"RandSVD(kappa<1)":          func() { RandSVD(3, 0.5, 3, false, newRNG(1)) },
		"RandSVD(mode 7)":           func() { RandSVD(3, 10, 7, false, newRNG(1)) },
		"RandSVD(nil rng)":          func() { RandSVD(3, 10, 3, false, nil) },
		"KMS(0)":                    func() { KMS(0, 0.5) },
		"Grcar(k<0)":                func() { Grcar(4, -1) },
		"IRFFT length":              func() { IRFFT(make([]complex128, 3), 6) },
		"FFT2 shape":                func() { FFT2(make([]complex128, 5), 2, 3) },
		"MatMul shape":              func() { MatMul(mat.NewDense(2, 3, nil), mat.NewDense(2, 3, nil)) },
	} {
		require.Panics(t, f, name)
	}
}
