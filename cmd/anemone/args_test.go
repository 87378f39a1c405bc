package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/shim"
)

// TestOversizedSizesRefusedBeforeAllocating: a size past the target's
// limits is a usage error that names the flag, returned at once. Lowering
// built constants of a vector's length before it checked the target
// (before e6a167c), so these once crashed the command (a 2⁴⁶-element ones vector for dot, the
// m·k constant of matvec: "makeslice: len out of range", or the runtime
// out of memory for sizes that fit the address space) or allocated
// gigabytes before refusing (cgplain on a 16384² grid).
func TestOversizedSizesRefusedBeforeAllocating(t *testing.T) {
	huge := strconv.Itoa(1 << 46)
	for _, args := range [][]string{
		{"mil", "dot", "-k", huge},
		{"cost", "dot", "-k", huge},
		{"mil", "matvec", "-m", strconv.Itoa(1 << 23), "-k", strconv.Itoa(1 << 23)},
		{"cost", "matvec", "-m", "8", "-k", huge},
		{"cost", "cgplain", "-n", "200"},
		{"cost", "stencil", "-n", "200"},
	} {
		start := time.Now()
		_, err := runCmd(args...)
		require.True(t, errors.Is(err, errUsage), "%v: %v", args, err)
		require.Contains(t, err.Error(), "last-dimension limit of 16384", "%v", args)
		require.Less(t, time.Since(start), 5*time.Second, "%v", args)
	}
	_, err := runCmd("mil", "matmul", "-n", "-1")
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, err.Error(), "-n must be positive")

	// matvec's constant is refused when its estimate exceeds the memory
	// the machine has, before it is allocated.
	defer func(f func() (float64, string)) { memoryAvailable = f }(memoryAvailable)
	memoryAvailable = func() (float64, string) { return 1 << 30, "a test's 1 GiB" }
	_, err = runCmd("mil", "matvec", "-m", "16384", "-k", "16384")
	require.Error(t, err)
	require.Contains(t, err.Error(), "a test's 1 GiB")
	_, err = runCmd("mil", "matvec", "-m", "64", "-k", "64")
	require.NoError(t, err)
}

// TestHelpUnknownCommand: "help NAME" for a command that does not exist
// is a usage error (exit 2), not the global usage with exit 0.
func TestHelpUnknownCommand(t *testing.T) {
	_, err := runCmd("help", "bogus")
	require.ErrorIs(t, err, errUsage)
	require.Contains(t, err.Error(), `unknown command "bogus"`)
}

// TestSolveFlagRanges: every solve flag out of its range is a usage error
// naming the flag, before a device is opened or "solving:" is printed —
// a -tol of 1 or more (met by x = 0 without a dispatch), an infinite
// -tol, -restart or -unroll past krylov's limits, a -pe that is negative
// (the upwinding is for a wind in +x), infinite or NaN.
func TestSolveFlagRanges(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"poisson", "-tol", "2"}, "-tol"},
		{[]string{"poisson", "-tol", "1"}, "-tol"},
		{[]string{"poisson", "-tol", "Inf"}, "-tol"},
		{[]string{"poisson", "-tol", "NaN"}, "-tol"},
		{[]string{"poisson", "-tol", "-1e-10"}, "-tol"},
		{[]string{"poisson", "-unroll", "257", "-precond", "polynomial"}, "-unroll"},
		{[]string{"poisson", "-unroll", "-1"}, "-unroll"},
		{[]string{"convdiff", "-restart", "33"}, "-restart"},
		{[]string{"convdiff", "-restart", "0"}, "-restart"},
		{[]string{"convdiff", "-pe", "-10"}, "-pe"},
		{[]string{"convdiff", "-pe", "Inf"}, "-pe"},
		{[]string{"convdiff", "-pe", "NaN"}, "-pe"},
		{[]string{"poisson", "-n", "-4"}, "-n"},
		{[]string{"poisson", "-max-dispatches", "-1"}, "-max-dispatches"},
	} {
		out, err := runCmd(append([]string{"solve"}, c.args...)...)
		require.True(t, errors.Is(err, errUsage), "%v: %v", c.args, err)
		require.Contains(t, err.Error(), c.flag+" ", "%v", c.args)
		require.NotContains(t, out, "solving:", "%v", c.args)
	}
	_, err := runCmd("solve", "convdiff", "-n", "8", "-pe", "0", "-restart", "32")
	require.NoError(t, err, "the limits themselves are accepted")
}

// TestCostSolverTarget: -target reaches the programs krylov builds (cg,
// cg-fd, gmres), through the family's simulator, instead of being ignored;
// a family no simulator follows is a usage error.
func TestCostSolverTarget(t *testing.T) {
	for _, name := range []string{"cg", "cg-fd", "gmres"} {
		for _, target := range []string{"ane-m1", "ane-m3", "ane-m5"} {
			rep := costJSON(t, name, "-n", "16", "-unroll", "2", "-restart", "2", "-target", target)
			require.Equal(t, target, rep.LoweredFor, "%s -target %s", name, target)
		}
		_, err := runCmd("cost", name, "-target", "ane-m2")
		require.ErrorIs(t, err, errUsage, name)
		require.Contains(t, err.Error(), "ane-m2")
	}
}

// TestSelftestHonorsEnvDevice: with no -device, selftest opens
// $ANEMONE_DEVICE, as every other command does.
func TestSelftestHonorsEnvDevice(t *testing.T) {
	t.Setenv(shim.EnvDevice, "sim-narrow")
	out, err := runCmd("selftest", "-short")
	require.NoError(t, err)
	line, _, _ := strings.Cut(out[strings.Index(out, "device:"):], "\n")
	require.Contains(t, line, "sim-narrow")
}
