package ane

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	milpkg "github.com/anemone-go/anemone/lower/mil"
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
	m, err := PlanModel(&lower.Program{MIL: mil}, WeightsShared)
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
	a, err := PlanModel(&lower.Program{MIL: mil, Blob: blobA}, WeightsShared)
	require.NoError(t, err)
	b, err := PlanModel(&lower.Program{MIL: mil, Blob: blobB}, WeightsShared)
	require.NoError(t, err)

	require.NotEqual(t, a.Hash, b.Hash)
	require.NotEqual(t, a.Weights[0].Key, b.Weights[0].Key)
	require.NotEqual(t, a.MIL, b.MIL)
	for _, m := range []*Model{a, b} {
		require.Len(t, m.Weights, 1)
		key, blob := m.Weights[0].Key, m.Weights[0].Data
		// The key is the rewritten path, carries the hash, and is the only
		// weight path left in the MIL.
		require.Equal(t, ModelPathPrefix+"weights/"+m.Hash[:32]+".bin", key)
		require.Equal(t, 1, bytes.Count(m.MIL, []byte(`string("`+key+`")`)))
		require.Zero(t, bytes.Count(m.MIL, []byte(lower.WeightPath)))
		require.Equal(t, string(mil), strings.Replace(string(m.MIL), key, lower.WeightPath, 1), "nothing else changes")
		require.Equal(t, map[string]any{key: map[string]any{"offset": int64(0), "data": blob}}, m.WeightsDict())

		files, err := m.Files()
		require.NoError(t, err)
		rel, err := WeightRel(key)
		require.NoError(t, err)
		require.Equal(t, []File{{Rel: "model.mil", Data: m.MIL}, {Rel: rel, Data: blob}}, files)

		dir := filepath.Join(t.TempDir(), "0123abcd")
		require.NoError(t, WriteFiles(dir, files))
		got, err := os.ReadFile(filepath.Join(dir, "model.mil"))
		require.NoError(t, err)
		require.Equal(t, m.MIL, got)
		got, err = os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		require.NoError(t, err)
		require.Equal(t, blob, got)
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
	a2, err := PlanModel(&lower.Program{MIL: mil, Blob: append([]byte(nil), blobA...)}, WeightsAuto)
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
			for _, layout := range []WeightLayout{WeightsShared, WeightsPerConstant} {
				_, err := PlanModel(tc.p, layout)
				require.ErrorIs(t, err, ErrProgram, "%v", layout)
			}
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

// TestPlanModelPerConstant splits a lowered program with several constants
// (two fp16 tensors of different sizes feeding adds, a third a matmul
// weight) into one weight file per constant, the layout M1 gets: each file
// a one-record blob whose record sits at offset 64 and whose data bytes are
// the original record's, each BLOBFILE reference rewritten to its file at
// offset 64, and nothing else in the MIL changed.
func TestPlanModelPerConstant(t *testing.T) {
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{4, 32})
	fill := func(n int, f func(i int) float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = f(i)
		}
		return v
	}
	a := g.Const("a", dataflow.Shape{4, 32}, fill(128, func(i int) float64 { return 1 + float64(i)/8 }))
	b := g.Const("b", dataflow.Shape{1, 32}, fill(32, func(i int) float64 { return -2 - float64(i) }))
	w := g.Const("w", dataflow.Shape{32, 64}, fill(32*64, func(i int) float64 { return float64(i%7) - 3 }))
	y := g.Add(g.Add(x, a), b)
	g.Output("y", y)
	g.Output("z", g.MatMul(y, w, false, false))
	p, err := lower.Lower(g, lower.TargetM1)
	require.NoError(t, err)

	orig, err := milpkg.Parse(p.MIL)
	require.NoError(t, err)
	blob, err := milpkg.ReadBlob(p.Blob)
	require.NoError(t, err)
	refs := blobConsts(orig)
	require.GreaterOrEqual(t, len(refs), 3, "the fixture has several constants")

	require.Equal(t, WeightsPerConstant, WeightLayoutFor(lower.TargetM1, WeightsAuto))
	m, err := PlanModel(p, WeightLayoutFor(lower.TargetM1, WeightsAuto))
	require.NoError(t, err)
	require.Equal(t, WeightsPerConstant, m.Layout)
	require.Zero(t, bytes.Count(m.MIL, []byte(lower.WeightPath)))

	got, err := milpkg.Parse(m.MIL)
	require.NoError(t, err)
	split := blobConsts(got)
	require.Len(t, split, len(refs))
	keys := map[string][]byte{}
	for _, wt := range m.Weights {
		keys[wt.Key] = wt.Data
	}
	require.Len(t, keys, len(m.Weights), "one file per constant, no key twice")
	for name, ref := range refs {
		s := split[name]
		require.NotNil(t, s, name)
		require.Equal(t, uint64(64), s.Offset, "%s: the record follows the file header", name)
		e, err := blob.At(ref.Offset)
		require.NoError(t, err)
		k := slices.IndexFunc(blob.Entries, func(x milpkg.BlobEntry) bool { return x.Offset == ref.Offset })
		require.Equal(t, fmt.Sprintf("%sweights/%s-%d.bin", ModelPathPrefix, m.Hash[:32], k), s.Path, name)
		file, ok := keys[s.Path]
		require.True(t, ok, "%s: %s is a weight file", name, s.Path)
		one, err := milpkg.ReadBlob(file)
		require.NoError(t, err)
		require.Len(t, one.Entries, 1)
		require.Equal(t, uint64(64), one.Entries[0].Offset)
		require.Equal(t, e.DType, one.Entries[0].DType)
		require.Equal(t, e.Data, one.Entries[0].Data, "%s: data bytes identical to the shared blob's", name)
		require.Equal(t, uint32(1), binary.LittleEndian.Uint32(file[0:]), "one record")
		require.Equal(t, uint64(128), binary.LittleEndian.Uint64(file[64+16:]), "data right after the record")
	}
	// Only the BLOBFILE references changed: put the original ones back and
	// the text is the lowering's.
	back := string(m.MIL)
	for name, s := range split {
		back = strings.Replace(back, fmt.Sprintf("BLOBFILE(path = string(%q), offset = uint64(64))", s.Path),
			fmt.Sprintf("BLOBFILE(path = string(%q), offset = uint64(%d))", lower.WeightPath, refs[name].Offset), 1)
	}
	require.Equal(t, string(p.MIL), back)

	d := m.WeightsDict()
	require.Len(t, d, len(m.Weights))
	for _, wt := range m.Weights {
		require.Equal(t, map[string]any{"offset": int64(0), "data": wt.Data}, d[wt.Key])
	}
	files, err := m.Files()
	require.NoError(t, err)
	require.Len(t, files, 1+len(m.Weights))
	for i, wt := range m.Weights {
		require.Equal(t, strings.TrimPrefix(wt.Key, ModelPathPrefix), files[1+i].Rel)
	}

	// Other families keep the shared file; an explicit choice stands.
	require.Equal(t, WeightsShared, WeightLayoutFor(lower.TargetM4, WeightsAuto))
	require.Equal(t, WeightsPerConstant, WeightLayoutFor(lower.TargetM4, WeightsPerConstant))
	require.Equal(t, WeightsShared, WeightLayoutFor(lower.TargetM1, WeightsShared))
	shared, err := PlanModel(p, WeightsShared)
	require.NoError(t, err)
	require.Len(t, shared.Weights, 1)
	require.Equal(t, p.Blob, shared.Weights[0].Data)

	// A reference to no record of the blob cannot be split.
	bad := *p
	bad.MIL = bytes.Replace(p.MIL, []byte("offset = uint64(64)"), []byte("offset = uint64(65)"), 1)
	_, err = PlanModel(&bad, WeightsPerConstant)
	require.ErrorIs(t, err, ErrProgram)
	require.ErrorContains(t, err, "offset 65")
}

// blobConsts maps each const of main that reads the weight blob to its
// BLOBFILE reference.
func blobConsts(p *milpkg.Program) map[string]*milpkg.BlobRef {
	out := map[string]*milpkg.BlobRef{}
	for _, op := range p.Functions[0].Ops {
		if lit, ok := op.Attr("val").(*milpkg.Literal); ok && op.Kind == "const" && lit.Blob != nil {
			out[op.Outputs[0].Name] = lit.Blob
		}
	}
	return out
}
