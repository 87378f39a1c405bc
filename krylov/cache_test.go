package krylov

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
)

// TestResolveReusesProgram: solving again with an operator and settings
// used before builds no graph (no DeviceApply, no lowering, no compile), in
// every solver and mode, so Stats.Build is a map lookup: microseconds
// against the milliseconds of the first build (a 10× margin that a loaded
// machine does not erase).
func TestResolveReusesProgram(t *testing.T) {
	dev := simDevice(t, "sim")
	for _, sv := range solvers {
		t.Run(sv.name, func(t *testing.T) {
			op := denseOf(t, mustPoissonDense(t, 6))
			s := &Settings{Device: dev, Precision: sv.mode, Restart: 12, Unroll: 8}
			first, err := sv.solve(op, randVec(36, 1), s)
			require.NoError(t, err)
			builds := graphBuilds.Load()
			second, err := sv.solve(op, randVec(36, 2), s)
			require.NoError(t, err)
			require.Equal(t, builds, graphBuilds.Load(), "the second solve builds no graph")
			require.Positive(t, first.Build)
			require.Less(t, second.Build, first.Build/10, "first %v, second %v", first.Build, second.Build)

			// A setting that shapes the program is a new program (GMRES's
			// device program, its preconditioner, depends on neither).
			s2 := *s
			s2.Unroll, s2.Restart = 6, 10
			_, err = sv.solve(op, randVec(36, 3), &s2)
			require.NoError(t, err)
			if sv.name[0] == 'G' {
				builds--
			}
			require.Equal(t, builds+1, graphBuilds.Load())
			// One that does not (Tol, X0, MaxDispatches) is not.
			s3 := *s
			s3.Tol, s3.X0, s3.MaxDispatches = 1e-6, second.X, 50
			_, err = sv.solve(op, randVec(36, 4), &s3)
			require.NoError(t, err)
			require.Equal(t, builds+1, graphBuilds.Load())
		})
	}
}

// TestProgramCacheBounded: the cache keeps at most programCacheSize
// programs, so a process solving many operators does not keep them all.
func TestProgramCacheBounded(t *testing.T) {
	dev := simDevice(t, "sim")
	for i := range programCacheSize + 8 {
		op := diagOp(t, 1, 2, 3, float64(4+i))
		_, err := CG(op, randVec(4, uint64(i)), &Settings{Device: dev, Unroll: 2, Precision: precision.FP16})
		require.NoError(t, err)
	}
	require.LessOrEqual(t, programs.count(func(programKey) bool { return true }), programCacheSize)
	require.Less(t, programs.count(func(k programKey) bool { return k.dev == dev }), programCacheSize+8)
}

// TestModeledStats: a solve's modeled engine cost is its dispatches times
// lower.Estimate of the program CGProgram (GMRESProgram) returns, priced
// as ane-m1 on the simulator; exact, since both count the same program.
func TestModeledStats(t *testing.T) {
	dev := simDevice(t, "sim")
	for _, sv := range solvers {
		t.Run(sv.name, func(t *testing.T) {
			op := denseOf(t, mustPoissonDense(t, 5))
			s := &Settings{Device: dev, Precision: sv.mode, Restart: 10, Unroll: 8}
			res, err := sv.solve(op, randVec(25, 1), s)
			require.NoError(t, err)
			program := CGProgram
			if sv.name[0] == 'G' {
				program = GMRESProgram
			}
			p, err := program(op, s)
			require.NoError(t, err)
			c, err := lower.Estimate(p, "ane-m1")
			require.NoError(t, err)
			require.Positive(t, c.Time)
			runs := time.Duration(res.Dispatches + res.Retries)
			require.Equal(t, runs*c.Time, res.ModeledTime)
			require.Equal(t, int64(runs)*c.Bytes, res.DeviceBytes)
			require.Equal(t, int64(runs)*c.Flops, res.DeviceFlops)
		})
	}
	_, err := CGProgram(nil, nil)
	require.ErrorIs(t, err, ErrShape)
	_, err = GMRESProgram(poisson(t, 4, 4), &Settings{Restart: -2})
	require.ErrorIs(t, err, ErrInput)
}
