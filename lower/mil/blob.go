package mil

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/anemone-go/anemone/fp16"
)

// BlobDType is the dtype code of a blob in a weight file
// (coremltools MILBlob BlobDataType).
type BlobDType uint32

// The dtype codes of MILBlob storage format version 2.
const (
	BlobFP16   BlobDType = 1
	BlobFP32   BlobDType = 2
	BlobUInt8  BlobDType = 3
	BlobInt8   BlobDType = 4
	BlobBF16   BlobDType = 5
	BlobInt16  BlobDType = 6
	BlobUInt16 BlobDType = 7
	BlobInt4   BlobDType = 8
	BlobUInt1  BlobDType = 9
	BlobUInt2  BlobDType = 10
	BlobUInt4  BlobDType = 11
)

var blobDTypeNames = [...]string{
	BlobFP16: "fp16", BlobFP32: "fp32", BlobUInt8: "uint8", BlobInt8: "int8",
	BlobBF16: "bf16", BlobInt16: "int16", BlobUInt16: "uint16", BlobInt4: "int4",
	BlobUInt1: "uint1", BlobUInt2: "uint2", BlobUInt4: "uint4",
}

// String returns the MIL dtype spelling of d, or "BlobDType(n)".
func (d BlobDType) String() string {
	if int(d) < len(blobDTypeNames) && blobDTypeNames[d] != "" {
		return blobDTypeNames[d]
	}
	return fmt.Sprintf("BlobDType(%d)", uint32(d))
}

// Layout of the weight file (docs/ENGINE.md §2). All integers are little-endian.
const (
	blobAlign      = 64
	blobHeaderSize = 64         // uint32 count, uint32 version, reserved
	blobMetaSize   = 64         // uint32 sentinel, uint32 dtype, uint64 size, uint64 data offset, reserved
	blobVersion    = 2          // storage format version
	blobSentinel   = 0xDEADBEEF // first word of every metadata record
)

// BlobHeaderBytes is the size of the weight file's header, the whole of
// an empty file.
const BlobHeaderBytes = blobHeaderSize

// BlobEntryBytes is how many bytes Add appends for a blob of n ≥ 0 data
// bytes: its metadata record and the data zero-padded to the alignment;
// math.MaxInt64 when that does not fit an int64.
func BlobEntryBytes(n int64) int64 {
	if n > math.MaxInt64-blobMetaSize-blobAlign {
		return math.MaxInt64
	}
	return blobMetaSize + (n+blobAlign-1)/blobAlign*blobAlign
}

// ErrBlob is the sentinel every weight-file error wraps.
var ErrBlob = errors.New("mil: malformed weight blob")

// BlobError reports a malformed weight file: Index is the blob's number
// (from 0), or -1 for the file header; Offset is where the problem is.
type BlobError struct {
	Index  int
	Offset uint64
	Msg    string
}

func (e *BlobError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("mil: blob header: %s", e.Msg)
	}
	return fmt.Sprintf("mil: blob %d at offset %d: %s", e.Index, e.Offset, e.Msg)
}

// Unwrap returns ErrBlob.
func (e *BlobError) Unwrap() error { return ErrBlob }

// BlobWriter builds a weight file. The zero value is an empty file, ready
// to use, as is NewBlobWriter().
type BlobWriter struct {
	buf   []byte // header (count not yet filled in) and blobs
	count uint32
}

// NewBlobWriter returns a writer holding an empty weight file.
func NewBlobWriter() *BlobWriter {
	w := &BlobWriter{}
	w.init()
	return w
}

func (w *BlobWriter) init() {
	if w.buf == nil {
		w.buf = make([]byte, blobHeaderSize, 4096)
		binary.LittleEndian.PutUint32(w.buf[4:], blobVersion)
	}
}

// Add appends a blob and returns the offset of its 64-byte metadata record,
// which is what BLOBFILE(offset = ...) names: 64 for the first blob, whose
// data starts at 128. The data is copied and zero-padded to a multiple of
// 64 bytes.
func (w *BlobWriter) Add(dt BlobDType, data []byte) (offset uint64) {
	w.init()
	off := len(w.buf)
	var meta [blobMetaSize]byte
	binary.LittleEndian.PutUint32(meta[0:], blobSentinel)
	binary.LittleEndian.PutUint32(meta[4:], uint32(dt))
	binary.LittleEndian.PutUint64(meta[8:], uint64(len(data)))
	binary.LittleEndian.PutUint64(meta[16:], uint64(off+blobMetaSize))
	w.buf = append(w.buf, meta[:]...)
	w.buf = append(w.buf, data...)
	if pad := len(w.buf) % blobAlign; pad != 0 {
		w.buf = append(w.buf, make([]byte, blobAlign-pad)...)
	}
	w.count++
	return uint64(off)
}

// Len is the size in bytes of the file Bytes returns.
func (w *BlobWriter) Len() int {
	w.init()
	return len(w.buf)
}

// Count is the number of blobs added.
func (w *BlobWriter) Count() int { return int(w.count) }

// Bytes returns a copy of the weight file: the 64-byte header (uint32
// count, uint32 version 2, zeros) followed by each blob's metadata record
// and padded data.
func (w *BlobWriter) Bytes() []byte {
	w.init()
	b := append([]byte(nil), w.buf...)
	binary.LittleEndian.PutUint32(b[0:], w.count)
	return b
}

// BlobEntry is one blob of a weight file.
type BlobEntry struct {
	Offset uint64 // offset of the metadata record
	DType  BlobDType
	Data   []byte // sizeInBytes bytes; aliases the buffer given to ReadBlob
}

// BlobFile is a decoded weight file.
type BlobFile struct {
	Entries []BlobEntry // in file order
}

// ReadBlob decodes a weight file. It checks that the file holds a header of
// version 2 and the count of blobs it announces, each with the sentinel
// 0xDEADBEEF, its metadata and data 64-byte aligned, its data after its
// metadata and inside the file, and no blob overlapping the one before.
// The last blob's data need not be padded; bytes after the last blob are
// ignored. Entry data aliases b. Errors are *BlobError and wrap ErrBlob.
func ReadBlob(b []byte) (*BlobFile, error) {
	if len(b) < blobHeaderSize {
		return nil, &BlobError{Index: -1, Msg: fmt.Sprintf("file is %d bytes, shorter than the %d-byte header", len(b), blobHeaderSize)}
	}
	count := binary.LittleEndian.Uint32(b[0:])
	if v := binary.LittleEndian.Uint32(b[4:]); v != blobVersion {
		return nil, &BlobError{Index: -1, Msg: fmt.Sprintf("version %d, want %d", v, blobVersion)}
	}
	size := uint64(len(b))
	f := &BlobFile{Entries: make([]BlobEntry, 0, min(uint64(count), size/(2*blobAlign)+1))}
	off := uint64(blobHeaderSize)
	for i := uint32(0); i < count; i++ {
		fail := func(format string, args ...any) (*BlobFile, error) {
			return nil, &BlobError{Index: int(i), Offset: off, Msg: fmt.Sprintf(format, args...)}
		}
		if off > size || size-off < blobMetaSize {
			return fail("metadata record past end of file (%d bytes); header announces %d blobs", size, count)
		}
		m := b[off : off+blobMetaSize]
		if s := binary.LittleEndian.Uint32(m[0:]); s != blobSentinel {
			return fail("sentinel 0x%08x, want 0x%08x", s, uint32(blobSentinel))
		}
		dt := BlobDType(binary.LittleEndian.Uint32(m[4:]))
		n := binary.LittleEndian.Uint64(m[8:])
		data := binary.LittleEndian.Uint64(m[16:])
		switch {
		case data%blobAlign != 0:
			return fail("data offset %d not %d-byte aligned", data, blobAlign)
		case data < off+blobMetaSize:
			return fail("data offset %d inside or before the metadata record", data)
		case data > size || n > size-data:
			return fail("data [%d, %d+%d) past end of file (%d bytes)", data, data, n, size)
		}
		f.Entries = append(f.Entries, BlobEntry{Offset: off, DType: dt, Data: b[data : data+n : data+n]})
		off = (data + n + blobAlign - 1) / blobAlign * blobAlign
	}
	return f, nil
}

// At returns the blob whose metadata record is at offset, the value of a
// BLOBFILE(offset = ...) reference. A missing blob is an error wrapping
// ErrBlob.
func (f *BlobFile) At(offset uint64) (BlobEntry, error) {
	// ReadBlob returns entries in increasing offset order: binary search.
	lo, hi := 0, len(f.Entries)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if f.Entries[m].Offset < offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(f.Entries) && f.Entries[lo].Offset == offset {
		return f.Entries[lo], nil
	}
	// A BlobFile built by hand may be unsorted.
	for _, e := range f.Entries {
		if e.Offset == offset {
			return e, nil
		}
	}
	return BlobEntry{}, fmt.Errorf("%w: no blob at offset %d", ErrBlob, offset)
}

// FP16Data encodes xs as little-endian fp16 values, each rounded to nearest,
// ties to even: the data of a BlobFP16 blob.
func FP16Data(xs []float64) []byte {
	b := make([]byte, 2*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(fp16.FromFloat64(x)))
	}
	return b
}
