package linalg

import (
	"errors"
	"testing"

	"github.com/anemone-go/anemone/precision"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// TestInverseRemedy: at κ₂ = 1e8, past Compensated Newton–Schulz's reach
// (1e7), the default Inverse fails with ErrSingular and ErrNotConverged,
// and its message names the remedy, Precision: Float64, which does reach
// it: ‖I − A·X‖₂ within n·κ·2⁻⁵³·10 ≈ 4e-6 (n = 40), measured 1.5e-9.
func TestInverseRemedy(t *testing.T) {
	dev := openDevice(t, "sim")
	const n, kappa = 40, 1e8
	a := randSVD(t, n, kappa, 12)
	_, err := Inverse(a, &Settings{Device: dev})
	require.True(t, errors.Is(err, ErrSingular) && errors.Is(err, ErrNotConverged), "%v", err)
	require.Contains(t, err.Error(), "Precision: Float64")
	x, err := Inverse(a, &Settings{Device: dev, Precision: precision.Float64})
	require.NoError(t, err)
	var r mat.Dense
	r.Mul(a, x)
	for i := range n {
		r.Set(i, i, r.At(i, i)-1)
	}
	var sv mat.SVD
	require.True(t, sv.Factorize(&r, mat.SVDNone))
	require.LessOrEqual(t, sv.Values(nil)[0], n*kappa*u64*10)
}
