package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
)

func TestCostUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"cost"},
		{"cost", "-json"},
		{"cost", "nosuchprogram"},
		{"cost", "matmul", "-m", "0"},
		{"cost", "stencil", "-n", "-3"},
		{"cost", "cgplain", "-unroll", "0"},
		{"cost", "stencil", "-target", "ane-m9"},
		{"cost", "stencil", "extra"},
	} {
		_, err := runCmd(args...)
		require.True(t, errors.Is(err, errUsage), "%v: %v", args, err)
	}
}

func TestCostTableListsEveryFamily(t *testing.T) {
	for _, name := range costNames() {
		out, err := runCmd("cost", name, "-m", "8", "-k", "40", "-n", "6", "-unroll", "2", "-nodes")
		require.NoError(t, err, name)
		for _, fam := range costFamilies {
			require.Contains(t, out, "\n  "+fam, "%s:\n%s", name, out)
		}
		require.Contains(t, out, "nodes on ane-m1", name)
		require.Contains(t, out, "modeled, not measured", name)
	}
}

// costJSON runs `anemone cost ... -json` and decodes it.
func costJSON(t *testing.T, args ...string) costReport {
	t.Helper()
	out, err := runCmd(append(append([]string{"cost"}, args...), "-json")...)
	require.NoError(t, err)
	var rep costReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Families, len(costFamilies))
	return rep
}

// TestCostFlops checks the flop counts against hand counts that do not
// depend on the lowering's I/O ops (they move bytes but do no flops):
//   - matmul [m, k]·[k, n]: 2·m·k·n;
//   - stencil on an n×n grid, N = n² unknowns: one 3×3 conv, 2·9·N;
//   - cgplain, U iterations: U·(stencil + two dots) + the first dot,
//     each dot a matmul with a ones vector of 2·N flops: N·(22·U + 2).
func TestCostFlops(t *testing.T) {
	for _, c := range []struct {
		args       []string
		flops      int64
		unknowns   int
		iterations int
	}{
		{[]string{"matmul", "-m", "24", "-k", "40", "-n", "16"}, 2 * 24 * 40 * 16, 0, 0},
		{[]string{"matvec", "-m", "12", "-k", "40"}, 2 * 12 * 40, 0, 0},
		{[]string{"stencil", "-n", "16"}, 2 * 9 * 256, 256, 1},
		{[]string{"cgplain", "-n", "12", "-unroll", "3"}, 144 * (22*3 + 2), 144, 3},
	} {
		rep := costJSON(t, c.args...)
		require.Equal(t, "sim", rep.LoweredFor)
		require.Equal(t, c.unknowns, rep.Unknowns)
		require.Equal(t, c.iterations, rep.Iterations)
		for _, r := range rep.Families {
			require.Equal(t, c.flops, r.Flops, "%v on %s", c.args, r.Target)
			if c.unknowns > 0 {
				require.InDelta(t, float64(r.Bytes)/float64(c.unknowns*c.iterations), r.BytesPerUnknownIter, 1e-9)
			} else {
				require.Zero(t, r.BytesPerUnknownIter)
			}
		}
	}
}

// TestCostMatchesEstimate: the command prints what lower.Estimate gives
// for the same program, and the families are ordered M1 … M5 with the
// measured floors (M1 220 µs, M5 110 µs) under every time.
func TestCostMatchesEstimate(t *testing.T) {
	rep := costJSON(t, "stencil", "-n", "32")
	g, _, _, err := costPrograms["stencil"].build(costParams{N: 32, Target: lower.TargetSim})
	require.NoError(t, err)
	p, err := lower.Lower(g, lower.TargetSim)
	require.NoError(t, err)
	for i, fam := range costFamilies {
		c, err := lower.Estimate(p, fam)
		require.NoError(t, err)
		r := rep.Families[i]
		require.Equal(t, fam, r.Target)
		require.Equal(t, c.Nodes, r.Nodes)
		require.Equal(t, c.Bytes, r.Bytes)
		require.Equal(t, int64(c.Time), r.TimeNS)
	}
	require.Greater(t, rep.Families[0].TimeNS, int64(220_000))
	require.Greater(t, rep.Families[4].TimeNS, int64(110_000))
	require.True(t, strings.HasPrefix(rep.Model, "modeled, not measured"))
}

// TestCostSolvers prices krylov's own programs: every CG iteration applies
// the 9-point conv once (2·9·N flops) and GMRES applies it once per
// Arnoldi step, so the flops are at least U·18·N (dot products add more).
func TestCostSolvers(t *testing.T) {
	for _, c := range []struct {
		args  []string
		steps int
	}{
		{[]string{"cg", "-n", "16", "-unroll", "4"}, 4},
		{[]string{"gmres", "-n", "16", "-restart", "5"}, 5},
	} {
		rep := costJSON(t, c.args...)
		require.Equal(t, 256, rep.Unknowns, "%v", c.args)
		require.Equal(t, c.steps, rep.Iterations, "%v", c.args)
		for _, r := range rep.Families {
			require.GreaterOrEqual(t, r.Flops, int64(c.steps*18*256), "%v on %s", c.args, r.Target)
			require.Positive(t, r.Bytes)
		}
	}
}
