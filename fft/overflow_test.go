package fft

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/anemone-go/anemone/precision"
)

// TestInverseNearFloat64Limit: the inverse of a spectrum whose values are
// so large that n times them overflows float64 is still representable
// (|x_j| ≤ max_k |X_k|), and Inverse returns it: a Forward of a signal
// near the limit comes back through Inverse, and the inverse of a random
// spectrum of modulus 1e306 matches gonum's (computed on a copy scaled by
// 2⁻⁶⁴, which is exact) within the mode's tolerance. The unnormalized
// inverse used to be formed first, so these were ErrRange ("overflows
// float64").
func TestInverseNearFloat64Limit(t *testing.T) {
	dev := openDevice(t, "sim")
	for _, mode := range modes {
		s := &Settings{Device: dev, Precision: mode}
		for _, n := range []int{60, 1024} {
			t.Run(fmt.Sprintf("%v/%d", mode, n), func(t *testing.T) {
				tol := tolerance("sim", mode, []int{n})
				// A constant 1e305: Forward gives n·1e305 in bin 0 (finite),
				// whose inverse is the constant again.
				x := make([]complex128, n)
				for i := range x {
					x[i] = complex(1e305, -1e305)
				}
				y, err := Forward(x, s)
				require.NoError(t, err, "Forward")
				back, err := Inverse(y, s)
				require.NoError(t, err, "Inverse(Forward(x)) of a constant 1e305")
				require.LessOrEqual(t, relErrScaled(back, x), 2*tol, "round trip")

				spec := scaleSignal(signals[0].gen(n, newRNG(21, uint64(n))), 1e306)
				got, err := Inverse(spec, s)
				require.NoError(t, err, "Inverse of a spectrum of modulus 1e306")
				small := scaleSignal(spec, 0x1p-64)
				want := fourier.NewCmplxFFT(n).Sequence(nil, small)
				for i, v := range want {
					want[i] = complex(math.Ldexp(real(v), 64)/float64(n), math.Ldexp(imag(v), 64)/float64(n))
				}
				require.LessOrEqual(t, relErrScaled(got, want), tol, "Inverse against gonum")

				xr, err := RealInverse(spec[:n/2+1], n, s)
				require.NoError(t, err, "RealInverse of coefficients of modulus 1e306")
				require.False(t, math.IsInf(xr[0], 0) || math.IsNaN(xr[0]))
			})
		}
	}
}

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
