package precision

import (
	"math"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/reference"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestRelErr(t *testing.T) {
	require.InDelta(t, 0.5, RelErr([]float64{3, 0}, []float64{2, 0}), 1e-16)
	require.Zero(t, RelErr([]float64{0}, []float64{0}))
	require.True(t, math.IsInf(RelErr([]float64{1}, []float64{0}), 1))
	require.True(t, math.IsNaN(RelErr([]float64{1}, []float64{1, 2})))
	require.True(t, math.IsNaN(RelErr([]float64{math.NaN()}, []float64{1})))
	rng := newRNG(7)
	x, y := randVec(rng, 20), randVec(rng, 20)
	require.InDelta(t, reference.RelErr(x, y), RelErr(x, y), 1e-15)
}

func TestBackwardError(t *testing.T) {
	rng := newRNG(8)
	a := randn(rng, 30, 30)
	x := randVec(rng, 30)
	b := mulVec(a, x)
	// The exact solution's backward error is float64 rounding only.
	require.Less(t, BackwardError(a, x, b), 1e-15)
	// Against reference (same definition: 2-norms and ‖A‖_F).
	x[3] += 1e-3
	op, err := reference.DenseOperator(a)
	require.NoError(t, err)
	require.InEpsilon(t, reference.BackwardError(op, x, b), BackwardError(a, x, b), 1e-12)
	require.Zero(t, BackwardError(a, make([]float64, 30), make([]float64, 30)))
	require.True(t, math.IsNaN(BackwardError(a, x[:5], b)))
	require.True(t, math.IsNaN(BackwardError(mat.NewDense(1, 1, []float64{math.NaN()}), []float64{1}, []float64{1})))
}

func TestULPDistance(t *testing.T) {
	for _, tc := range []struct {
		x, ref, want float64
	}{
		{1 + 0x1p-10, 1, 1},               // one fp16 step above 1
		{1 - 0x1p-11, 1, 0.5},             // below 1 the spacing of [1, 2) still counts
		{1.5, 1, 512},                     // ½ is 512 steps of 2⁻¹⁰
		{2048 + 2, 2048, 1},               // spacing 2 in [2048, 4096)
		{0x1p-20, 0, 16},                  // spacing 2⁻²⁴ near 0
		{fp16.MaxValue, fp16.MaxValue, 0}, // exact
		{1e5 + 64, 1e5, 1},                // beyond 65504: spacing of [65536, 131072) is 64
		{math.Inf(1), math.Inf(1), 0},     // equal infinities
		{-0x1p-14 - 0x1p-24, -0x1p-14, 1}, // smallest normal binade
		// fp16(0.1) = 0.0999755859375, spacing 2⁻¹⁴ in [2⁻⁴, 2⁻³): 0.4 ulp.
		{fp16.Round64(0.1), 0.1, 0.0000244140625 / 0x1p-14},
	} {
		require.InDelta(t, tc.want, ULPDistance(tc.x, tc.ref), 1e-12, "ULPDistance(%g, %g)", tc.x, tc.ref)
	}
	require.True(t, math.IsNaN(ULPDistance(math.NaN(), 1)))
	require.True(t, math.IsInf(ULPDistance(1, math.Inf(1)), 1))
}
