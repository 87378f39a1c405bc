package reference

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestGMRESManufactured(t *testing.T) {
	for _, tc := range []struct {
		name    string
		nx, ny  int
		restart int
		tol     float64
	}{
		{"16x16 GMRES(30)", 16, 16, 30, 1e-13},
		{"32x32 GMRES(30)", 32, 32, 30, 1e-13},
		{"32x32 GMRES(60)", 32, 32, 60, 1e-13},
		{"10x7 full", 10, 7, 70, 1e-13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, want := mustManufactured(t, tc.nx, tc.ny)
			res, err := GMRES(a, b, GMRESSettings{Tol: tc.tol, Restart: tc.restart})
			require.NoError(t, err)
			require.True(t, res.Converged)
			require.False(t, hasNaN(res.X))
			require.LessOrEqual(t, res.Residual, tc.tol)
			kappa := poissonCond(t, tc.nx, tc.ny)
			e := RelErr(res.X, want)
			require.LessOrEqual(t, e, kappa*res.Residual*1.01+kappa*8*u64)
			require.LessOrEqual(t, e, solveTol)
			require.Len(t, res.History, res.Iterations+1)
			require.LessOrEqual(t, res.Iterations, res.Restarts*tc.restart)
		})
	}
}

func TestGMRESAgainstDenseSolve(t *testing.T) {
	rng := newRNG(11)
	for _, tc := range []struct {
		name    string
		a       mat.Matrix
		restart int
	}{
		{"ConvDiff(16,16,Pe=10)", must(ConvectionDiffusion2D(16, 16, 10)).get(t).Dense(), 30},
		{"ConvDiff(16,16,Pe=-200)", must(ConvectionDiffusion2D(16, 16, -200)).get(t).Dense(), 30},
		{"Grcar(60,3)", must(Grcar(60, 3)).get(t), 20},
		{"RandSVD(50,1e3,mode 3)", must(RandSVD(50, 1e3, 3, false, rng)).get(t), 50},
		{"RandSVD(40,1e2,mode 2)", must(RandSVD(40, 1e2, 2, false, rng)).get(t), 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, _ := tc.a.Dims()
			b := randVec(rng, n)
			want, err := Solve(tc.a, b)
			require.NoError(t, err)
			op, err := DenseOperator(tc.a)
			require.NoError(t, err)
			res, err := GMRES(op, b, GMRESSettings{Tol: 1e-13, Restart: tc.restart})
			require.NoError(t, err)
			require.True(t, res.Converged)
			// κ₂ ≤ 1e3 for all of these (checked), so the residual 1e-13
			// bounds the forward error by 1e-10.
			require.LessOrEqual(t, Cond2(tc.a), 1e3)
			require.LessOrEqual(t, RelErr(res.X, want), solveTol)
		})
	}
}

// TestGMRESConvectionDiffusionCycles measures GMRES(30) restart cycles on the
// 64×64 convection–diffusion problem, the nonsymmetric float64 baseline.
func TestGMRESConvectionDiffusionCycles(t *testing.T) {
	for _, tc := range []struct {
		pe     float64
		lo, hi int
	}{
		{10, 5, 40},
		{100, 5, 40},
	} {
		a := must(ConvectionDiffusion2D(64, 64, tc.pe)).get(t)
		b := randVec(newRNG(2026), a.Dims())
		res, err := GMRES(a, b, GMRESSettings{Tol: 1e-10, Restart: 30})
		require.NoError(t, err)
		require.True(t, res.Converged)
		require.LessOrEqual(t, res.Residual, 1e-10)
		t.Logf("GMRES(30) ConvectionDiffusion2D 64×64 Pe=%g, random RHS, Tol 1e-10: %d cycles, %d iterations, true residual %.3g",
			tc.pe, res.Restarts, res.Iterations, res.Residual)
		require.GreaterOrEqual(t, res.Restarts, tc.lo)
		require.LessOrEqual(t, res.Restarts, tc.hi)
	}
}

func TestGMRESPreconditioned(t *testing.T) {
	rng := newRNG(5)
	p := must(ConvectionDiffusion2D(20, 20, 50)).get(t)
	rows, cols, vals := p.Triplets()
	for i := range p.Dims() {
		rows, cols, vals = append(rows, i), append(cols, i), append(vals, 1e4*float64(i%7))
	}
	a, err := NewCSR(p.Dims(), rows, cols, vals)
	require.NoError(t, err)
	pre, err := JacobiPreconditioner(a)
	require.NoError(t, err)
	b := randVec(rng, a.Dims())
	want, err := Solve(a.Dense(), b)
	require.NoError(t, err)
	res, err := GMRES(a, b, GMRESSettings{Tol: 1e-13, Precond: pre})
	require.NoError(t, err)
	// Right preconditioning: the reported residual is the true one.
	require.InDelta(t, RelResidual(a, res.X, b), res.Residual, 1e-16)
	require.LessOrEqual(t, RelErr(res.X, want), solveTol)
}

func TestGMRESSpecialCases(t *testing.T) {
	t.Run("two eigenvalues", func(t *testing.T) {
		// A = diag(1, 2, 1, 2, ...) has minimal polynomial of degree 2, so
		// GMRES finishes in two steps (happy breakdown).
		n := 10
		var tr triplets
		for i := range n {
			tr.add(i, i, float64(1+i%2))
		}
		a := tr.csr(n)
		b := randVec(newRNG(6), n)
		res, err := GMRES(a, b, GMRESSettings{})
		require.NoError(t, err)
		require.Equal(t, 2, res.Iterations)
		require.Equal(t, 1, res.Restarts)
		require.LessOrEqual(t, res.Residual, 1e-15)
	})
	t.Run("zero b", func(t *testing.T) {
		res, err := GMRES(must(Poisson1D(5)).get(t), make([]float64, 5), GMRESSettings{X0: []float64{1, 2, 3, 4, 5}})
		require.NoError(t, err)
		require.True(t, res.Converged)
		require.Equal(t, make([]float64, 5), res.X)
	})
	t.Run("iteration limit", func(t *testing.T) {
		a, b, _ := mustManufactured(t, 16, 16)
		res, err := GMRES(a, b, GMRESSettings{Restart: 10, MaxIter: 25})
		require.ErrorIs(t, err, ErrNotConverged)
		require.False(t, res.Converged)
		require.Equal(t, 25, res.Iterations)
		require.Equal(t, 3, res.Restarts)
		require.Len(t, res.History, 26)
		require.InDelta(t, RelResidual(a, res.X, b), res.Residual, 1e-15)
	})
	t.Run("singular", func(t *testing.T) {
		zero := funcOp{n: 3, f: func(dst, x []float64) { clear(dst) }}
		res, err := GMRES(zero, []float64{1, 2, 3}, GMRESSettings{})
		require.ErrorIs(t, err, ErrNotConverged)
		require.False(t, res.Converged)
	})
	t.Run("attainable accuracy", func(t *testing.T) {
		// Tol = 1e-17 is below ε: GMRES must give up with an error
		// quickly, not spin until MaxIter.
		a, b, _ := mustManufactured(t, 8, 8)
		res, err := GMRES(a, b, GMRESSettings{Tol: 1e-17})
		require.ErrorIs(t, err, ErrNotConverged)
		require.ErrorContains(t, err, "stagnated")
		require.Less(t, res.Iterations, 10*a.Dims())
		require.LessOrEqual(t, res.Residual, 1e-13)
	})
	t.Run("restart larger than n", func(t *testing.T) {
		a, b, want := mustManufactured(t, 3, 3)
		res, err := GMRES(a, b, GMRESSettings{Restart: 100, Tol: 1e-14})
		require.NoError(t, err)
		require.LessOrEqual(t, res.Iterations, 9)
		require.LessOrEqual(t, RelErr(res.X, want), 1e-13)
	})
}

func TestGMRESHistoryMonotoneWithinCycle(t *testing.T) {
	a := must(ConvectionDiffusion2D(24, 24, 30)).get(t)
	b := randVec(newRNG(8), a.Dims())
	const m = 15
	res, err := GMRES(a, b, GMRESSettings{Restart: m})
	require.NoError(t, err)
	// GMRES minimizes the residual over a growing space within a cycle, so
	// the estimate never increases there (Saad 2003, Prop. 6.9); allow
	// rounding of a few u.
	for k := 1; k < len(res.History); k++ {
		if (k-1)%m == 0 {
			continue // first step of a cycle starts from the true residual
		}
		require.LessOrEqual(t, res.History[k], res.History[k-1]*(1+16*u64), "step %d", k)
	}
}
