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
		a := must(Poisson1D(n)).get(t)
		require.True(t, IsSymmetric(a.Dense(), 0))
		requireRelClose(t, must(Poisson1DEigenvalues(n)).get(t), eigenvaluesSym(t, a.Dense()), eigTol)
	}
	// Closed form for n = 1: h = 1/2, λ = 2/h² = 8.
	require.InDelta(t, 8, must(Poisson1DEigenvalues(1)).get(t)[0], 8*4*u64)
}

func TestPoisson2DEigenvalues(t *testing.T) {
	for _, sz := range [][2]int{{1, 1}, {3, 4}, {5, 2}, {8, 8}, {7, 9}} {
		a := must(Poisson2D(sz[0], sz[1])).get(t)
		require.True(t, IsSymmetric(a.Dense(), 0))
		requireRelClose(t, must(Poisson2DEigenvalues(sz[0], sz[1])).get(t), eigenvaluesSym(t, a.Dense()), eigTol)
	}
	for _, eps := range []float64{1, 0.1, 1e-3} {
		a := must(Anisotropic2D(6, 5, eps)).get(t)
		require.True(t, IsSymmetric(a.Dense(), 0))
		require.True(t, IsSPD(a.Dense()))
		requireRelClose(t, must(Anisotropic2DEigenvalues(6, 5, eps)).get(t), eigenvaluesSym(t, a.Dense()), eigTol)
	}
}

func TestPoissonStructure(t *testing.T) {
	a := must(Poisson1D(4)).get(t) // h = 1/5, 1/h² = 25
	want := mat.NewDense(4, 4, []float64{
		50, -25, 0, 0,
		-25, 50, -25, 0,
		0, -25, 50, -25,
		0, 0, -25, 50,
	})
	require.True(t, mat.Equal(want, a.Dense()))

	// nx = 3, ny = 2: h_x = 1/4, h_y = 1/3, so x-couplings are 16 and
	// y-couplings 9. Point (x=1, y=1) is index 4.
	p := must(Poisson2D(3, 2)).get(t)
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
	xs, ys := mustGrid2D(t, nx, ny)
	interior := func(i int) bool {
		x, y := i%nx, i/nx
		return x > 0 && x < nx-1 && y > 0 && y < ny-1
	}
	apply := func(a *CSR, f func(x, y float64) float64) []float64 {
		u := must(Poisson2DRHS(nx, ny, f)).get(t)
		out := make([]float64, len(u))
		a.MulVecTo(out, u)
		return out
	}
	// −Δ(x² + y²) = −4.
	lap := apply(must(Poisson2D(nx, ny)).get(t), func(x, y float64) float64 { return x*x + y*y })
	// −(ε·∂xx + ∂yy)(x² + 3y²) = −(2ε + 6).
	aniso := apply(must(Anisotropic2D(nx, ny, 0.25)).get(t), func(x, y float64) float64 { return x*x + 3*y*y })
	// −Δ(x + 2y) + Pe·w·∇(x + 2y) = Pe·3/√2 (upwind is exact on linear u).
	const pe = 20
	cd := apply(must(ConvectionDiffusion2D(nx, ny, pe)).get(t), func(x, y float64) float64 { return x + 2*y })
	cdNeg := apply(must(ConvectionDiffusion2D(nx, ny, -pe)).get(t), func(x, y float64) float64 { return x + 2*y })
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
	require.True(t, mat.Equal(must(ConvectionDiffusion2D(5, 4, 0)).get(t).Dense(), must(Poisson2D(5, 4)).get(t).Dense()))
	for _, pe := range []float64{1, 10, 100, -50} {
		a := must(ConvectionDiffusion2D(8, 8, pe)).get(t)
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
	require.True(t, IsSymmetric(must(Poisson2D(6, 7)).get(t).Dense(), 0))
	require.True(t, IsSymmetric(must(Anisotropic2D(6, 7, 1e-2)).get(t).Dense(), 0))
}

func TestManufacturedPoisson2D(t *testing.T) {
	a, b, x := mustManufactured(t, 12, 9)
	require.Equal(t, 12*9, a.Dims())
	xs, ys := mustGrid2D(t, 12, 9)
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
	f := must(Poisson2DRHS(12, 9, func(x, y float64) float64 {
		s, c := math.Sincos(math.Pi * x)
		sy, cy := math.Sincos(math.Pi * y)
		e := math.Exp(x + 2*y)
		uxx := e * (s*(1-math.Pi*math.Pi) + 2*math.Pi*c) * sy
		uyy := e * (sy*(4-math.Pi*math.Pi) + 4*math.Pi*cy) * s
		return -uxx - uyy
	})).get(t)
	require.Less(t, RelErr(b, f), 0.05) // h² ≈ 1/100 times derivative ratios
}

func TestGridAndRHSOrdering(t *testing.T) {
	xs, ys := mustGrid2D(t, 3, 2)
	require.InDeltaSlice(t, []float64{0.25, 0.5, 0.75, 0.25, 0.5, 0.75}, xs, 1e-15)
	require.InDeltaSlice(t, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3, 2.0 / 3, 2.0 / 3, 2.0 / 3}, ys, 1e-15)
	b := must(Poisson2DRHS(3, 2, func(x, y float64) float64 { return 4*x + 30*y })).get(t)
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

// TestBadArguments checks that every generator and helper reports an
// impossible argument as an error wrapping the right sentinel, naming the
// function and the offending value, instead of panicking.
func TestBadArguments(t *testing.T) {
	rng := newRNG(1)
	f1 := func(x, y float64) float64 { return x + y }
	for _, tc := range []struct {
		name string
		call func() error
		want error
		msg  string // substring of the message: function and bad value
	}{
		{"Poisson1D(0)", func() error { _, err := Poisson1D(0); return err }, ErrInput, "Poisson1D: n = 0"},
		{"Poisson1DEigenvalues(-1)", func() error { _, err := Poisson1DEigenvalues(-1); return err }, ErrInput, "Poisson1DEigenvalues: n = -1"},
		{"Poisson2D(0,3)", func() error { _, err := Poisson2D(0, 3); return err }, ErrInput, "Poisson2D: nx = 0"},
		{"Poisson2D(3,-2)", func() error { _, err := Poisson2D(3, -2); return err }, ErrInput, "Poisson2D: ny = -2"},
		{"Poisson2D overflow", func() error { _, err := Poisson2D(math.MaxInt/2, 3); return err }, ErrInput, "Poisson2D: nx·ny"},
		{"Poisson2DEigenvalues(3,0)", func() error { _, err := Poisson2DEigenvalues(3, 0); return err }, ErrInput, "Poisson2DEigenvalues: ny = 0"},
		{"Anisotropic2D(nx=0)", func() error { _, err := Anisotropic2D(0, 3, 1); return err }, ErrInput, "Anisotropic2D: nx = 0"},
		{"Anisotropic2D(ε=0)", func() error { _, err := Anisotropic2D(3, 3, 0); return err }, ErrInput, "Anisotropic2D: ε = 0"},
		{"Anisotropic2D(ε<0)", func() error { _, err := Anisotropic2D(3, 3, -0.5); return err }, ErrInput, "Anisotropic2D: ε = -0.5"},
		{"Anisotropic2D(ε=NaN)", func() error { _, err := Anisotropic2D(3, 3, math.NaN()); return err }, ErrInput, "Anisotropic2D: ε = NaN"},
		{"Anisotropic2D(ε=Inf)", func() error { _, err := Anisotropic2D(3, 3, math.Inf(1)); return err }, ErrInput, "Anisotropic2D: ε = +Inf"},
		{"Anisotropic2DEigenvalues(ε=0)", func() error { _, err := Anisotropic2DEigenvalues(3, 3, 0); return err }, ErrInput, "Anisotropic2DEigenvalues: ε = 0"},
		{"ConvectionDiffusion2D(ny=0)", func() error { _, err := ConvectionDiffusion2D(3, 0, 1); return err }, ErrInput, "ConvectionDiffusion2D: ny = 0"},
		{"ConvectionDiffusion2D(Pe=Inf)", func() error { _, err := ConvectionDiffusion2D(3, 3, math.Inf(-1)); return err }, ErrInput, "ConvectionDiffusion2D: Pe = -Inf"},
		{"ConvectionDiffusion2D(Pe=NaN)", func() error { _, err := ConvectionDiffusion2D(3, 3, math.NaN()); return err }, ErrInput, "ConvectionDiffusion2D: Pe = NaN"},
		{"Grid2D(0,1)", func() error { _, _, err := Grid2D(0, 1); return err }, ErrInput, "Grid2D: nx = 0"},
		{"Poisson2DRHS(nx=-1)", func() error { _, err := Poisson2DRHS(-1, 3, f1); return err }, ErrInput, "Poisson2DRHS: nx = -1"},
		{"Poisson2DRHS(nil f)", func() error { _, err := Poisson2DRHS(3, 3, nil); return err }, ErrInput, "Poisson2DRHS: nil f"},
		{"ManufacturedPoisson2D(2,0)", func() error { _, _, _, err := ManufacturedPoisson2D(2, 0); return err }, ErrInput, "ManufacturedPoisson2D: ny = 0"},
		{"HaarOrthogonal(0)", func() error { _, err := HaarOrthogonal(0, rng); return err }, ErrInput, "HaarOrthogonal: n = 0"},
		{"HaarOrthogonal(nil rng)", func() error { _, err := HaarOrthogonal(3, nil); return err }, ErrInput, "HaarOrthogonal: nil rng"},
		{"RandSVDSigma(n=0)", func() error { _, err := RandSVDSigma(0, 10, 3); return err }, ErrInput, "RandSVDSigma: n = 0"},
		{"RandSVDSigma(κ=Inf)", func() error { _, err := RandSVDSigma(3, math.Inf(1), 3); return err }, ErrInput, "RandSVDSigma: κ = +Inf"},
		{"RandSVDSigma(mode 0)", func() error { _, err := RandSVDSigma(3, 10, 0); return err }, ErrInput, "RandSVDSigma: mode = 0"},
		{"RandSVD(n=-3)", func() error { _, err := RandSVD(-3, 10, 3, true, rng); return err }, ErrInput, "RandSVD: n = -3"},
		{"RandSVD(κ<1)", func() error { _, err := RandSVD(3, 0.5, 3, false, rng); return err }, ErrInput, "RandSVD: κ = 0.5"},
		{"RandSVD(κ=NaN)", func() error { _, err := RandSVD(3, math.NaN(), 3, false, rng); return err }, ErrInput, "RandSVD: κ = NaN"},
		{"RandSVD(mode 7)", func() error { _, err := RandSVD(3, 10, 7, false, rng); return err }, ErrInput, "RandSVD: mode = 7"},
		{"RandSVD(nil rng)", func() error { _, err := RandSVD(3, 10, 3, false, nil); return err }, ErrInput, "RandSVD: nil rng"},
		{"KMS(0)", func() error { _, err := KMS(0, 0.5); return err }, ErrInput, "KMS: n = 0"},
		{"KMS(ρ=NaN)", func() error { _, err := KMS(3, math.NaN()); return err }, ErrInput, "KMS: ρ = NaN"},
		{"Grcar(n=0)", func() error { _, err := Grcar(0, 3); return err }, ErrInput, "Grcar: n = 0"},
		{"Grcar(k<0)", func() error { _, err := Grcar(4, -1); return err }, ErrInput, "Grcar: k = -1"},
		{"IRFFT(n=0)", func() error { _, err := IRFFT(make([]complex128, 1), 0); return err }, ErrInput, "IRFFT: n = 0"},
		{"IRFFT length", func() error { _, err := IRFFT(make([]complex128, 3), 6); return err }, ErrShape, "IRFFT: 3 coefficients for n = 6, want 4"},
		{"FFT2(rows=0)", func() error { _, err := FFT2(nil, 0, 3); return err }, ErrInput, "FFT2: 0×3"},
		{"FFT2 shape", func() error { _, err := FFT2(make([]complex128, 5), 2, 3); return err }, ErrShape, "FFT2: 5 values for a 2×3"},
		{"FFT2 no overflow", func() error { _, err := FFT2(make([]complex128, 4), 1<<62+1, 4); return err }, ErrShape, "FFT2: 4 values"},
		{"MatMul shape", func() error { _, err := MatMul(mat.NewDense(2, 3, nil), mat.NewDense(2, 3, nil)); return err }, ErrShape, "MatMul: 2×3 times 2×3"},
		{"MatMul nil", func() error { _, err := MatMul(nil, mat.NewDense(2, 3, nil)); return err }, ErrInput, "MatMul: nil matrix"},
		{"MatMul empty", func() error { _, err := MatMul(&mat.Dense{}, mat.NewDense(2, 3, nil)); return err }, ErrInput, "MatMul: 0×0 times 2×3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = tc.call() })
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, "reference: "+tc.msg)
		})
	}
}
