package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/krylov"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/shim"
)

func runCmd(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := run(args, &out, &errOut)
	return out.String(), err
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"bogus"},
		{"mil"},
		{"mil", "nosuchkernel"},
		{"mil", "matmul", "-m", "0"},
		{"mil", "matmul", "-target", "ane-m9"},
		{"mil", "matmul", "-wat"},
		{"info", "extra"},
		{"caps", "-json=maybe"},
		{"solve"},
		{"solve", "heat"},
		{"solve", "poisson", "-n", "0"},
		{"solve", "poisson", "-precision", "fp8"},
	} {
		_, err := runCmd(args...)
		require.True(t, errors.Is(err, errUsage), "%v: %v", args, err)
	}
}

func TestMILPrintsAParsableProgram(t *testing.T) {
	for _, k := range kernelNames() {
		out, err := runCmd("mil", k, "-m", "8", "-k", "40", "-n", "5")
		require.NoError(t, err, k)
		p, err := mil.Parse([]byte(out))
		require.NoError(t, err, k)
		require.NoError(t, p.Check(), k)
		require.Equal(t, "main", p.Functions[0].Name)
	}
	out, err := runCmd("mil", "matvec", "-m", "4", "-k", "40")
	require.NoError(t, err)
	require.Contains(t, out, "conv(", "a constant matmul is lowered to a 1×1 conv")
}

func TestInfoAndCaps(t *testing.T) {
	out, err := runCmd("info", "-device", "sim-narrow")
	require.NoError(t, err)
	require.Contains(t, out, "sim-narrow")
	require.Contains(t, out, "16384")

	out, err = runCmd("caps", "-device", "sim", "--json")
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Greater(t, len(rows), 30)
	for _, r := range rows {
		require.Equal(t, true, r["pass"], "%v", r)
	}
	out, err = runCmd("caps")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(strings.TrimSpace(out), "0 failed"))

	if runtime.GOOS != "darwin" {
		_, err = runCmd("info", "-device", "ane")
		require.ErrorIs(t, err, shim.ErrNoDevice)
	}
}

func TestSolve(t *testing.T) {
	out, err := runCmd("solve", "poisson", "-n", "16", "-device", "sim")
	require.NoError(t, err)
	require.Contains(t, out, "converged true")
	out, err = runCmd("solve", "convdiff", "-n", "16", "-pe", "10")
	require.NoError(t, err)
	require.Contains(t, out, "GMRES(30) convdiff 16×16")
	_, err = runCmd("solve", "poisson", "-n", "16", "-max-dispatches", "1", "-unroll", "2", "-precond", "polynomial")
	require.ErrorIs(t, err, krylov.ErrNotConverged)
	for _, c := range []struct{ flag, method string }{
		{"default", "CG + FastDiagonalization (default) poisson 16×16"},
		{"fd", "CG + FastDiagonalization poisson 16×16"},
		{"polynomial", "CG, device polynomial poisson 16×16"},
	} {
		out, err = runCmd("solve", "poisson", "-n", "16", "-precond", c.flag)
		require.NoError(t, err, c.flag)
		require.Contains(t, out, c.method)
		require.Contains(t, out, "converged true")
	}
	_, err = runCmd("solve", "poisson", "-n", "16", "-precond", "ilu")
	require.ErrorIs(t, err, errUsage)
	_, err = runCmd("solve", "convdiff", "-n", "16", "-precond", "fd")
	require.ErrorIs(t, err, errUsage)
}
