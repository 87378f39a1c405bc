package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRun runs the CNN and the encoder on both simulator variants and
// checks the printed agreement meets the project's bar (cosine ≥ 0.9999).
func TestRun(t *testing.T) {
	for _, dev := range []string{"sim", "sim-narrow"} {
		var out bytes.Buffer
		require.NoError(t, run(&out, dev, false))
		m := regexp.MustCompile(`cosine vs float64 ([0-9.]+)`).FindAllStringSubmatch(out.String(), -1)
		require.Len(t, m, 2, out.String())
		for _, c := range m {
			v, err := strconv.ParseFloat(c[1], 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, v, 0.9999, out.String())
		}
	}
	require.Error(t, run(&bytes.Buffer{}, "no-such-device", false))
}
