package reference

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// solveTol is the forward-error tolerance against an exact or direct
// solution. A solver stopped at relative residual ρ has relative error at
// most κ₂(A)·ρ (Higham, Accuracy and Stability of Numerical Algorithms,
// 2nd ed., §7.2). The tests below pick Tol so that κ₂·Tol ≤ 1e-10 (for
// Poisson2D(32, 32), κ₂ ≈ 440 and Tol = 1e-13 give 4.4e-11), and the direct
// solver adds only about κ₂·n·u ≈ 1e-11.
const solveTol = 1e-10

func TestCGManufactured(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nx, ny int
		tol    float64
	}{
		{"16x16", 16, 16, 1e-13},
		{"32x32", 32, 32, 1e-13},
		{"20x12", 20, 12, 1e-13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, want := mustManufactured(t, tc.nx, tc.ny)
			res, err := CG(a, b, CGSettings{Tol: tc.tol})
			require.NoError(t, err)
			require.True(t, res.Converged)
			require.False(t, hasNaN(res.X))
			kappa := poissonCond(t, tc.nx, tc.ny)
			e := RelErr(res.X, want)
			// Forward error ≤ κ₂·(true relative residual), plus the rounding
			// of b (a few u·κ₂).
			require.LessOrEqual(t, e, kappa*res.Residual*1.01+kappa*8*u64)
			require.LessOrEqual(t, e, solveTol)
			require.Len(t, res.History, res.Iterations+1)
			require.LessOrEqual(t, res.History[len(res.History)-1], tc.tol)
			// The recursive and true residuals agree to within the
			// attainable accuracy of about κ₂·u.
			require.InDelta(t, res.History[len(res.History)-1], res.Residual, kappa*64*u64)
		})
	}
}

func TestCGAgainstDenseSolve(t *testing.T) {
	rng := newRNG(1)
	for _, tc := range []struct {
		name string
		a    *mat.Dense
	}{
		{"KMS(80,0.5)", must(KMS(80, 0.5)).get(t)},
		{"RandSVD(60,1e3,sym)", must(RandSVD(60, 1e3, 3, true, rng)).get(t)},
		{"Anisotropic(12,10,0.1)", must(Anisotropic2D(12, 10, 0.1)).get(t).Dense()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := tc.a.Dims()
			b := randVec(rng, n)
			want, err := Solve(tc.a, b)
			require.NoError(t, err)
			op, err := DenseOperator(tc.a)
			require.NoError(t, err)
			// κ₂ ≤ 1e3 for all three, so Tol = 1e-14 bounds the error by
			// 1e-11 (when reachable; CG's recursive residual keeps falling).
			res, err := CG(op, b, CGSettings{Tol: 1e-14})
			require.NoError(t, err)
			require.LessOrEqual(t, Cond2(tc.a), 1e3)
			require.LessOrEqual(t, RelErr(res.X, want), solveTol)
		})
	}
}

// TestCGPoissonIterations measures the float64 CG baseline that the device
// solvers are compared with (docs/NUMERICS.md §3 quotes 226 for 64²).
func TestCGPoissonIterations(t *testing.T) {
	for _, tc := range []struct {
		n      int
		lo, hi int // CG needs O(√κ) = O(n) iterations
	}{
		{64, 150, 300},
		{128, 300, 600},
	} {
		a := must(Poisson2D(tc.n, tc.n)).get(t)
		b := randVec(newRNG(2026), tc.n*tc.n)
		res, err := CG(a, b, CGSettings{Tol: 1e-10})
		require.NoError(t, err)
		require.True(t, res.Converged)
		require.LessOrEqual(t, res.Residual, 2e-10)
		t.Logf("CG Poisson2D %d×%d, random RHS, Tol 1e-10: %d iterations, true residual %.3g",
			tc.n, tc.n, res.Iterations, res.Residual)
		require.GreaterOrEqual(t, res.Iterations, tc.lo)
		require.LessOrEqual(t, res.Iterations, tc.hi)
	}
}

func TestCGPreconditioned(t *testing.T) {
	// Poisson plus a strongly varying positive diagonal, so Jacobi is not a
	// mere rescaling.
	rng := newRNG(3)
	p := must(Poisson2D(24, 24)).get(t)
	rows, cols, vals := p.Triplets()
	for i := range p.Dims() {
		rows, cols, vals = append(rows, i), append(cols, i), append(vals, 1e5*math.Pow(10, 2*rng.Float64()))
	}
	a, err := NewCSR(p.Dims(), rows, cols, vals)
	require.NoError(t, err)
	pre, err := JacobiPreconditioner(a)
	require.NoError(t, err)
	b := randVec(rng, a.Dims())
	want, err := Solve(a.Dense(), b)
	require.NoError(t, err)

	plain, err := CG(a, b, CGSettings{Tol: 1e-13})
	require.NoError(t, err)
	prec, err := CG(a, b, CGSettings{Tol: 1e-13, Precond: pre})
	require.NoError(t, err)
	require.LessOrEqual(t, RelErr(prec.X, want), solveTol)
	require.LessOrEqual(t, RelErr(plain.X, want), solveTol)
	require.Less(t, prec.Iterations, plain.Iterations, "Jacobi should help a badly scaled diagonal")
}

func TestCGSpecialCases(t *testing.T) {
	a, b, want := mustManufactured(t, 8, 8)

	t.Run("zero b", func(t *testing.T) {
		res, err := CG(a, make([]float64, a.Dims()), CGSettings{X0: want})
		require.NoError(t, err)
		require.True(t, res.Converged)
		require.Zero(t, res.Iterations)
		require.Equal(t, make([]float64, a.Dims()), res.X)
		require.Zero(t, res.Residual)
	})
	t.Run("exact X0", func(t *testing.T) {
		x0 := make([]float64, len(want))
		copy(x0, want)
		res, err := CG(a, b, CGSettings{X0: x0})
		require.NoError(t, err)
		require.Zero(t, res.Iterations)
		require.Equal(t, want, x0, "X0 must not be modified")
	})
	t.Run("iteration limit", func(t *testing.T) {
		res, err := CG(a, b, CGSettings{MaxIter: 5})
		require.ErrorIs(t, err, ErrNotConverged)
		require.False(t, res.Converged)
		require.Equal(t, 5, res.Iterations)
		require.Len(t, res.History, 6)
		require.Len(t, res.X, a.Dims())
		require.Greater(t, res.Residual, 1e-10)
		require.InDelta(t, res.History[5], res.Residual, 1e-12)
	})
	t.Run("indefinite breakdown", func(t *testing.T) {
		res, err := CG(negated(a), b, CGSettings{})
		require.ErrorIs(t, err, ErrNotConverged)
		require.False(t, res.Converged)
		require.Zero(t, res.Iterations)
	})
	t.Run("non-finite operator", func(t *testing.T) {
		nan := funcOp{n: 4, f: func(dst, x []float64) {
			for i := range dst {
				dst[i] = math.NaN()
			}
		}}
		res, err := CG(nan, []float64{1, 2, 3, 4}, CGSettings{})
		require.ErrorIs(t, err, ErrNotConverged)
		require.False(t, res.Converged)
	})
	t.Run("one by one", func(t *testing.T) {
		one, err := NewCSR(1, []int{0}, []int{0}, []float64{4})
		require.NoError(t, err)
		res, err := CG(one, []float64{2}, CGSettings{})
		require.NoError(t, err)
		require.Equal(t, []float64{0.5}, res.X)
		require.Equal(t, 1, res.Iterations)
	})
}

// solverCall runs CG or GMRES with the common settings fields.
type solverCall func(a Operator, b []float64, tol float64, maxIter int, x0 []float64) error

var solvers = map[string]solverCall{
	"CG": func(a Operator, b []float64, tol float64, maxIter int, x0 []float64) error {
		_, err := CG(a, b, CGSettings{Tol: tol, MaxIter: maxIter, X0: x0})
		return err
	},
	"GMRES": func(a Operator, b []float64, tol float64, maxIter int, x0 []float64) error {
		_, err := GMRES(a, b, GMRESSettings{Tol: tol, MaxIter: maxIter, X0: x0})
		return err
	},
}

func TestSolverBadInput(t *testing.T) {
	a := must(Poisson1D(4)).get(t)
	good := []float64{1, 2, 3, 4}
	empty := funcOp{n: 0, f: func(dst, x []float64) {}}
	for _, tc := range []struct {
		name    string
		a       Operator
		b       []float64
		tol     float64
		maxIter int
		x0      []float64
		want    error
	}{
		{"nil operator", nil, good, 0, 0, nil, ErrInput},
		{"n = 0", empty, nil, 0, 0, nil, ErrInput},
		{"short b", a, good[:3], 0, 0, nil, ErrShape},
		{"long b", a, append(good, 5), 0, 0, nil, ErrShape},
		{"NaN in b", a, []float64{1, math.NaN(), 3, 4}, 0, 0, nil, ErrInput},
		{"Inf in b", a, []float64{1, 2, math.Inf(-1), 4}, 0, 0, nil, ErrInput},
		{"short X0", a, good, 0, 0, []float64{0}, ErrShape},
		{"NaN in X0", a, good, 0, 0, []float64{0, 0, math.NaN(), 0}, ErrInput},
		{"negative Tol", a, good, -1e-3, 0, nil, ErrInput},
		{"NaN Tol", a, good, math.NaN(), 0, nil, ErrInput},
		{"negative MaxIter", a, good, 0, -1, nil, ErrInput},
	} {
		for name, solve := range solvers {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				err := solve(tc.a, tc.b, tc.tol, tc.maxIter, tc.x0)
				require.ErrorIs(t, err, tc.want)
				require.Contains(t, err.Error(), "reference: "+name)
				for _, other := range []error{ErrShape, ErrInput, ErrNotConverged, ErrSingular} {
					if other != tc.want {
						require.False(t, errors.Is(err, other), "also wraps %v", other)
					}
				}
			})
		}
	}
	t.Run("GMRES/negative Restart", func(t *testing.T) {
		_, err := GMRES(a, good, GMRESSettings{Restart: -1})
		require.ErrorIs(t, err, ErrInput)
	})
}
