package linalg

import (
	"math/rand/v2"
	"testing"

	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim" // registers "sim" and "sim-narrow"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// u16 is fp16's unit roundoff, 2⁻¹¹; u64 float64's, 2⁻⁵³. Every tolerance
// below derives from them.
const (
	u16 = 0x1p-11
	u64 = 0x1p-53
)

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// openDevice opens a simulator device ("sim" or "sim-narrow").
func openDevice(t testing.TB, name string) shim.Device {
	t.Helper()
	dev, err := shim.Open(name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	return dev
}

// randn returns an m×n matrix of independent standard normal entries.
func randn(rng *rand.Rand, m, n int) *mat.Dense {
	a := mat.NewDense(m, n, nil)
	for i := range m {
		for j := range n {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	return a
}

// randSVD is a nonsymmetric RandSVD matrix with geometric singular values
// (mode 3) from 1 down to 1/κ.
func randSVD(t testing.TB, n int, kappa float64, seed uint64) *mat.Dense {
	t.Helper()
	a, err := reference.RandSVD(n, kappa, 3, false, newRNG(seed))
	require.NoError(t, err)
	return a
}

// shortSize is a test's matrix size: long without -short, and with -short
// wide on "sim" and narrow on "sim-narrow" (whose simulated kernel rounds
// every partial sum to fp16 and is about ten times slower).
func shortSize(long, wide, narrow int, isWide bool) int {
	switch {
	case !testing.Short():
		return long
	case isWide:
		return wide
	}
	return narrow
}
