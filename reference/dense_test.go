package reference

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestSolve(t *testing.T) {
	rng := newRNG(41)
	for _, n := range []int{1, 2, 10, 100} {
		// κ₂ = 100, so LU with partial pivoting gives relative error about
		// κ₂·n·u ≤ 100·100·1.1e-16 ≈ 1e-12 (Higham 2002, §9.3 and Thm. 7.2).
		a := must(RandSVD(n, 100, 3, false, rng)).get(t)
		x := randVec(rng, n)
		var bv mat.VecDense
		bv.MulVec(a, mat.NewVecDense(n, x))
		b := bv.RawVector().Data
		bCopy := append([]float64(nil), b...)
		got, err := Solve(a, b)
		require.NoError(t, err)
		require.Equal(t, bCopy, b, "b must not be modified")
		require.LessOrEqual(t, RelErr(got, x), solveTol)
		op, err := DenseOperator(a)
		require.NoError(t, err)
		// LU is backward stable: η ≈ n·u.
		require.LessOrEqual(t, BackwardError(op, got, b), float64(n)*16*u64)
	}
}

func TestSolveErrors(t *testing.T) {
	nanA := mat.NewDense(2, 2, []float64{1, math.NaN(), 0, 1})
	for _, tc := range []struct {
		name string
		a    mat.Matrix
		b    []float64
		want error
	}{
		{"nil", nil, []float64{1}, ErrInput},
		{"empty", &mat.Dense{}, nil, ErrInput},
		{"non-square", mat.NewDense(2, 3, nil), []float64{1, 2}, ErrShape},
		{"length", eye(3), []float64{1, 2}, ErrShape},
		{"NaN in b", eye(2), []float64{1, math.NaN()}, ErrInput},
		{"NaN in A", nanA, []float64{1, 1}, ErrInput},
		{"zero matrix", mat.NewDense(3, 3, nil), []float64{1, 2, 3}, ErrSingular},
		{"rank one", mat.NewDense(2, 2, []float64{1, 2, 2, 4}), []float64{1, 2}, ErrSingular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := Solve(tc.a, tc.b)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, "reference: Solve")
			require.Nil(t, x)
		})
	}
}

func TestDenseOperator(t *testing.T) {
	p := must(Poisson2D(5, 4)).get(t)
	op, err := DenseOperator(p.Dense())
	require.NoError(t, err)
	require.Equal(t, 20, op.Dims())
	x := randVec(newRNG(3), 20)
	want := make([]float64, 20)
	got := make([]float64, 20)
	p.MulVecTo(want, x)
	op.MulVecTo(got, x)
	require.InDeltaSlice(t, want, got, 1e-12)
	require.Panics(t, func() { op.MulVecTo(got[:3], x) })

	for _, tc := range []struct {
		name string
		a    mat.Matrix
		want error
	}{
		{"nil", nil, ErrInput},
		{"non-square", mat.NewDense(3, 2, nil), ErrShape},
		{"Inf", mat.NewDense(1, 1, []float64{math.Inf(1)}), ErrInput},
	} {
		_, err := DenseOperator(tc.a)
		require.ErrorIs(t, err, tc.want, tc.name)
	}
}

func TestMatMulCondSymmetry(t *testing.T) {
	a := mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6})
	b := mat.NewDense(3, 2, []float64{7, 8, 9, 10, 11, 12})
	require.True(t, mat.Equal(mat.NewDense(2, 2, []float64{58, 64, 139, 154}), must(MatMul(a, b)).get(t)))

	require.InDelta(t, 1, Cond2(eye(4)), 4*u64)
	require.InDelta(t, 100, Cond2(mat.NewDiagDense(3, []float64{2, -0.02, 1})), 100*4*u64)
	require.True(t, math.IsInf(Cond2(mat.NewDense(2, 2, []float64{1, 2, 2, 4})), 1) || Cond2(mat.NewDense(2, 2, []float64{1, 2, 2, 4})) > 1e15)
	require.True(t, math.IsInf(Cond2(mat.NewDense(2, 2, nil)), 1))

	s := mat.NewDense(2, 2, []float64{2, 1, 1 + 1e-12, 2})
	require.False(t, IsSymmetric(s, 0))
	require.True(t, IsSymmetric(s, 1e-11))
	require.False(t, IsSymmetric(a, 1))
	require.True(t, IsSPD(mat.NewDense(2, 2, []float64{2, 1, 1, 2})))
	require.False(t, IsSPD(mat.NewDense(2, 2, []float64{1, 2, 2, 1})), "indefinite")
	require.False(t, IsSPD(mat.NewDense(2, 2, []float64{2, 1, 0, 2})), "nonsymmetric")
	require.False(t, IsSPD(mat.NewDense(2, 2, []float64{math.NaN(), 0, 0, 1})))

	// Nil and empty matrices give the documented results, not panics.
	require.NotPanics(t, func() {
		require.Nil(t, SingularValues(nil))
		require.Nil(t, SingularValues(&mat.Dense{}))
		require.True(t, math.IsNaN(Cond2(nil)))
		require.True(t, math.IsNaN(Cond2(&mat.Dense{})))
		require.False(t, IsSymmetric(nil, 0))
		require.False(t, IsSPD(nil))
	})
}
