package nn

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/anemone-go/anemone/fp16"
)

// DType is a safetensors element type, spelled as in the file's header.
type DType string

// The element types nn reads (widened to float64) and writes: F32, F16,
// BF16 and F64. Files may hold others (I64 position ids, for instance):
// ReadSafetensors accepts them with Data nil, and Weights.Get refuses them.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	F64  DType = "F64"
)

// dtypeSizes are the element sizes of every dtype the safetensors format
// defines; a header naming another is malformed.
var dtypeSizes = map[DType]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, F16: 2, BF16: 2,
	"I32": 4, "U32": 4, F32: 4,
	"I64": 8, "U64": 8, F64: 8,
}

// MaxHeaderBytes is the largest JSON header ReadSafetensors accepts (the
// limit of the reference implementation, 100 MB).
const MaxHeaderBytes = 100_000_000

// maxElements bounds one tensor's element count, so that a hostile header
// cannot make the reader overflow an int.
const maxElements = 1 << 40

// Tensor is one named tensor: its file dtype, its shape and, for the float
// dtypes, its values widened to float64 (row-major). Data is nil for a
// tensor of another dtype.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []float64
}

// Size is the number of elements, the product of Shape.
func (t Tensor) Size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Valid reports whether t holds data (the zero Tensor means "none", as for
// an optional bias). It says nothing of whether the data fits the shape:
// Check does, and every layer calls it on each tensor it is given.
func (t Tensor) Valid() bool { return t.Data != nil }

// Check returns nil when t is the zero Tensor (no data and no shape: an
// absent optional tensor) or when every dimension of Shape is positive
// and Data holds exactly their product of values. Otherwise it returns an
// error wrapping ErrWeight that names the tensor and gives both counts.
func (t Tensor) Check() error {
	if p := t.problem(); p != "" {
		return fmt.Errorf("nn: %s: %w", p, ErrWeight)
	}
	return nil
}

// isZero reports the zero Tensor's meaning, "none": no data and no shape.
func (t Tensor) isZero() bool { return t.Data == nil && len(t.Shape) == 0 }

// problem describes what makes t inconsistent ("" when nothing does), for
// Check and for the layers' messages.
func (t Tensor) problem() string {
	if t.isZero() {
		return ""
	}
	need := 1
	for i, d := range t.Shape {
		if d <= 0 {
			return fmt.Sprintf("weight %q has shape %v: dimension %d is %d, and every dimension must be positive", t.Name, t.Shape, i, d)
		}
		if need > maxElements/d {
			return fmt.Sprintf("weight %q has shape %v, more than 2^40 elements", t.Name, t.Shape)
		}
		need *= d
	}
	switch {
	case t.Data == nil:
		return fmt.Sprintf("weight %q has shape %v but no data (dtype %q; nn reads F32, F16, BF16 and F64): give it %d values, or use the zero Tensor for none", t.Name, t.Shape, t.DType, need)
	case len(t.Data) != need:
		return fmt.Sprintf("weight %q has %d values but its shape %v needs %d: make len(Data) the product of Shape", t.Name, len(t.Data), t.Shape, need)
	}
	return ""
}

// Weights is a set of tensors by name, as read from or written to a
// safetensors file.
type Weights map[string]Tensor

// Add stores t under its name.
func (w Weights) Add(t Tensor) { w[t.Name] = t }

// Get returns the float tensor called name, checking its shape when shape
// is given. A missing tensor, a dtype nn does not read, a shape other
// than the one asked for or data that does not fill the shape exactly
// (Check) is an error wrapping ErrWeight.
func (w Weights) Get(name string, shape ...int) (Tensor, error) {
	t, ok := w[name]
	if !ok {
		return Tensor{}, fmt.Errorf("nn: weight %q is missing (the file holds %d tensors%s): %w", name, len(w), w.near(name), ErrWeight)
	}
	if t.Data == nil {
		return Tensor{}, fmt.Errorf("nn: weight %q has dtype %s; nn reads F32, F16, BF16 and F64 tensors: convert it: %w", name, t.DType, ErrWeight)
	}
	if shape != nil && !slices.Equal(shape, t.Shape) {
		return Tensor{}, fmt.Errorf("nn: weight %q has shape %v, the model needs %v: %w", name, t.Shape, shape, ErrWeight)
	}
	if err := t.Check(); err != nil {
		return Tensor{}, err
	}
	return t, nil
}

// near lists up to three names sharing name's first dotted component, to
// help spot a misspelt weight.
func (w Weights) near(name string) string {
	prefix, _, _ := strings.Cut(name, ".")
	var names []string
	for n := range w {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	if len(names) > 3 {
		names = names[:3]
	}
	return ", such as " + strings.Join(names, ", ")
}

// header is one entry of the JSON header.
type header struct {
	DType   DType   `json:"dtype"`
	Shape   []int   `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// ReadSafetensors reads a safetensors file: an 8-byte little-endian header
// length N, N bytes of JSON mapping each tensor name to its dtype, shape
// and [begin, end) byte offsets in the data that follows (and an optional
// "__metadata__" map of strings, ignored), then the raw little-endian data.
// F32, F16 and BF16 tensors are widened to float64, F64 tensors read as
// they are; tensors of other dtypes get Data nil.
//
// A malformed file is an error wrapping ErrFormat: a header length of 0 or
// above MaxHeaderBytes, a header that is not a JSON object or names an
// unknown dtype, a negative dimension, offsets whose length does not match
// dtype and shape, offsets that overlap or leave holes, or data that ends
// before the last offset. The reader consumes exactly the header and the
// data it indexes, and allocates no more than the input actually holds.
func ReadSafetensors(r io.Reader) (Weights, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("nn: safetensors: reading the 8-byte header length: %v: %w", err, ErrFormat)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n == 0 || n > MaxHeaderBytes {
		return nil, fmt.Errorf("nn: safetensors: header length %d is outside [1, %d] (not a safetensors file?): %w", n, MaxHeaderBytes, ErrFormat)
	}
	hdr, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, fmt.Errorf("nn: safetensors: reading the header: %v: %w", err, ErrFormat)
	}
	if uint64(len(hdr)) != n {
		return nil, fmt.Errorf("nn: safetensors: truncated header: %d of %d bytes: %w", len(hdr), n, ErrFormat)
	}
	if trimmed := bytes.TrimLeft(hdr, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("nn: safetensors: the header is not a JSON object: %w", ErrFormat)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("nn: safetensors: header JSON: %v: %w", err, ErrFormat)
	}
	type entry struct {
		name string
		h    header
	}
	entries := make([]entry, 0, len(raw))
	for name, msg := range raw {
		if name == "__metadata__" {
			var meta map[string]string
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, fmt.Errorf("nn: safetensors: __metadata__ must map strings to strings: %v: %w", err, ErrFormat)
			}
			continue
		}
		var h header
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&h); err != nil {
			return nil, fmt.Errorf("nn: safetensors: tensor %q: %v: %w", name, err, ErrFormat)
		}
		if err := h.check(name); err != nil {
			return nil, err
		}
		entries = append(entries, entry{name, h})
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i].h.Offsets, entries[j].h.Offsets
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		return a[1] < b[1]
	})
	var end int64
	for _, e := range entries {
		if e.h.Offsets[0] != end {
			return nil, fmt.Errorf("nn: safetensors: tensor %q starts at byte %d of the data, want %d (tensors must tile the data without holes or overlaps): %w", e.name, e.h.Offsets[0], end, ErrFormat)
		}
		end = e.h.Offsets[1]
	}
	data, err := io.ReadAll(io.LimitReader(r, end))
	if err != nil {
		return nil, fmt.Errorf("nn: safetensors: reading the data: %v: %w", err, ErrFormat)
	}
	if int64(len(data)) != end {
		return nil, fmt.Errorf("nn: safetensors: truncated data: %d of the %d bytes the header indexes: %w", len(data), end, ErrFormat)
	}
	ws := make(Weights, len(entries))
	for _, e := range entries {
		t := Tensor{Name: e.name, DType: e.h.DType, Shape: append([]int{}, e.h.Shape...)}
		t.Data = decode(e.h.DType, data[e.h.Offsets[0]:e.h.Offsets[1]])
		ws[e.name] = t
	}
	return ws, nil
}

// check validates one header entry: a known dtype, dims ≥ 0, and offsets
// whose length matches the dtype and shape.
func (h header) check(name string) error {
	size, ok := dtypeSizes[h.DType]
	if !ok {
		return fmt.Errorf("nn: safetensors: tensor %q has unknown dtype %q: %w", name, h.DType, ErrFormat)
	}
	if h.Shape == nil {
		return fmt.Errorf("nn: safetensors: tensor %q has no shape: %w", name, ErrFormat)
	}
	elems := int64(1)
	for _, d := range h.Shape {
		if d < 0 {
			return fmt.Errorf("nn: safetensors: tensor %q has shape %v with a negative dimension: %w", name, h.Shape, ErrFormat)
		}
		if d > 0 && elems > maxElements/int64(d) {
			return fmt.Errorf("nn: safetensors: tensor %q has shape %v, more than %d elements: %w", name, h.Shape, int64(maxElements), ErrFormat)
		}
		elems *= int64(d)
	}
	if len(h.Offsets) != 2 || h.Offsets[0] < 0 || h.Offsets[1] < h.Offsets[0] {
		return fmt.Errorf("nn: safetensors: tensor %q has data_offsets %v, want [begin, end] with 0 ≤ begin ≤ end: %w", name, h.Offsets, ErrFormat)
	}
	if got, want := h.Offsets[1]-h.Offsets[0], elems*int64(size); got != want {
		return fmt.Errorf("nn: safetensors: tensor %q (%s, shape %v) spans %d bytes, its dtype and shape need %d: %w", name, h.DType, h.Shape, got, want, ErrFormat)
	}
	return nil
}

// decode widens little-endian F32, F16, BF16 and F64 data to float64; it
// returns nil for other dtypes. A tensor with no elements decodes to an
// empty, non-nil slice.
func decode(d DType, b []byte) []float64 {
	var out []float64
	switch d {
	case F32:
		out = make([]float64, len(b)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case F16:
		out = make([]float64, len(b)/2)
		for i := range out {
			out[i] = fp16.Bits(binary.LittleEndian.Uint16(b[2*i:])).Float64()
		}
	case BF16:
		out = make([]float64, len(b)/2)
		for i := range out {
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
		}
	case F64:
		out = make([]float64, len(b)/8)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	}
	return out
}

// WriteSafetensors writes ws as a safetensors file, tensors in name order,
// each in its DType (F32 when empty; F32, F16, BF16 and F64 are written,
// F64 bit for bit, so a tensor read from F64 round-trips exactly), the
// header padded with spaces to a multiple of 8 bytes. metadata may be nil.
// A tensor whose data does not match its shape, or whose values do not fit
// its dtype (NaN in any dtype, or beyond float32's, fp16's or bfloat16's
// range), or of another dtype, is an error wrapping ErrWeight.
func WriteSafetensors(w io.Writer, ws Weights, metadata map[string]string) error {
	names := make([]string, 0, len(ws))
	for n := range ws {
		names = append(names, n)
	}
	sort.Strings(names)
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var data []byte
	for _, n := range names {
		t := ws[n]
		if t.Name != "" && t.Name != n {
			return fmt.Errorf("nn: safetensors: tensor stored under %q is named %q: %w", n, t.Name, ErrWeight)
		}
		d := t.DType
		if d == "" {
			d = F32
		}
		for _, s := range t.Shape {
			if s < 0 {
				return fmt.Errorf("nn: safetensors: tensor %q has shape %v with a negative dimension: %w", n, t.Shape, ErrWeight)
			}
		}
		if len(t.Data) != t.Size() {
			return fmt.Errorf("nn: safetensors: tensor %q has %d values, its shape %v needs %d: %w", n, len(t.Data), t.Shape, t.Size(), ErrWeight)
		}
		begin := len(data)
		var err error
		if data, err = encode(data, n, d, t.Data); err != nil {
			return err
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[n] = header{DType: d, Shape: shape, Offsets: []int64{int64(begin), int64(len(data))}}
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("nn: safetensors: encoding the header: %v: %w", err, ErrWeight)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	for _, b := range [][]byte{lenBuf[:], js, data} {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("nn: safetensors: %w", err)
		}
	}
	return nil
}

// encode appends xs in dtype d.
func encode(dst []byte, name string, d DType, xs []float64) ([]byte, error) {
	bad := func(i int, limit string) error {
		return fmt.Errorf("nn: safetensors: tensor %q element %d is %g, which %s does not hold (%s): %w", name, i, xs[i], d, limit, ErrWeight)
	}
	switch d {
	case F32:
		for i, x := range xs {
			if math.IsNaN(x) || math.IsInf(float64(float32(x)), 0) && !math.IsInf(x, 0) {
				return nil, bad(i, "finite and within ±3.4e38")
			}
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(x)))
		}
	case F16:
		for i, x := range xs {
			h := fp16.FromFloat64(x)
			if h.IsNaN() || h.IsInf() && !math.IsInf(x, 0) {
				return nil, bad(i, "finite and within ±65504")
			}
			dst = binary.LittleEndian.AppendUint16(dst, uint16(h))
		}
	case BF16:
		for i, x := range xs {
			if math.IsNaN(x) {
				return nil, bad(i, "a number")
			}
			b := bf16Bits(float32(x))
			if b&0x7f80 == 0x7f80 && !math.IsInf(x, 0) {
				return nil, bad(i, "within ±3.39e38")
			}
			dst = binary.LittleEndian.AppendUint16(dst, b)
		}
	case F64:
		for i, x := range xs {
			if math.IsNaN(x) {
				return nil, bad(i, "a number")
			}
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
		}
	default:
		return nil, fmt.Errorf("nn: safetensors: tensor %q: nn writes F32, F16, BF16 and F64, not %q: %w", name, d, ErrWeight)
	}
	return dst, nil
}

// bf16Bits rounds a float32 to bfloat16, nearest with ties to even.
func bf16Bits(f float32) uint16 {
	u := math.Float32bits(f)
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
