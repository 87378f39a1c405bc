package mil

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/stretchr/testify/require"
)

var le = binary.LittleEndian

// threeBlobs writes blobs of 6, 130 and 1 bytes (odd sizes, so every one
// needs padding) and returns the file and the data.
func threeBlobs() (*BlobWriter, [][]byte, []uint64) {
	w := NewBlobWriter()
	data := [][]byte{
		{1, 2, 3, 4, 5, 6},
		bytes.Repeat([]byte{0xA5}, 130),
		{0x7F},
	}
	dts := []BlobDType{BlobFP16, BlobFP32, BlobUInt8}
	var offs []uint64
	for i, d := range data {
		offs = append(offs, w.Add(dts[i], d))
	}
	return w, data, offs
}

func TestBlobLayoutByteByByte(t *testing.T) {
	w, data, offs := threeBlobs()
	b := w.Bytes()
	// blob 0: metadata 64, data 128..134, padded to 192
	// blob 1: metadata 192, data 256..386, padded to 448
	// blob 2: metadata 448, data 512..513, padded to 576
	require.Equal(t, []uint64{64, 192, 448}, offs, "Add returns metadata offsets")
	require.Len(t, b, 576)
	require.Equal(t, 576, w.Len())
	require.Equal(t, 3, w.Count())

	want := make([]byte, 576)
	le.PutUint32(want[0:], 3) // count
	le.PutUint32(want[4:], 2) // version
	metas := []struct {
		off, dtype, size, data int
	}{{64, 1, 6, 128}, {192, 2, 130, 256}, {448, 3, 1, 512}}
	for i, m := range metas {
		copy(want[m.off:], []byte{0xEF, 0xBE, 0xAD, 0xDE}) // sentinel 0xDEADBEEF, little-endian
		le.PutUint32(want[m.off+4:], uint32(m.dtype))
		le.PutUint64(want[m.off+8:], uint64(m.size))
		le.PutUint64(want[m.off+16:], uint64(m.data))
		copy(want[m.data:], data[i])
	}
	require.Equal(t, want, b)

	// Spot checks against the spec text, independent of the loop above.
	require.Equal(t, []byte{3, 0, 0, 0, 2, 0, 0, 0}, b[:8])
	require.Equal(t, make([]byte, 56), b[8:64], "header reserved bytes are zero")
	require.Equal(t, uint32(0xDEADBEEF), le.Uint32(b[64:]))
	require.Equal(t, uint32(1), le.Uint32(b[68:]), "fp16 dtype code")
	require.Equal(t, uint64(6), le.Uint64(b[72:]))
	require.Equal(t, uint64(128), le.Uint64(b[80:]))
	require.Equal(t, make([]byte, 40), b[88:128], "metadata reserved bytes are zero")
	for _, m := range metas {
		require.Zero(t, m.off%64)
		require.Zero(t, m.data%64)
	}

	// Bytes is a snapshot: adding more does not change it.
	w.Add(BlobInt8, []byte{9})
	require.Equal(t, want, b)
	require.Equal(t, uint32(4), le.Uint32(w.Bytes()))
}

func TestBlobFirstFP16(t *testing.T) {
	w := NewBlobWriter()
	off := w.Add(BlobFP16, FP16Data([]float64{1, -2, 0.5}))
	require.Equal(t, uint64(64), off)
	b := w.Bytes()
	require.Len(t, b, 192)
	require.Equal(t, []byte{0x00, 0x3C, 0x00, 0xC0, 0x00, 0x38}, b[128:134], "1, -2, 0.5 as fp16")
	f, err := ReadBlob(b)
	require.NoError(t, err)
	e, err := f.At(64)
	require.NoError(t, err)
	require.Equal(t, BlobFP16, e.DType)
	require.Equal(t, b[128:134], e.Data)
	_, err = f.At(128)
	require.ErrorIs(t, err, ErrBlob, "the data offset is not a blob reference")

	// An empty writer is a valid empty file.
	empty, err := ReadBlob(NewBlobWriter().Bytes())
	require.NoError(t, err)
	require.Empty(t, empty.Entries)
}

func TestFP16Data(t *testing.T) {
	xs := []float64{0, math.Copysign(0, -1), 1, 65504, 70000, fp16.MinSubnormal, 1 + fp16.UnitRoundoff, math.Inf(-1), math.NaN()}
	b := FP16Data(xs)
	require.Len(t, b, 2*len(xs))
	for i, x := range xs {
		require.Equal(t, uint16(fp16.FromFloat64(x)), le.Uint16(b[2*i:]), "%v", x)
	}
	require.Equal(t, uint16(0x7C00), le.Uint16(b[8:]), "70000 overflows to +inf")
	require.Equal(t, uint16(0x3C00), le.Uint16(b[12:]), "1+u rounds to even, 1")
}

func TestBlobRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		w := NewBlobWriter()
		var offs []uint64
		var datas [][]byte
		var dts []BlobDType
		for n := rng.IntN(8); n > 0; n-- {
			d := make([]byte, rng.IntN(300))
			for i := range d {
				d[i] = byte(rng.Uint32())
			}
			dt := BlobDType(1 + rng.IntN(11))
			offs = append(offs, w.Add(dt, d))
			datas = append(datas, d)
			dts = append(dts, dt)
		}
		f, err := ReadBlob(w.Bytes())
		require.NoError(t, err)
		require.Len(t, f.Entries, len(offs))
		for i, off := range offs {
			require.Zero(t, off%64)
			e, err := f.At(off)
			require.NoError(t, err)
			require.Equal(t, off, e.Offset)
			require.Equal(t, dts[i], e.DType)
			require.Equal(t, datas[i], append([]byte{}, e.Data...))
		}
	}
}

func TestReadBlobErrors(t *testing.T) {
	w, _, _ := threeBlobs()
	good := w.Bytes()
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), good...))
	}
	tests := []struct {
		name string
		b    []byte
		msg  string
	}{
		{"empty", nil, "mil: blob header: file is 0 bytes, shorter than the 64-byte header"},
		{"truncated header", good[:63], "mil: blob header: file is 63 bytes"},
		{"bad version", mutate(func(b []byte) []byte { le.PutUint32(b[4:], 1); return b }), "mil: blob header: version 1, want 2"},
		{"truncated metadata", good[:300], "mil: blob 1 at offset 192: data [256, 256+130) past end of file (300 bytes)"},
		{"truncated before metadata", good[:448], "mil: blob 2 at offset 448: metadata record past end of file (448 bytes); header announces 3 blobs"},
		{"count too large", mutate(func(b []byte) []byte { le.PutUint32(b, 4); return b }), "mil: blob 3 at offset 576: metadata record past end"},
		{"bad sentinel", mutate(func(b []byte) []byte { clear(b[448:452]); return b }), "mil: blob 2 at offset 448: sentinel 0x00000000, want 0xdeadbeef"},
		{"data offset past end", mutate(func(b []byte) []byte { le.PutUint64(b[64+16:], 1<<40); return b }), "mil: blob 0 at offset 64: data [1099511627776, 1099511627776+6) past end of file (576 bytes)"},
		{"size past end", mutate(func(b []byte) []byte { le.PutUint64(b[64+8:], math.MaxUint64); return b }), "past end of file"},
		{"misaligned data", mutate(func(b []byte) []byte { le.PutUint64(b[192+16:], 260); return b }), "mil: blob 1 at offset 192: data offset 260 not 64-byte aligned"},
		{"data before metadata", mutate(func(b []byte) []byte { le.PutUint64(b[192+16:], 128); return b }), "mil: blob 1 at offset 192: data offset 128 inside or before the metadata record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ReadBlob(tt.b)
			require.Nil(t, f)
			require.ErrorIs(t, err, ErrBlob)
			var be *BlobError
			require.ErrorAs(t, err, &be)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
	// The unmodified file reads, and its last blob may be unpadded.
	_, err := ReadBlob(good)
	require.NoError(t, err)
	f, err := ReadBlob(good[:513])
	require.NoError(t, err)
	require.Equal(t, []byte{0x7F}, f.Entries[2].Data)
}

func TestBlobDTypeString(t *testing.T) {
	require.Equal(t, "fp16", BlobFP16.String())
	require.Equal(t, "uint4", BlobUInt4.String())
	require.Equal(t, "BlobDType(99)", BlobDType(99).String())
}

func TestBlobWriterZeroValue(t *testing.T) {
	var w BlobWriter
	require.Equal(t, 64, w.Len())
	require.Equal(t, uint64(64), w.Add(BlobInt8, []byte{1}))
	require.Equal(t, NewBlobWriter().Len()+128, w.Len())
	f, err := ReadBlob(w.Bytes())
	require.NoError(t, err)
	require.Len(t, f.Entries, 1)

	// At also finds entries of a hand-built, unsorted file.
	hand := &BlobFile{Entries: []BlobEntry{{Offset: 192, DType: BlobFP32}, {Offset: 64, DType: BlobFP16}}}
	e, err := hand.At(64)
	require.NoError(t, err)
	require.Equal(t, BlobFP16, e.DType)
}

// TestBlobEntryBytes: BlobEntryBytes is what Add appends, for data sizes
// around the alignment, and an empty file is BlobHeaderBytes long.
func TestBlobEntryBytes(t *testing.T) {
	w := NewBlobWriter()
	require.Equal(t, BlobHeaderBytes, w.Len())
	for _, n := range []int{0, 1, 2, 63, 64, 65, 127, 128, 1000} {
		before := w.Len()
		w.Add(BlobFP16, make([]byte, n))
		require.Equal(t, int64(w.Len()-before), BlobEntryBytes(int64(n)), "%d data bytes", n)
	}
	require.Equal(t, int64(math.MaxInt64), BlobEntryBytes(math.MaxInt64-10))
}
