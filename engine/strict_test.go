package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStrictIsTheStrictest: the simulator's default target refuses
// whatever any family refuses — its limits are the least of the families'
// and its surface minimum the largest — so a program it accepts compiles
// on every family. The rules that change results rather than refuse a
// program stay with the families. (Row alignment is the layout each
// family reports for its surfaces, 64 elements on M5: the lowering pads
// rows for the family it targets.)
func TestStrictIsTheStrictest(t *testing.T) {
	for _, f := range []Target{M1, M2, M3, M4, M5} {
		require.LessOrEqual(t, Strict.MaxRank, f.MaxRank, f.Name)
		require.LessOrEqual(t, Strict.MaxSpatial, f.MaxSpatial, f.Name)
		require.LessOrEqual(t, Strict.MaxChannels, f.MaxChannels, f.Name)
		require.LessOrEqual(t, Strict.MaxKernel, f.MaxKernel, f.Name)
		require.GreaterOrEqual(t, Strict.MinSurfaceBytes, f.MinSurfaceBytes, f.Name)
		require.LessOrEqual(t, Strict.CompileBudget, f.CompileBudget, f.Name)
		require.True(t, Strict.PackedIO || !f.PackedIO, f.Name)
		require.True(t, Strict.WidthSliceClamp || !f.WidthSliceClamp, f.Name)
		require.Equal(t, f.Opset, Strict.Opset, f.Name)
	}
	require.Zero(t, Strict.InnerMultiple)
	require.Equal(t, TiesToEven, Strict.Rounding)
}
