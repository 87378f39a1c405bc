package linalg

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/shim"
)

// TestSolveCompiles: the matrices are runtime operands, so a solve
// compiles a fixed number of programs per size whatever κ: the
// Newton–Schulz product n×n·n×n in each mode it tries (FP16, then
// Compensated) and the refinement's n×n·n×k — at most 4, plus the
// accumulator probe once per device. A second matrix of the same size
// compiles nothing. The counts come from the device's cache.
func TestSolveCompiles(t *testing.T) {
	sizes := []int{128, 256}
	if testing.Short() {
		sizes = []int{64}
	}
	for _, n := range sizes {
		for _, kappa := range []float64{1e2, 1e4, 1e6} {
			t.Run(fmt.Sprintf("n%d/kappa%g", n, kappa), func(t *testing.T) {
				dev := openDevice(t, "sim")
				cache := dev.(*shim.Cache)
				b := randn(newRNG(3), n, 1).RawMatrix().Data
				var st Stats
				_, err := Solve(randSVD(t, n, kappa, 11), b, &Settings{Device: dev, Stats: &st})
				require.NoError(t, err)
				first := cache.Stats().Compiles
				t.Logf("n = %d, κ = %g: %d compiles (probe included), %d dispatches, %d Newton–Schulz steps, mode %v, modeled compile %v", n, kappa, first, st.Dispatches, st.NewtonSchulz, st.Mode, st.ModeledCompile)
				require.LessOrEqual(t, first, 4+1, "programs per solve, whatever κ")
				require.Equal(t, first-1, st.Programs, "the stats count this call's compiles, not the probe")

				_, err = Solve(randSVD(t, n, kappa, 12), b, &Settings{Device: dev, Stats: &st})
				require.NoError(t, err)
				require.Equal(t, first, cache.Stats().Compiles, "a second matrix of the same size compiles nothing")
				require.Zero(t, st.Programs)
				require.Zero(t, st.ModeledCompile)
			})
		}
	}
}

// TestManySolvesOneBudget: solves of distinct matrices of one size, more
// of them than the device's compile budget (1000 in the long run, at n =
// 128), all on one device: none is refused, and the compiles stay those
// of one solve.
func TestManySolvesOneBudget(t *testing.T) {
	count, n := 1000, 128
	if testing.Short() {
		count, n = shim.DefaultCompileBudget+20, 16
	}
	dev := openDevice(t, "sim")
	cache := dev.(*shim.Cache)
	rng := newRNG(5)
	b := randn(rng, n, 1).RawMatrix().Data
	for i := range count {
		a := randSVD(t, n, 1e3, uint64(100+i))
		_, err := Solve(a, b, &Settings{Device: dev})
		require.NoError(t, err, "solve %d", i)
	}
	st := cache.Stats()
	t.Logf("%d solves of distinct %d×%d matrices: %d compiles, %d dispatches", count, n, n, st.Compiles, st.Runs)
	require.LessOrEqual(t, st.Compiles, 4+1)
}
