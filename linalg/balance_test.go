package linalg

import (
	"fmt"
	"math"
	"testing"

	"github.com/anemone-go/anemone/precision"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// TestMatMulBalanced: A = G·D and B = D⁻¹·H with D = diag(10^(−150 …
// 150)) have A·B = G·H, of ordinary size, though ‖A‖·‖B‖ ≈ 1e300. The
// device's per-row (A) and per-column (B) power-of-two scaling keeps only
// the mode's bits below each row's and column's largest entry, so without
// balancing the contraction index every term was lost (relative error 1,
// no error). The product must be within the mode's tolerance
// (matMulTol) of gonum's float64 product, in Frobenius norm, for MatMul and
// MatVec on "sim".
func TestMatMulBalanced(t *testing.T) {
	dev := openDevice(t, "sim")
	rng := newRNG(77)
	const m, k, n = 20, 41, 9
	a, b := randn(rng, m, k), randn(rng, k, n)
	for j := range k {
		d := math.Pow(10, -150+300*float64(j)/(k-1))
		for i := range m {
			a.Set(i, j, a.At(i, j)*d)
		}
		for l := range n {
			b.Set(j, l, b.At(j, l)/d)
		}
	}
	var ref mat.Dense
	ref.Mul(a, b)
	x := mat.Col(nil, 0, b)
	want := mat.Col(nil, 0, &ref)
	for _, mode := range []precision.Mode{precision.FP16, precision.Compensated, precision.Float64} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			c, err := MatMul(a, b, &Settings{Device: dev, Precision: mode})
			require.NoError(t, err)
			require.LessOrEqual(t, frobRelErr(c, &ref), matMulTol(mode, k, true))
			y, err := MatVec(a, x, &Settings{Device: dev, Precision: mode})
			require.NoError(t, err)
			require.LessOrEqual(t, precision.RelErr(y, want), matMulTol(mode, k, true))
		})
	}
	// Inputs are not modified by the balancing.
	require.Equal(t, x, mat.Col(nil, 0, b))
}
