package linalg

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNorm2BudgetMessage: Norm2 iterates on 2⁻ᵉ·A; the Ritz values its
// MaxDispatches message lists must be the caller's (as Stats.History is),
// not 2⁻ᵉ times them. A = 2⁴⁰·G: the message's history is Stats.History,
// whose values are about ‖A‖₂ ≈ 2⁴⁰·2√20 (the best one returned).
func TestNorm2BudgetMessage(t *testing.T) {
	a := scaled(randn(newRNG(5), 20, 20), 0x1p40)
	var st Stats
	v, err := Norm2(a, &Settings{Device: openDevice(t, "sim"), MaxDispatches: 3, Stats: &st})
	require.True(t, errors.Is(err, ErrNotConverged), "%v", err)
	require.Len(t, st.History, 2)
	require.Equal(t, slices.Max(st.History), v)
	require.Greater(t, v, 0x1p40) // σ_max of a 20×20 Gaussian is ≈ 2√20 ≈ 9
	require.Less(t, v, 0x1p40*2*math.Sqrt(20)*2)
	require.True(t, strings.Contains(err.Error(), "Ritz values "+fmtHistory(st.History)), "%v (history %v)", err, st.History)
}
