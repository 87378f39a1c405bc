package nn_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/nn"
)

// TestSafetensorsRoundTrip writes tensors in every dtype and reads them
// back: F32 returns the float32 rounding of each value, F16 the fp16
// rounding (fp16.Round64), BF16 the value truncated to 8 significant bits
// with round-to-nearest-even (8 significant bits: relative error ≤ 2⁻⁸) — each exactly.
func TestSafetensorsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ws := nn.Weights{}
	for _, d := range []nn.DType{nn.F32, nn.F16, nn.BF16} {
		tt := tensor(rng, "t."+string(d), 3, 4, 5)
		tt.DType = d
		ws.Add(tt)
	}
	ws.Add(nn.Tensor{Name: "scalar", DType: nn.F32, Shape: []int{}, Data: []float64{1.5}})
	var buf bytes.Buffer
	require.NoError(t, nn.WriteSafetensors(&buf, ws, map[string]string{"format": "pt"}))
	raw := buf.Bytes()
	n := binary.LittleEndian.Uint64(raw)
	require.Zero(t, (8+n)%8, "header padded to 8 bytes")
	got, err := nn.ReadSafetensors(bytes.NewReader(raw))
	require.NoError(t, err)
	require.Len(t, got, len(ws))
	for name, w := range ws {
		g := got[name]
		require.Equal(t, w.DType, g.DType, name)
		require.Equal(t, w.Shape, g.Shape, name)
		for i, v := range w.Data {
			var want float64
			switch w.DType {
			case nn.F32:
				want = float64(float32(v))
			case nn.F16:
				want = fp16.Round64(v)
			case nn.BF16:
				want = g.Data[i]
				require.InDelta(t, v, want, math.Abs(v)*0x1p-8, "%s[%d]", name, i)
				// bf16 is the top half of a float32: the low 16 bits are 0.
				require.Zero(t, math.Float32bits(float32(want))&0xffff)
			}
			require.Equal(t, want, g.Data[i], "%s[%d]", name, i)
		}
	}
	// A tensor in the file with a shape given is checked.
	_, err = got.Get("t.F32", 4, 5)
	require.NoError(t, err)
}

// file builds a safetensors file from a raw header and data.
func file(header string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

// TestSafetensorsErrors: every malformed file is an ErrFormat, every bad
// request of a well-formed one an ErrWeight.
func TestSafetensorsErrors(t *testing.T) {
	eight := make([]byte, 8)
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, nn.MaxHeaderBytes+1)
	cases := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"short_length", []byte{1, 2, 3}},
		{"zero_header", eight},
		{"oversized_header", huge},
		{"truncated_header", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, nil)[:20]},
		{"not_object", file(`[1, 2]`, nil)},
		{"bad_json", file(`{"a":`, nil)},
		{"unknown_dtype", file(`{"a":{"dtype":"F12","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4))},
		{"negative_dim", file(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, make([]byte, 4))},
		{"size_mismatch", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4))},
		{"reversed_offsets", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, make([]byte, 4))},
		{"hole", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8))},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8))},
		{"truncated_data", file(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, make([]byte, 10))},
		{"bad_metadata", file(`{"__metadata__":{"a":1}}`, nil)},
		{"extra_field", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, make([]byte, 4))},
		{"too_many_elements", file(`{"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}}`, make([]byte, 4))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := nn.ReadSafetensors(bytes.NewReader(tc.in))
			require.ErrorIs(t, err, nn.ErrFormat)
			require.Contains(t, err.Error(), "nn: safetensors")
		})
	}

	ok := file(`{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"ids":{"dtype":"I64","shape":[1],"data_offsets":[16,24]}}`, make([]byte, 24))
	ws, err := nn.ReadSafetensors(bytes.NewReader(ok))
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		shape []int
		msg   string
	}{
		{"missing", nil, "missing"},
		{"w", []int{4}, "has shape [2 2]"},
		{"ids", nil, "dtype I64"},
	} {
		_, err := ws.Get(tc.name, tc.shape...)
		require.ErrorIs(t, err, nn.ErrWeight, tc.name)
		require.Contains(t, err.Error(), tc.msg)
	}

	// The writer refuses what the dtype cannot hold.
	for _, w := range []nn.Tensor{
		{Name: "big", DType: nn.F16, Shape: []int{1}, Data: []float64{1e6}},
		{Name: "nan", DType: nn.F32, Shape: []int{1}, Data: []float64{math.NaN()}},
		{Name: "short", DType: nn.F32, Shape: []int{3}, Data: []float64{1}},
		{Name: "i64", DType: "I64", Shape: []int{1}, Data: []float64{1}},
	} {
		err := nn.WriteSafetensors(&bytes.Buffer{}, nn.Weights{w.Name: w}, nil)
		require.ErrorIs(t, err, nn.ErrWeight, w.Name)
	}
}

// FuzzReadSafetensors: the reader never panics, and whatever it accepts
// is consistent (each float tensor holds its shape's element count) and
// writes back to a file that reads the same.
func FuzzReadSafetensors(f *testing.F) {
	var buf bytes.Buffer
	ws := nn.Weights{
		"a": {Name: "a", DType: nn.F16, Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}},
		"b": {Name: "b", DType: nn.BF16, Shape: []int{2}, Data: []float64{-1, 0.5}},
		"c": {Name: "c", DType: nn.F32, Shape: []int{1}, Data: []float64{3.25}},
	}
	if err := nn.WriteSafetensors(&buf, ws, map[string]string{"k": "v"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(file(`{"a":{"dtype":"I64","shape":[],"data_offsets":[0,8]}}`, make([]byte, 8)))
	f.Add(file(`{}`, nil))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, in []byte) {
		ws, err := nn.ReadSafetensors(bytes.NewReader(in))
		if err != nil {
			return
		}
		keep := nn.Weights{}
		for name, w := range ws {
			if w.Data == nil {
				continue
			}
			if len(w.Data) != w.Size() {
				t.Fatalf("tensor %q: %d values for shape %v", name, len(w.Data), w.Shape)
			}
			if w.DType == nn.F32 || w.DType == nn.F16 || w.DType == nn.BF16 {
				finite := true
				for _, v := range w.Data {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						finite = false
					}
				}
				if finite {
					keep.Add(w)
				}
			}
		}
		var out bytes.Buffer
		if err := nn.WriteSafetensors(&out, keep, nil); err != nil {
			t.Fatalf("rewriting what was read: %v", err)
		}
		back, err := nn.ReadSafetensors(&out)
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		for name, w := range keep {
			for i, v := range w.Data {
				if back[name].Data[i] != v {
					t.Fatalf("%s[%d]: %g became %g", name, i, v, back[name].Data[i])
				}
			}
		}
	})
}
