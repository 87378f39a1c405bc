package ane

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
)

func TestWeightsDict(t *testing.T) {
	d := WeightsDict(&lower.Program{MIL: []byte("m")})
	require.NotNil(t, d, "weight-free programs need an empty dictionary, never nil")
	require.Empty(t, d)
	require.NotNil(t, WeightsDict(nil))

	blob := []byte{1, 0, 0, 0, 2, 0, 0, 0}
	d = WeightsDict(&lower.Program{MIL: []byte("m"), Blob: blob})
	require.Equal(t, map[string]any{
		"@model_path/weights/weight.bin": map[string]any{"offset": int64(0), "data": blob},
	}, d)
}

func TestPlanAndWriteFiles(t *testing.T) {
	mil := []byte("program(1.3) {}")
	blob := []byte("blob bytes")

	files, err := PlanFiles(&lower.Program{MIL: mil, Blob: blob})
	require.NoError(t, err)
	require.Equal(t, []File{{Rel: "model.mil", Data: mil}, {Rel: "weights/weight.bin", Data: blob}}, files)

	dir := filepath.Join(t.TempDir(), "0123abcd")
	require.NoError(t, WriteFiles(dir, files))
	got, err := os.ReadFile(filepath.Join(dir, "model.mil"))
	require.NoError(t, err)
	require.Equal(t, mil, got)
	got, err = os.ReadFile(filepath.Join(dir, "weights", "weight.bin"))
	require.NoError(t, err)
	require.Equal(t, blob, got)

	files, err = PlanFiles(&lower.Program{MIL: mil})
	require.NoError(t, err)
	require.Equal(t, []File{{Rel: "model.mil", Data: mil}}, files)
	dir = filepath.Join(t.TempDir(), "ffff")
	require.NoError(t, WriteFiles(dir, files))
	st, err := os.Stat(filepath.Join(dir, "weights"))
	require.NoError(t, err)
	require.True(t, st.IsDir(), "the weights directory exists even without weights")

	_, err = PlanFiles(nil)
	require.ErrorIs(t, err, ErrProgram)
}

func TestWeightRel(t *testing.T) {
	tests := []struct {
		key, want string
		ok        bool
	}{
		{"@model_path/weights/weight.bin", "weights/weight.bin", true},
		{"@model_path/w.bin", "w.bin", true},
		{"weights/weight.bin", "", false},
		{"@model_path/", "", false},
		{"@model_path/../x", "", false},
		{"@model_path/a/../../x", "", false},
		{"@model_path//etc/passwd", "", false},
		{"@model_path/a/./b", "", false},
		{`@model_path/a\b`, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			got, err := WeightRel(tc.key)
			if !tc.ok {
				require.ErrorIs(t, err, ErrProgram)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestModelDirName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "a\x00b"} {
		_, err := ModelDirName(bad)
		require.ErrorIs(t, err, ErrDevice, "%q", bad)
	}
	got, err := ModelDirName("3F2A9C")
	require.NoError(t, err)
	require.Equal(t, "3F2A9C", got)
}
