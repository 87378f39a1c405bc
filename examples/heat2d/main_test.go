package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	_ "github.com/anemone-go/anemone/shim/sim"
)

// TestRun solves on a 32×32 grid on the simulator, checks the errors
// against the exact modal decay and that the PNG decodes. The error is
// measured in the max norm relative to max|u₀| = 2.85: an FP16 2-D
// transform pair (forward, then inverse) has relative L2 error ≤ 2·8.5e-4
// (the fft package's bound for two stages, twice); a single entry can
// exceed the RMS error by a few times, so 1e-2 for FP16; Compensated
// transforms are within 1e-6 each, so 1e-5.
func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "h.png")
	res, err := run(32, 1, 0.5, 5, "sim", out)
	require.NoError(t, err)
	require.Len(t, res, 2)
	for k := range res[0].errs {
		require.Less(t, res[0].errs[k], 1e-2, "FP16 at level %d", k)
		require.Less(t, res[1].errs[k], 1e-5, "Compensated at level %d", k)
	}
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Greater(t, img.Bounds().Dx(), img.Bounds().Dy())
	_, err = run(32, 1, 0.5, 0, "sim", "")
	require.ErrorContains(t, err, "steps ≥ 1")
}
