package ane

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
)

// milWith returns a small MIL text whose one weight reads the lowering's
// weight file (the BLOBFILE spelling the lowering emits).
func milWith(path string) []byte {
	return []byte(`program(1.3) { func main<ios18>(tensor<fp16, [1, 1, 1, 32]> x) { ` +
		`tensor<fp16, [1, 1, 1, 32]> w = const()[name = string("w"), val = tensor<fp16, [1, 1, 1, 32]>(BLOBFILE(path = string("` + path + `"), offset = uint64(64)))]; ` +
		`tensor<fp16, [1, 1, 1, 32]> y = add(x = x, y = w)[name = string("y")]; } -> (y); }`)
}

func TestPlanModelWeightless(t *testing.T) {
	mil := []byte("program(1.3) { }")
	m, err := PlanModel(&lower.Program{MIL: mil})
	require.NoError(t, err)
	require.Equal(t, mil, m.MIL, "a program without weights is handed over unchanged")
	d := m.WeightsDict()
	require.NotNil(t, d, "weight-free programs need an empty dictionary, never nil")
	require.Empty(t, d)
	files, err := m.Files()
	require.NoError(t, err)
	require.Equal(t, []File{{Rel: "model.mil", Data: mil}}, files)
	require.NotNil(t, (*Model)(nil).WeightsDict())

	dir := filepath.Join(t.TempDir(), "ffff")
	require.NoError(t, WriteFiles(dir, files))
	st, err := os.Stat(filepath.Join(dir, "weights"))
	require.NoError(t, err)
	require.True(t, st.IsDir(), "the weights directory exists even without weights")
}

// TestPlanModelDistinctWeights is the pure half of the identifier fix: two
// programs with the same MIL and different weight bytes must hand the
// framework different MIL text and different dictionary keys (from which
// its identifier is reported to be derived), each consistent with the file
// it writes.
func TestPlanModelDistinctWeights(t *testing.T) {
	mil := milWith(lower.WeightPath)
	blobA := []byte("weights A, 64 bytes of header and data in a real blob")
	blobB := []byte("weights B, 64 bytes of header and data in a real blob")
	a, err := PlanModel(&lower.Program{MIL: mil, Blob: blobA})
	require.NoError(t, err)
	b, err := PlanModel(&lower.Program{MIL: mil, Blob: blobB})
	require.NoError(t, err)

	require.NotEqual(t, a.Hash, b.Hash)
	require.NotEqual(t, a.WeightKey, b.WeightKey)
	require.NotEqual(t, a.MIL, b.MIL)
	for _, m := range []*Model{a, b} {
		// The key is the rewritten path, carries the hash, and is the only
		// weight path left in the MIL.
		require.Equal(t, ModelPathPrefix+"weights/"+m.Hash[:32]+".bin", m.WeightKey)
		require.Equal(t, 1, bytes.Count(m.MIL, []byte(`string("`+m.WeightKey+`")`)))
		require.Zero(t, bytes.Count(m.MIL, []byte(lower.WeightPath)))
		require.Equal(t, string(mil), strings.Replace(string(m.MIL), m.WeightKey, lower.WeightPath, 1), "nothing else changes")
		require.Equal(t, map[string]any{m.WeightKey: map[string]any{"offset": int64(0), "data": m.Blob}}, m.WeightsDict())

		files, err := m.Files()
		require.NoError(t, err)
		rel, err := WeightRel(m.WeightKey)
		require.NoError(t, err)
		require.Equal(t, []File{{Rel: "model.mil", Data: m.MIL}, {Rel: rel, Data: m.Blob}}, files)

		dir := filepath.Join(t.TempDir(), "0123abcd")
		require.NoError(t, WriteFiles(dir, files))
		got, err := os.ReadFile(filepath.Join(dir, "model.mil"))
		require.NoError(t, err)
		require.Equal(t, m.MIL, got)
		got, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		require.NoError(t, err)
		require.Equal(t, m.Blob, got)
	}

	// The hash is SHA-256 over length-prefixed MIL and blob: moving bytes
	// from one to the other changes it.
	want := sha256.New()
	for _, b := range [][]byte{mil, blobA} {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		want.Write(n[:])
		want.Write(b)
	}
	require.Equal(t, hex.EncodeToString(want.Sum(nil)), a.Hash)
	require.NotEqual(t, ProgramHash(&lower.Program{MIL: []byte("ab"), Blob: []byte("c")}), ProgramHash(&lower.Program{MIL: []byte("a"), Blob: []byte("bc")}))

	// Same MIL and weights: same plan, so executables of one program share.
	a2, err := PlanModel(&lower.Program{MIL: mil, Blob: append([]byte(nil), blobA...)})
	require.NoError(t, err)
	require.Equal(t, a, a2)
}

func TestPlanModelBad(t *testing.T) {
	tests := []struct {
		name string
		p    *lower.Program
	}{
		{"nil", nil},
		{"another weight file", &lower.Program{MIL: milWith("@model_path/weights/other.bin"), Blob: []byte("b")}},
		{"weights read but no blob", &lower.Program{MIL: milWith(lower.WeightPath)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanModel(tc.p)
			require.ErrorIs(t, err, ErrProgram)
		})
	}
}

func TestIdentities(t *testing.T) {
	r := &identities{m: map[string]identity{}}
	require.NoError(t, r.claim("AB12", "hash-1"))
	require.NoError(t, r.claim("AB12", "hash-1"), "two executables of one program share an identifier")
	err := r.claim("AB12", "hash-2")
	require.ErrorIs(t, err, ErrClash, "another program under the same identifier is refused")
	require.Contains(t, err.Error(), "AB12")
	require.NoError(t, r.claim("CD34", "hash-2"))

	require.False(t, r.release("AB12"), "one executable still uses it")
	require.ErrorIs(t, r.claim("AB12", "hash-2"), ErrClash)
	require.True(t, r.release("AB12"), "the last use: the directory may go")
	require.NoError(t, r.claim("AB12", "hash-2"), "a freed identifier may be reused")
	require.False(t, r.release("nope"))
	require.True(t, r.release("CD34"))
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
