package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun solves a small grid on the simulator and checks that the PNG is
// written and decodes at the figure's size.
func TestRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "p.png")
	require.NoError(t, run(16, 0, 1e-10, "sim", out))
	require.NoError(t, run(16, 8, 1e-10, "sim", ""), "the polynomial")
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	require.Greater(t, img.Bounds().Dx(), img.Bounds().Dy())
	require.ErrorContains(t, run(0, 0, 1e-10, "sim", ""), "must be positive")
}
