package krylov

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
)

func simDevice(t testing.TB, name string) shim.Device {
	t.Helper()
	d, err := shim.Open(name)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// poisson returns the 5-point Laplacian on an nx×ny interior grid of the
// unit square, scaled by 1/h² per axis as reference.Poisson2D is.
func poisson(t testing.TB, nx, ny int) Operator {
	hx2 := float64((nx + 1) * (nx + 1))
	hy2 := float64((ny + 1) * (ny + 1))
	op, err := Stencil2D(nx, ny, [3][3]float64{{0, -hy2, 0}, {-hx2, 2*hx2 + 2*hy2, -hx2}, {0, -hy2, 0}})
	require.NoError(t, err)
	return op
}

// polynomialOf is Polynomial(a): CG's device polynomial, which a nil
// Precond no longer means for a stencil FastDiagonalization accepts.
func polynomialOf(t testing.TB, a Operator) Preconditioner {
	p, err := Polynomial(a)
	require.NoError(t, err)
	return p
}

func randVec(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 42))
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.Float64()*2 - 1
	}
	return x
}

// csrOperator wraps a reference matrix as a Dense operator.
func denseOf(t testing.TB, a mat.Matrix) Operator {
	op, err := Dense(a)
	require.NoError(t, err)
	return op
}

func TestStencilMatchesReference(t *testing.T) {
	for _, n := range [][2]int{{1, 1}, {3, 5}, {17, 9}} {
		op := poisson(t, n[0], n[1])
		csr, err := reference.Poisson2D(n[0], n[1])
		require.NoError(t, err)
		x := randVec(n[0]*n[1], 3)
		got := make([]float64, len(x))
		want := make([]float64, len(x))
		op.MulVecTo(got, x)
		csr.MulVecTo(want, x)
		require.InDeltaSlice(t, want, got, 1e-9*float64((n[0]+1)*(n[0]+1)))
		dense := denseOf(t, csr.Dense())
		dense.MulVecTo(got, x)
		require.InDeltaSlice(t, want, got, 1e-9*float64((n[0]+1)*(n[0]+1)))
		require.InDelta(t, csr.Dense().At(0, 0), op.Diagonal()[0], 0)
	}
}

// TestCGPoisson solves Poisson problems with a manufactured solution: the
// host refines to Tol, and the error against the exact discrete solution
// is bounded by κ·Tol in the worst case; a smooth solution does far better,
// and the test asks for 1e-9.
func TestCGPoisson(t *testing.T) {
	cases := []struct {
		name   string
		n      int
		unroll int
		dense  bool
		long   bool
	}{
		{"stencil 64² unroll 32", 64, 32, false, false},
		{"stencil 128² unroll 64", 128, 64, false, false},
		{"dense 32²", 32, 32, true, false},
		{"stencil 128² unroll 16", 128, 16, false, true},
		{"stencil 64² unroll 16", 64, 16, false, true},
		{"stencil 64² unroll 64", 64, 64, false, true},
		{"stencil 128² unroll 32", 128, 32, false, true},
		{"dense 64²", 64, 32, true, true},
	}
	dev := simDevice(t, "sim")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.long && testing.Short() {
				t.Skip("long case; run without -short")
			}
			csr, b, exact, err := reference.ManufacturedPoisson2D(c.n, c.n)
			require.NoError(t, err)
			op := poisson(t, c.n, c.n)
			if c.dense {
				op = denseOf(t, csr.Dense())
			}
			res, err := CG(op, b, &Settings{Device: dev, Unroll: c.unroll, Tol: 1e-11, Precond: polynomialOf(t, op)})
			require.NoError(t, err)
			require.True(t, res.Converged)
			ref, err := reference.CG(csr, b, reference.CGSettings{Tol: 1e-11})
			require.NoError(t, err)
			relres := reference.RelResidual(csr, res.X, b)
			relerr := reference.RelErr(res.X, exact)
			t.Logf("%s: %d dispatches, %d inner iterations (float64 CG: %d, ratio %.2f), residual %.2g, error %.2g",
				c.name, res.Dispatches, res.Iterations, ref.Iterations, float64(res.Iterations)/float64(ref.Iterations), relres, relerr)
			require.LessOrEqual(t, relres, 1e-11)
			require.LessOrEqual(t, relerr, 1e-9)
			require.Len(t, res.History, res.Dispatches+1)
		})
	}
}

// TestCGRandomRHSIterations: total applications of A (Dispatches·(Unroll
// + 1)) against float64 CG's iterations for a random right-hand side on
// Poisson 32², 64² and 128², Unroll 4 … 64. While Unroll ≤ 0.4·√κ (κ the
// stencil's λ_hi/λ_min, known exactly for a symmetric stencil) the
// polynomial only damps the upper spectrum and the ratio stays ≤ 1.5×.
// Past that, each dispatch is close to a complete Chebyshev solve, which
// takes up to about twice CG's steps (CG converges superlinearly, the
// Chebyshev iteration at its worst-case rate): ≤ 3×, in ever fewer
// dispatches. Before the interval's bottom was raised to λ_min, dispatches
// stopped falling there (17 at Unroll 32 and 64 on 32²).
func TestCGRandomRHSIterations(t *testing.T) {
	if testing.Short() {
		t.Skip("iteration table; run without -short")
	}
	dev := simDevice(t, "sim")
	for _, n := range []int{32, 64, 128} {
		b := randVec(n*n, 1)
		a, err := reference.Poisson2D(n, n)
		require.NoError(t, err)
		ref, err := reference.CG(a, b, reference.CGSettings{Tol: 1e-10})
		require.NoError(t, err)
		op := poisson(t, n, n)
		lam, ok := op.(*stencilOp).lambdaMin()
		require.True(t, ok)
		sqrtKappa := math.Sqrt(op.NormInf() / lam)
		last := math.MaxInt
		for _, u := range []int{4, 8, 16, 32, 64} {
			res, err := CG(op, b, &Settings{Device: dev, Unroll: u, Precond: polynomialOf(t, op)})
			require.NoError(t, err)
			ratio := float64(res.Dispatches*(u+1)) / float64(ref.Iterations)
			t.Logf("Poisson %d² (√κ = %.0f), Unroll %d: %d dispatches; float64 CG %d; applications %.2f×", n, sqrtKappa, u, res.Dispatches, ref.Iterations, ratio)
			if float64(u) <= 0.4*sqrtKappa {
				require.LessOrEqual(t, ratio, 1.5, "%d² Unroll %d", n, u)
			} else {
				require.LessOrEqual(t, ratio, 3.0, "%d² Unroll %d", n, u)
				require.Less(t, res.Dispatches, last, "%d² Unroll %d: more steps per dispatch must buy fewer dispatches", n, u)
			}
			last = res.Dispatches
		}
	}
}

func TestCGRandSVD(t *testing.T) {
	dev := simDevice(t, "sim")
	for _, kappa := range []float64{1e2, 1e4} {
		rng := rand.New(rand.NewPCG(uint64(kappa), 9))
		n := 512
		a, err := reference.RandSVD(n, kappa, 3, true, rng)
		require.NoError(t, err)
		b := randVec(n, 5)
		res, err := CG(denseOf(t, a), b, &Settings{Device: dev})
		require.NoError(t, err, "κ = %g", kappa)
		aop, err := reference.DenseOperator(a)
		require.NoError(t, err)
		relres := reference.RelResidual(aop, res.X, b)
		t.Logf("RandSVD n=%d κ=%g: %d dispatches, %d iterations, residual %.2g", n, kappa, res.Dispatches, res.Iterations, relres)
		require.LessOrEqual(t, relres, 1e-10)
	}
}

// dkd returns D·K·D for the KMS matrix K (n, ρ = 0.5) and d_i = 2^e(i).
func dkd(t *testing.T, n int, e func(i int) float64) *mat.Dense {
	t.Helper()
	k, err := reference.KMS(n, 0.5)
	require.NoError(t, err)
	d := make([]float64, n)
	for i := range d {
		d[i] = math.Exp2(e(i))
	}
	a := mat.NewDense(n, n, nil)
	a.Apply(func(i, j int, v float64) float64 { return d[i] * v * d[j] }, k)
	return a
}

func TestCGJacobi(t *testing.T) {
	// A diagonal spanning 2⁴: not enough for the solver's own scaling, but
	// Jacobi still pays with a short polynomial (at Unroll 8 the polynomial
	// absorbs the spread itself: 15 dispatches either way).
	a := dkd(t, 200, func(i int) float64 { return float64(i % 3) })
	op := denseOf(t, a)
	pre, err := Jacobi(op)
	require.NoError(t, err)
	b := randVec(200, 2)
	dev := simDevice(t, "sim")
	plain, err := CG(op, b, &Settings{Device: dev, Unroll: 2, Precond: polynomialOf(t, op)})
	require.NoError(t, err)
	pcg, err := CG(op, b, &Settings{Device: dev, Unroll: 2, Precond: pre})
	require.NoError(t, err)
	t.Logf("CG %d dispatches, Jacobi-PCG %d", plain.Dispatches, pcg.Dispatches)
	require.Less(t, pcg.Dispatches, plain.Dispatches)
	aop, err := reference.DenseOperator(a)
	require.NoError(t, err)
	require.LessOrEqual(t, reference.RelResidual(aop, pcg.X, b), 1e-10)
}

// TestCGBadlyScaled: with a diagonal spanning 2²⁰ the small entries of
// fl16(2^σ·A) fall below fp16's normal range; CG scales A symmetrically by
// powers of two before it reaches the device and converges all the same.
func TestCGBadlyScaled(t *testing.T) {
	a := dkd(t, 200, func(i int) float64 { return float64(i%11) - 5 })
	b := randVec(200, 2)
	res, err := CG(denseOf(t, a), b, &Settings{Device: simDevice(t, "sim")})
	require.NoError(t, err)
	aop, err := reference.DenseOperator(a)
	require.NoError(t, err)
	relres := reference.RelResidual(aop, res.X, b)
	t.Logf("D·K·D, D spanning 2¹⁰: %d dispatches, residual %.2g", res.Dispatches, relres)
	require.LessOrEqual(t, relres, 1e-10)
}

func TestCGErrors(t *testing.T) {
	dev := simDevice(t, "sim")
	op := poisson(t, 8, 8)
	n := 64
	good := randVec(n, 1)
	nan := append([]float64(nil), good...)
	nan[3] = math.NaN()

	_, err := CG(op, good[:10], &Settings{Device: dev})
	require.ErrorIs(t, err, ErrShape)
	require.Contains(t, err.Error(), "b has length 10, operator has 64")
	_, err = CG(op, nan, &Settings{Device: dev})
	require.ErrorIs(t, err, ErrInput)
	_, err = CG(op, good, &Settings{Device: dev, X0: nan})
	require.ErrorIs(t, err, ErrInput)
	_, err = CG(op, good, &Settings{Device: dev, X0: good[:3]})
	require.ErrorIs(t, err, ErrShape)
	_, err = CG(nil, good, nil)
	require.ErrorIs(t, err, ErrShape)

	// b = 0: x = 0 at once, whatever X0 says.
	res, err := CG(op, make([]float64, n), &Settings{Device: dev, X0: good})
	require.NoError(t, err)
	require.True(t, res.Converged)
	require.Zero(t, res.Dispatches)
	require.Equal(t, make([]float64, n), res.X)

	// Too few dispatches: the result and its history come back with the error.
	res, err = CG(poisson(t, 32, 32), randVec(1024, 1), &Settings{Device: dev, MaxDispatches: 2, Unroll: 8})
	require.ErrorIs(t, err, ErrNotConverged)
	require.False(t, res.Converged)
	require.Equal(t, 2, res.Dispatches)
	require.Len(t, res.History, 3)
	require.Greater(t, res.Residual, 1e-10)

	// Symmetric indefinite: a negative curvature direction is found.
	diag := make([]float64, 40)
	for i := range diag {
		diag[i] = float64(i + 1)
		if i%3 == 0 {
			diag[i] = -diag[i]
		}
	}
	_, err = CG(denseOf(t, mat.NewDiagDense(40, diag)), randVec(40, 3), &Settings{Device: dev})
	require.ErrorIs(t, err, ErrNotSPD)

	// Past the device's limits: a grid row of 20000 points exceeds a device
	// row of 16384, and the operator is refused when it is built; 150²
	// unknowns (past one device row) are fine.
	_, err = Stencil2D(20000, 2, [3][3]float64{{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}})
	require.ErrorIs(t, err, ErrUnsupported)
	require.Contains(t, err.Error(), "stencil grid 20000×2 (40000 unknowns): a grid row may hold at most 16384 points")
	_, err = Stencil2D(16, 70000, [3][3]float64{{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}})
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = Stencil2D(150, 150, [3][3]float64{{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}})
	require.NoError(t, err)

	_, err = Dense(mat.NewDense(2, 3, nil))
	require.ErrorIs(t, err, ErrShape)
	_, err = Dense((*mat.Dense)(nil))
	require.ErrorIs(t, err, ErrShape)
	_, err = Stencil2D(0, 3, [3][3]float64{})
	require.ErrorIs(t, err, ErrShape)
	_, err = Jacobi(denseOf(t, mat.NewDiagDense(2, []float64{1, -1})))
	require.ErrorIs(t, err, ErrNotSPD)
}

func TestCGReusesProgram(t *testing.T) {
	dev := simDevice(t, "sim")
	op := poisson(t, 16, 16)
	for i := range 3 {
		_, err := CG(op, randVec(256, uint64(i)), &Settings{Device: dev, Unroll: 8})
		require.NoError(t, err)
	}
	require.Equal(t, 1, dev.(*shim.Cache).Stats().Compiles, "one program per operator and settings")
}

// TestCGCompensated: at κ = 1e5, κ·2⁻¹¹ ≈ 50, so fl16(A) is far from A in
// its lower spectrum; the float64 outer iteration still reaches Tol in
// both modes, FP16 with the polynomial in fl16(A) and Compensated with the
// polynomial in A's limb-split digits (both positive on the spectrum, so
// both are SPD preconditioners). The residual is checked independently.
func TestCGCompensated(t *testing.T) {
	n := 64
	if !testing.Short() {
		n = 128
	}
	rng := rand.New(rand.NewPCG(1e5, 9))
	a, err := reference.RandSVD(n, 1e5, 3, true, rng)
	require.NoError(t, err)
	b := randVec(n, 5)
	dev := simDevice(t, "sim")
	op := denseOf(t, a)
	aop, err := reference.DenseOperator(a)
	require.NoError(t, err)
	ref, err := reference.CG(aop, b, reference.CGSettings{Tol: 1e-10, MaxIter: 100000})
	require.NoError(t, err)
	for _, mode := range []precision.Mode{precision.FP16, precision.Compensated} {
		res, err := CG(op, b, &Settings{Device: dev, MaxDispatches: 1000, Precision: mode})
		require.NoError(t, err, "%v", mode)
		relres := reference.RelResidual(aop, res.X, b)
		t.Logf("RandSVD n=%d κ=1e5, %v: %d dispatches, %d iterations (float64 CG %d), residual %.2g", n, mode, res.Dispatches, res.Iterations, ref.Iterations, relres)
		require.LessOrEqual(t, relres, 1e-10)
	}
}

// TestStencilLambdaMin: the closed-form smallest eigenvalue of a stencil
// symmetric about both axes matches gonum's eigenvalues of the assembled
// matrix (5- and 9-point, anisotropic, one-point and one-row grids), and a
// stencil without that symmetry has none.
func TestStencilLambdaMin(t *testing.T) {
	stencils := map[string][3][3]float64{
		"Laplacian":   {{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}},
		"anisotropic": {{0, -1, 0}, {-0.1, 2.2, -0.1}, {0, -1, 0}},
		"9-point":     {{-1, -4, -1}, {-4, 20, -4}, {-1, -4, -1}},
		"shifted":     {{0.5, -1, 0.5}, {-1, 3, -1}, {0.5, -1, 0.5}},
	}
	for name, c := range stencils {
		for _, g := range [][2]int{{1, 1}, {1, 5}, {7, 3}, {6, 6}} {
			op, err := Stencil2D(g[0], g[1], c)
			require.NoError(t, err)
			n := op.Dims()
			a := mat.NewSymDense(n, nil)
			e, col := make([]float64, n), make([]float64, n)
			for j := range n {
				clear(e)
				e[j] = 1
				op.MulVecTo(col, e)
				for i := range n {
					a.SetSym(i, j, col[i])
				}
			}
			var eig mat.EigenSym
			require.True(t, eig.Factorize(a, false))
			want := eig.Values(nil)[0]
			got, ok := op.(*stencilOp).lambdaMin()
			require.True(t, ok)
			require.InDelta(t, want, got, 1e-12*op.NormInf(), "%s on %v", name, g)
		}
	}
	op, err := Stencil2D(4, 4, [3][3]float64{{0, -1, 0}, {-1, 4, -2}, {0, -1, 0}})
	require.NoError(t, err)
	_, ok := op.(*stencilOp).lambdaMin()
	require.False(t, ok)
}
