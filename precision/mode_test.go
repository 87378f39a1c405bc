package precision

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModeString(t *testing.T) {
	for m, want := range map[Mode]string{0: "default", FP16: "FP16", Compensated: "Compensated", Float64: "Float64", 9: "Mode(9)", -1: "Mode(-1)"} {
		require.Equal(t, want, m.String())
	}
	require.True(t, Mode(0).valid())
	require.True(t, Float64.valid())
	require.False(t, Mode(4).valid())
	require.False(t, Mode(-1).valid())
}
