package reference

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRelErr(t *testing.T) {
	require.InDelta(t, 0.5, RelErr([]float64{3, 4}, []float64{6, 8}), 4*u64)
	require.Zero(t, RelErr([]float64{1, 2}, []float64{1, 2}))
	require.Zero(t, RelErr([]float64{0, 0}, []float64{0, 0}))
	require.True(t, math.IsInf(RelErr([]float64{1, 0}, []float64{0, 0}), 1))
	require.True(t, math.IsNaN(RelErr([]float64{1}, []float64{1, 2})))
	require.True(t, math.IsNaN(RelErr([]float64{math.NaN(), 1}, []float64{1, 2})))
	require.Zero(t, RelErr(nil, nil))

	// |(3+4i) − (3+5i)| / |3+5i| = 1/√34.
	require.InEpsilon(t, 1/math.Sqrt(34), RelErrComplex([]complex128{3 + 4i}, []complex128{3 + 5i}), 4*u64)
	require.True(t, math.IsNaN(RelErrComplex([]complex128{1}, nil)))
	require.True(t, math.IsNaN(RelErrComplex([]complex128{complex(math.NaN(), 0)}, []complex128{1})))
}

func TestResidualMetrics(t *testing.T) {
	a, b, x := mustManufactured(t, 6, 5)
	require.LessOrEqual(t, RelResidual(a, x, b), 16*u64)
	require.LessOrEqual(t, BackwardError(a, x, b), 16*u64)
	zero := make([]float64, len(x))
	require.InDelta(t, 1, RelResidual(a, zero, b), 4*u64)
	require.InDelta(t, 1, BackwardError(a, zero, b), 4*u64)
	require.True(t, math.IsNaN(RelResidual(a, x[:3], b)))
	require.True(t, math.IsNaN(BackwardError(a, x, b[:3])))
	require.True(t, math.IsNaN(RelResidual(nil, x, b)))
	require.True(t, math.IsNaN(BackwardError(nil, x, b)))

	// A generic operator gets ‖A‖_F from its columns; it must agree with
	// the CSR's own norm, so both backward errors agree.
	generic := funcOp{n: a.Dims(), f: a.MulVecTo}
	require.InEpsilon(t, a.FrobeniusNorm(), operatorFrobenius(generic), 16*u64)
	y := randVec(newRNG(61), len(x))
	want := nrm2(residualOf(a, y, b)) / (a.FrobeniusNorm()*nrm2(y) + nrm2(b))
	require.InEpsilon(t, want, BackwardError(generic, y, b), 64*u64)
	require.InEpsilon(t, want, BackwardError(a, y, b), 64*u64)
}

func residualOf(a Operator, x, b []float64) []float64 {
	r := make([]float64, len(b))
	residual(a, x, b, r)
	return r
}
