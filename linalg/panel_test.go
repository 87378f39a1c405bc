package linalg

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// recursiveLU must choose dgetrf's pivots and give its factors to
// rounding (the products are summed in another order).
func TestRecursiveLUMatchesGetrf(t *testing.T) {
	rng := newRNG(13)
	for _, mk := range [][2]int{{1, 1}, {5, 3}, {40, 17}, {64, 64}, {300, 33}, {513, 128}} {
		m, k := mk[0], mk[1]
		data := make([]float64, m*k)
		for i := range data {
			data[i] = rng.NormFloat64()
		}
		want := append([]float64(nil), data...)
		wpiv := make([]int, k)
		require.True(t, lapack64.Getrf(blas64.General{Rows: m, Cols: k, Stride: k, Data: want}, wpiv))
		piv := make([]int, k)
		require.True(t, recursiveLU(blas64.General{Rows: m, Cols: k, Stride: k, Data: data}, piv))
		require.Equal(t, wpiv, piv, "%d×%d pivots", m, k)
		for i, v := range data {
			// |L|·|U| is O(k) for these Gaussian panels; the two orders of
			// summation differ by a few k·2⁻⁵³ of it.
			require.InDelta(t, want[i], v, 16*float64(k)*0x1p-53*math.Max(1, math.Abs(want[i])), "%d×%d entry %d", m, k, i)
		}
	}
	// An exactly zero column: not ok, as dgetrf says.
	z := make([]float64, 6*3)
	for i := range 6 {
		z[i*3] = float64(i + 1)
		z[i*3+2] = float64(i * i)
	}
	require.False(t, recursiveLU(blas64.General{Rows: 6, Cols: 3, Stride: 3, Data: z}, make([]int, 3)))
	// And one past the leaf width, where the recursion carries it up.
	w := make([]float64, 50*40)
	for i := range w {
		if i%40 != 23 {
			w[i] = rng.NormFloat64()
		}
	}
	require.False(t, recursiveLU(blas64.General{Rows: 50, Cols: 40, Stride: 40, Data: w}, make([]int, 40)))
}
