package linalg

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/shim/shimtest"
)

// TestDoNothingDevice: with a device that computes nothing (each output
// its input), Solve, Inverse and Norm2 fail with an error or need at
// least twice the real device's dispatches; none returns a silently
// wrong value.
func TestDoNothingDevice(t *testing.T) {
	const n = 32
	a := randSVD(t, n, 1e2, 21)
	b := randn(newRNG(22), n, 1).RawMatrix().Data
	real := openDevice(t, "sim")

	var st Stats
	_, err := Solve(a, b, &Settings{Device: real, Stats: &st})
	require.NoError(t, err)
	idle := shimtest.DoNothing(openDevice(t, "sim"), 1)
	_, err = Solve(a, b, &Settings{Device: idle, MaxDispatches: 2*st.Dispatches - 1})
	t.Logf("Solve: real device %d dispatches; do-nothing device: %v", st.Dispatches, err)
	require.Error(t, err)

	_, err = Inverse(a, &Settings{Device: real, Stats: &st})
	require.NoError(t, err)
	_, err = Inverse(a, &Settings{Device: idle, MaxDispatches: 2*st.Dispatches - 1})
	t.Logf("Inverse: real device %d dispatches; do-nothing device: %v", st.Dispatches, err)
	require.Error(t, err)

	var svd mat.SVD
	require.True(t, svd.Factorize(a, mat.SVDNone))
	want := svd.Values(nil)[0]
	got, err := Norm2(a, &Settings{Device: real, Stats: &st})
	require.NoError(t, err)
	require.InEpsilon(t, want, got, 1e-10)
	got, err = Norm2(a, &Settings{Device: idle, MaxDispatches: 2*st.Dispatches - 1})
	t.Logf("Norm2: real device %d dispatches; do-nothing device: %v (σ₁ = %v), %v", st.Dispatches, got, want, err)
	if err == nil {
		require.InEpsilon(t, want, got, 1e-10, "a Norm2 without error must be right")
	}
	require.False(t, math.IsNaN(got))
}
