package fft

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/precision"
)

// TestForwardRoundedPastFloat64Limit: a transform whose exact value lies
// just below float64's largest value, rounded past it in FP16, is
// ErrRange saying to scale the input down, not a failed consistency check
// (ErrDevice, "the device is faulty"); Compensated returns it, within its
// tolerance of the exact n·c.
func TestForwardRoundedPastFloat64Limit(t *testing.T) {
	dev := openDevice(t, "sim")
	const n = 16
	c := math.MaxFloat64 / n * 0.9999
	x := make([]complex128, n)
	for i := range x {
		x[i] = complex(c, 0)
	}
	_, err := Forward(x, &Settings{Device: dev})
	require.ErrorIs(t, err, ErrRange)
	require.NotErrorIs(t, err, ErrDevice)
	require.Contains(t, err.Error(), "scale the input down")

	y, err := Forward(x, &Settings{Device: dev, Precision: precision.Compensated})
	require.NoError(t, err)
	require.InDelta(t, 1, real(y[0])/(n*c), tolerance("sim", precision.Compensated, []int{n}))

	// The same through Inverse: a constant spectrum at the limit.
	spec := make([]complex128, n)
	for i := range spec {
		spec[i] = complex(math.MaxFloat64*0.9999, 0)
	}
	_, err = Inverse(spec, &Settings{Device: dev})
	require.ErrorIs(t, err, ErrRange)
	require.NotErrorIs(t, err, ErrDevice)
}
