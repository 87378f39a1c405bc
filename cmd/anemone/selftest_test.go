package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/selftest"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/ane"
)

// TestSelftestCommandWritesTheReport: `selftest -short -device D -json
// FILE` prints the table, writes a report that parses back, says where,
// and succeeds on the simulator, whose probes agree with its model. The
// probes themselves are the selftest package's tests.
func TestSelftestCommandWritesTheReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	out, err := runCmd("selftest", "-short", "-device", "sim-narrow", "-json", path)
	require.NoError(t, err)
	require.Contains(t, out, "anemone selftest ("+selftest.Schema+")")
	require.Contains(t, out, "SIMULATED")
	require.Contains(t, out, "report written to "+path)
	require.NotContains(t, out, "note:     No Neural Engine", "a named device needs no note")

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep selftest.Report
	require.NoError(t, json.Unmarshal(raw, &rep))
	require.Equal(t, selftest.Schema, rep.Schema)
	require.Equal(t, "sim-narrow", rep.Device.Name)
	require.True(t, rep.Simulated)
	require.True(t, rep.Short)
	require.NotEmpty(t, rep.Probes)
	require.Empty(t, rep.Departures())

	if !ane.Available() { // the default device is the simulator, and the note says so
		t.Setenv(shim.EnvDevice, "")
		out, err = runCmd("selftest", "-short")
		require.NoError(t, err)
		require.Contains(t, out, "note:     No Neural Engine on this machine")
		require.Contains(t, out, "every probe ran on the simulator. Simulated: the measured column")
	}
}

func TestSelftestUsage(t *testing.T) {
	for _, args := range [][]string{
		{"selftest", "extra"},
		{"selftest", "-wat"},
		{"selftest", "-short=maybe"},
	} {
		_, err := runCmd(args...)
		require.True(t, errors.Is(err, errUsage), "%v: %v", args, err)
	}
	_, err := runCmd("selftest", "-device", "nosuch")
	require.ErrorIs(t, err, shim.ErrNoDevice)
	require.Contains(t, err.Error(), "selftest:")
}
