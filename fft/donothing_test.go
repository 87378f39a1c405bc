package fft

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/shim/shimtest"
)

// TestDoNothingDevice: a device that computes nothing (each output its
// input) makes every transform fail its consistency check with ErrDevice,
// in every mode, rather than return its input as a spectrum.
func TestDoNothingDevice(t *testing.T) {
	dev := shimtest.DoNothing(openDevice(t, "sim"), 1)
	for _, mode := range modes {
		for _, n := range []int{256, 1024} {
			x := signals[0].gen(n, newRNG(5, uint64(n)))
			_, err := Forward(x, &Settings{Device: dev, Precision: mode})
			require.ErrorIs(t, err, ErrDevice, "%v n=%d", mode, n)
			_, err = Inverse(x, &Settings{Device: dev, Precision: mode})
			require.ErrorIs(t, err, ErrDevice, "inverse %v n=%d", mode, n)
		}
	}
}
