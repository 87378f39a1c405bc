package linalg

import (
	"github.com/anemone-go/anemone/lower"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// TestAccumulatorProbe: the probe finds the float32 accumulator of "sim"
// and the fp16 one of "sim-narrow" (2¹³ + 2⁻¹⁰ − 2¹³ is 2⁻¹⁰ in float32
// and 0 in fp16), and the result is remembered per device.
func TestAccumulatorProbe(t *testing.T) {
	for _, d := range devices {
		dev := &programDevice{Device: openDevice(t, d.name), runs: map[string]int{}, prog: map[string]*lower.Program{}}
		for range 2 {
			wide, err := wideAccumulator(dev)
			require.NoError(t, err)
			require.Equal(t, d.wide, wide, d.name)
		}
		require.Len(t, dev.prog, 1, "one probe program")
		for _, n := range dev.runs {
			require.Equal(t, 1, n, "one probe dispatch per device")
		}
	}
}

// TestInverseCache: a second solve with the same *mat.Dense, contents and
// device reuses the Newton–Schulz inverse (no Newton–Schulz step, only
// refinement dispatches) and is as accurate; a changed entry, a copy, a
// different device or NoCache recompute it.
func TestInverseCache(t *testing.T) {
	dev := openDevice(t, "sim")
	const n = 48
	a := randSVD(t, n, 1e2, 31)
	rhs := func(seed uint64) []float64 { return randn(newRNG(seed), n, 1).RawMatrix().Data }
	solve := func(a *mat.Dense, s Settings, seed uint64) Stats {
		t.Helper()
		var st Stats
		s.Stats = &st
		b := rhs(seed)
		x, err := Solve(a, b, &s)
		require.NoError(t, err)
		inf, _ := backwardErrors(a, mat.NewDense(n, 1, x), mat.NewDense(n, 1, b))
		require.LessOrEqual(t, inf, solveTol)
		return st
	}
	first := solve(a, Settings{Device: dev}, 1)
	require.False(t, first.Cached)
	require.Positive(t, first.NewtonSchulz)

	again := solve(a, Settings{Device: dev}, 2)
	require.True(t, again.Cached)
	require.Zero(t, again.NewtonSchulz)
	require.Equal(t, again.Refinements, again.Dispatches, "only the refinement dispatches remain")
	require.Less(t, again.Dispatches, first.Dispatches)

	var st Stats
	x, err := Inverse(a, &Settings{Device: dev, Stats: &st})
	require.NoError(t, err)
	require.NotNil(t, x)
	require.True(t, st.Cached, "Inverse shares the cache")

	require.False(t, solve(a, Settings{Device: dev, NoCache: true}, 3).Cached)
	require.False(t, solve(mat.DenseCopyOf(a), Settings{Device: dev}, 4).Cached, "another matrix")
	require.False(t, solve(a, Settings{Device: openDevice(t, "sim")}, 5).Cached, "another device")
	a.Set(3, 7, a.At(3, 7)+0.25)
	require.False(t, solve(a, Settings{Device: dev}, 6).Cached, "contents changed")
	require.True(t, solve(a, Settings{Device: dev}, 7).Cached)
}
