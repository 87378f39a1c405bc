package ane

import (
	"fmt"
	"math"
	"strings"
)

// Keys of the compiled model's attributes dictionary (modelAttributes), as
// public drivers read them and as logged dictionaries show them.
const (
	KeyNetworkStatusList = "NetworkStatusList"
	KeyLiveInputList     = "LiveInputList"
	KeyLiveOutputList    = "LiveOutputList"
	KeyModelDescription  = "ANEFModelDescription"
	KeyInputSymbols      = "kANEFModelInputSymbolsArrayKey"
	KeyOutputSymbols     = "kANEFModelOutputSymbolsArrayKey"
	KeyProcedures        = "ANEFModelProcedures"
	KeyProcedureID       = "ANEFModelProcedureID"
	KeyInputIndices      = "ANEFModelInputSymbolIndexArray"
	KeyOutputIndices     = "ANEFModelOutputSymbolIndexArray"

	KeyChannels    = "Channels"
	KeyWidth       = "Width"
	KeyHeight      = "Height"
	KeyPlaneStride = "PlaneStride"
	KeyRowStride   = "RowStride"
	KeyBatchStride = "BatchStride"
	KeyBatches     = "Batches"
	KeyDepth       = "Depth"
	KeyPlaneCount  = "PlaneCount"
	KeyInterleave  = "Interleave"
	KeyType        = "Type"
	KeyName        = "Name"
	KeySymbol      = "Symbol"
)

// OutputSuffix ends the Name and Symbol the compiled model reports for each
// output ("y@output" for the MIL output y). Names are compared after
// trimming it.
const OutputSuffix = "@output"

// Type values of a live-list entry, and their element sizes. Logged
// dictionaries show exactly these spellings; any other Type is refused
// rather than assumed to be fp16. An entry without a Type is taken for
// fp16, with a warning: the only programs this package emits are fp16,
// and the one public driver that reads Type does the same.
const (
	TypeFloat16 = "Float16"
	TypeFloat32 = "Float32"
)

// ElemSizeOf is the element size in bytes of a live-list Type, or an error
// wrapping ErrLayout for a type this package does not drive.
func ElemSizeOf(typ string) (int, error) {
	switch typ {
	case TypeFloat16:
		return 2, nil
	case TypeFloat32:
		return 4, nil
	case "":
		return 0, fmt.Errorf("%w: no %s (want %q or %q)", ErrLayout, KeyType, TypeFloat16, TypeFloat32)
	}
	return 0, fmt.Errorf("%w: %s %q is not %q or %q; this package drives only those", ErrLayout, KeyType, typ, TypeFloat16, TypeFloat32)
}

// BaseName is a reported Name or Symbol with the output suffix trimmed: the
// MIL name it stands for.
func BaseName(s string) string { return strings.TrimSuffix(s, OutputSuffix) }

// RowAlignBytes is the alignment the ANE requires of every row.
const RowAlignBytes = 64

// maxSurfaceBytes bounds a surface's size so that layout arithmetic cannot
// overflow on bad input (16 GiB is far beyond any ANE surface).
const maxSurfaceBytes = 1 << 34

// Tensor is one live input or output of a compiled model as the model
// reports it: Channels planes of Height rows of Width elements. Element
// (c, h, w) sits at byte c·PlaneStride + h·RowStride + w·ElemSize of its
// surface.
//
// Batches, Depth, PlaneCount and Interleave are 0 when the entry does not
// carry them. This package drives only one batch of depth one, not
// interleaved: a layout with Batches, Depth or Interleave other than 1 is
// refused. PlaneCount may be 1 or Channels: a logged M3 dictionary reports
// PlaneCount equal to Channels for a plain [1, C, 1, W] tensor, so that
// value is the ordinary one, and any other is refused.
type Tensor struct {
	Name        string // the entry's "Name" ("y@output" for output y)
	Symbol      string // the entry's "Symbol"
	Type        string // the entry's "Type": "Float16" or "Float32"
	Channels    int
	Height      int
	Width       int
	RowStride   int // bytes from one row to the next
	PlaneStride int // bytes from one channel to the next
	BatchStride int // bytes from one batch to the next; 0 when absent
	Batches     int
	Depth       int
	PlaneCount  int
	Interleave  int
	ElemSize    int // 2 (Float16) or 4 (Float32)
	// Index is the tensor's position in procedure 0's symbol order, which
	// is both its place in the request's arrays and the index passed for
	// it there (position = index).
	Index int
}

// Layout is the I/O layout of a compiled model.
type Layout struct {
	Inputs        []Tensor // in LiveInputList order
	Outputs       []Tensor // in LiveOutputList order
	InputSymbols  Symbols
	OutputSymbols Symbols
	// Warnings lists what ParseLayout assumed: each entry without a Type,
	// taken for fp16.
	Warnings []string
}

// Symbols is one direction's symbol table from the model description.
type Symbols struct {
	// Names is kANEFModel{Input,Output}SymbolsArrayKey; nil if absent.
	Names []string
	// Indices is ANEFModelProcedures[0].ANEFModel{Input,Output}SymbolIndexArray,
	// indices into Names in procedure 0's order; nil if absent.
	Indices []int
}

func roundUp(n, a int) int { return (n + a - 1) / a * a }

// Validate checks the tensor's dimensions and strides: positive sizes,
// rows 64-byte aligned and wide enough for Width elements, planes tall
// enough for Height rows, and one batch of depth one, not interleaved.
func (t Tensor) Validate() error {
	const big = 1 << 31
	switch {
	case t.Channels <= 0 || t.Height <= 0 || t.Width <= 0:
		return fmt.Errorf("%w: tensor %q: dimensions C=%d H=%d W=%d must be positive", ErrLayout, t.Name, t.Channels, t.Height, t.Width)
	case t.Channels >= big || t.Height >= big || t.Width >= big || t.RowStride >= big || t.PlaneStride >= big || t.BatchStride >= big:
		return fmt.Errorf("%w: tensor %q: dimensions or strides too large", ErrLayout, t.Name)
	case t.ElemSize != 2 && t.ElemSize != 4:
		return fmt.Errorf("%w: tensor %q: element size %d, want 2 or 4", ErrLayout, t.Name, t.ElemSize)
	case t.RowStride <= 0 || t.RowStride%RowAlignBytes != 0:
		return fmt.Errorf("%w: tensor %q: RowStride %d is not a positive multiple of %d", ErrLayout, t.Name, t.RowStride, RowAlignBytes)
	case t.RowStride < roundUp(t.Width*t.ElemSize, RowAlignBytes):
		return fmt.Errorf("%w: tensor %q: RowStride %d < %d needed for Width %d of %d-byte elements", ErrLayout, t.Name, t.RowStride, roundUp(t.Width*t.ElemSize, RowAlignBytes), t.Width, t.ElemSize)
	case t.PlaneStride < t.Height*t.RowStride:
		return fmt.Errorf("%w: tensor %q: PlaneStride %d < Height·RowStride = %d·%d", ErrLayout, t.Name, t.PlaneStride, t.Height, t.RowStride)
	case t.BatchStride < 0:
		return fmt.Errorf("%w: tensor %q: negative BatchStride %d", ErrLayout, t.Name, t.BatchStride)
	case t.Channels*t.PlaneStride > maxSurfaceBytes:
		return fmt.Errorf("%w: tensor %q: %d bytes is too large a surface", ErrLayout, t.Name, t.Channels*t.PlaneStride)
	}
	for _, f := range []struct {
		key string
		v   int
	}{{KeyBatches, t.Batches}, {KeyDepth, t.Depth}, {KeyInterleave, t.Interleave}} {
		if f.v != 0 && f.v != 1 {
			return fmt.Errorf("%w: tensor %q: %s = %d; this package drives only a layout with %s 1, and will not guess at another", ErrLayout, t.Name, f.key, f.v, f.key)
		}
	}
	if t.PlaneCount != 0 && t.PlaneCount != 1 && t.PlaneCount != t.Channels {
		return fmt.Errorf("%w: tensor %q: %s = %d with %d channels; this package drives only one plane per channel", ErrLayout, t.Name, KeyPlaneCount, t.PlaneCount, t.Channels)
	}
	return nil
}

// Bytes is the number of bytes the tensor's surface must hold:
// max(Channels·PlaneStride, BatchStride).
func (t Tensor) Bytes() int { return max(t.Channels*t.PlaneStride, t.BatchStride) }

// Offset is the byte offset of element (c, h, w).
func (t Tensor) Offset(c, h, w int) int { return c*t.PlaneStride + h*t.RowStride + w*t.ElemSize }

// Packed reports whether the strides are exactly the packed ones (no gap
// after a row or a plane). One public project reports that the engine reads
// inputs packed, ignoring strides; whenever Packed is true
// that report and the stride-following layout this package writes agree.
// lower pads rows to 32 fp16 elements = 64 bytes, so for its programs they
// agree unless the model reports extra row padding.
func (t Tensor) Packed() bool {
	return t.RowStride == t.Width*t.ElemSize && t.PlaneStride == t.Height*t.RowStride
}

// ParseLayout reads the I/O layout out of a model attributes dictionary
// converted to Go data: dictionaries as map[string]any, arrays as []any,
// strings as string and numbers as any Go integer type (or an integral
// float). Only procedure 0 is read: the first element of NetworkStatusList
// and of the description's ANEFModelProcedures. Every tensor is validated
// and given its Index (see ResolveIndices).
func ParseLayout(attrs map[string]any) (*Layout, error) {
	if attrs == nil {
		return nil, fmt.Errorf("%w: no model attributes", ErrLayout)
	}
	nsl, ok := asList(attrs[KeyNetworkStatusList])
	if !ok {
		return nil, fmt.Errorf("%w: attributes have no %s array", ErrLayout, KeyNetworkStatusList)
	}
	if len(nsl) == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrLayout, KeyNetworkStatusList)
	}
	proc, ok := asMap(nsl[0])
	if !ok {
		return nil, fmt.Errorf("%w: %s[0] is %T, not a dictionary", ErrLayout, KeyNetworkStatusList, nsl[0])
	}
	l := &Layout{}
	if d, present := attrs[KeyModelDescription]; present && d != nil {
		desc, ok := asMap(d)
		if !ok {
			return nil, fmt.Errorf("%w: %s is %T, not a dictionary", ErrLayout, KeyModelDescription, d)
		}
		var err error
		if l.InputSymbols, l.OutputSymbols, err = parseDescription(desc); err != nil {
			return nil, err
		}
	}
	var err error
	if l.Inputs, err = parseTensors(proc, KeyLiveInputList, l.InputSymbols, &l.Warnings); err != nil {
		return nil, err
	}
	if l.Outputs, err = parseTensors(proc, KeyLiveOutputList, l.OutputSymbols, &l.Warnings); err != nil {
		return nil, err
	}
	return l, nil
}

func parseDescription(desc map[string]any) (in, out Symbols, err error) {
	if in.Names, err = stringList(desc, KeyInputSymbols); err != nil {
		return in, out, err
	}
	if out.Names, err = stringList(desc, KeyOutputSymbols); err != nil {
		return in, out, err
	}
	v, present := desc[KeyProcedures]
	if !present || v == nil {
		return in, out, nil
	}
	procs, ok := asList(v)
	if !ok {
		return in, out, fmt.Errorf("%w: %s is %T, not an array", ErrLayout, KeyProcedures, v)
	}
	if len(procs) == 0 {
		return in, out, nil
	}
	p0, ok := asMap(procs[0])
	if !ok {
		return in, out, fmt.Errorf("%w: %s[0] is %T, not a dictionary", ErrLayout, KeyProcedures, procs[0])
	}
	// The request names procedure 0 and the layout is NetworkStatusList[0]:
	// the first procedure must be that one.
	if id, present := p0[KeyProcedureID]; present && id != nil {
		if n, ok := asInt(id); !ok || n != 0 {
			return in, out, fmt.Errorf("%w: %s[0] has %s %v, not 0", ErrLayout, KeyProcedures, KeyProcedureID, id)
		}
	}
	if in.Indices, err = intList(p0, KeyInputIndices); err != nil {
		return in, out, err
	}
	if out.Indices, err = intList(p0, KeyOutputIndices); err != nil {
		return in, out, err
	}
	return in, out, nil
}

func stringList(m map[string]any, key string) ([]string, error) {
	v, present := m[key]
	if !present || v == nil {
		return nil, nil
	}
	list, ok := asList(v)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %T, not an array", ErrLayout, key, v)
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] is %T, not a string", ErrLayout, key, i, e)
		}
		out[i] = s
	}
	return out, nil
}

func intList(m map[string]any, key string) ([]int, error) {
	v, present := m[key]
	if !present || v == nil {
		return nil, nil
	}
	list, ok := asList(v)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %T, not an array", ErrLayout, key, v)
	}
	out := make([]int, len(list))
	for i, e := range list {
		n, ok := asInt(e)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] = %v (%T) is not an integer", ErrLayout, key, i, e, e)
		}
		out[i] = n
	}
	return out, nil
}

func parseTensors(proc map[string]any, key string, symbols Symbols, warnings *[]string) ([]Tensor, error) {
	list, ok := asList(proc[key])
	if !ok {
		return nil, fmt.Errorf("%w: %s[0] has no %s array", ErrLayout, KeyNetworkStatusList, key)
	}
	ts := make([]Tensor, len(list))
	for i, e := range list {
		m, ok := asMap(e)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] is %T, not a dictionary", ErrLayout, key, i, e)
		}
		t, untyped, err := parseTensor(m)
		if err != nil {
			return nil, within(fmt.Sprintf("%s[%d]", key, i), err)
		}
		if untyped {
			*warnings = append(*warnings, fmt.Sprintf("%s[%d] (%q) has no %s; taken for %s", key, i, t.Name, KeyType, TypeFloat16))
		}
		ts[i] = t
	}
	if err := ResolveIndices(ts, symbols); err != nil {
		return nil, within(key, err)
	}
	return ts, nil
}

// parseTensor reads one live-list entry; untyped reports that it had no
// Type and was taken for fp16.
func parseTensor(m map[string]any) (t Tensor, untyped bool, err error) {
	for _, f := range []struct {
		key string
		dst *string
	}{{KeyName, &t.Name}, {KeySymbol, &t.Symbol}, {KeyType, &t.Type}} {
		v, present := m[f.key]
		if !present || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return Tensor{}, false, fmt.Errorf("%w: %s is %T, not a string", ErrLayout, f.key, v)
		}
		*f.dst = s
	}
	for _, f := range []struct {
		key      string
		dst      *int
		optional bool
	}{
		{KeyChannels, &t.Channels, false}, {KeyWidth, &t.Width, false}, {KeyHeight, &t.Height, false},
		{KeyPlaneStride, &t.PlaneStride, false}, {KeyRowStride, &t.RowStride, false},
		{KeyBatchStride, &t.BatchStride, true},
		{KeyBatches, &t.Batches, true}, {KeyDepth, &t.Depth, true},
		{KeyPlaneCount, &t.PlaneCount, true}, {KeyInterleave, &t.Interleave, true},
	} {
		v, present := m[f.key]
		if !present || v == nil {
			if f.optional {
				continue
			}
			return Tensor{}, false, fmt.Errorf("%w: tensor %q has no %s", ErrLayout, t.Name, f.key)
		}
		n, ok := asInt(v)
		if !ok {
			return Tensor{}, false, fmt.Errorf("%w: tensor %q: %s = %v (%T) is not an integer", ErrLayout, t.Name, f.key, v, v)
		}
		if f.optional && f.key != KeyBatchStride && n == 0 {
			// Present counts must be positive; 0 is reserved for absent.
			return Tensor{}, false, fmt.Errorf("%w: tensor %q: %s = 0", ErrLayout, t.Name, f.key)
		}
		*f.dst = n
	}
	if _, present := m[KeyType]; !present || m[KeyType] == nil {
		t.Type, untyped = TypeFloat16, true
	}
	if t.ElemSize, err = ElemSizeOf(t.Type); err != nil {
		return Tensor{}, false, within(fmt.Sprintf("tensor %q", t.Name), err)
	}
	return t, untyped, t.Validate()
}

// ResolveIndices sets each tensor's Index: its position in procedure 0's
// symbol order. That order is symbols.Indices (ANEFModelProcedures[0]'s
// index array), naming entries of symbols.Names, when the description has
// one; otherwise symbols.Names itself. A tensor is found in that order by
// its Symbol, else its Name, both compared after trimming OutputSuffix. A
// model without any symbol table may have only one tensor each way (Index
// 0): there is nothing to order several by.
//
// Everything else is an error wrapping ErrLayout, never a positional guess:
// a tensor that is not in the symbol order, a name the order holds twice
// (only the index array can tell such symbols apart), an index out of
// range, two tensors at one position, or a count that differs from the
// order's.
func ResolveIndices(ts []Tensor, symbols Symbols) error {
	var order []string // names in procedure 0's symbol order
	switch {
	case symbols.Indices != nil:
		order = make([]string, len(symbols.Indices))
		for k, idx := range symbols.Indices {
			if idx < 0 || idx >= len(symbols.Names) {
				return fmt.Errorf("%w: procedure 0 names symbol %d, but the symbol array has %d entries", ErrLayout, idx, len(symbols.Names))
			}
			order[k] = BaseName(symbols.Names[idx])
		}
	case symbols.Names != nil:
		order = make([]string, len(symbols.Names))
		for k, n := range symbols.Names {
			order[k] = BaseName(n)
		}
	default:
		if len(ts) > 1 {
			return fmt.Errorf("%w: %d tensors and no symbol table to order them by", ErrLayout, len(ts))
		}
		for i := range ts {
			ts[i].Index = 0
		}
		return nil
	}
	if len(order) != len(ts) {
		return fmt.Errorf("%w: the live list has %d tensors, procedure 0's symbol order %d (%v)", ErrLayout, len(ts), len(order), order)
	}
	pos := make(map[string][]int, len(order))
	for k, n := range order {
		pos[n] = append(pos[n], k)
	}
	seen := make(map[int]int, len(ts))
	for i := range ts {
		idx := -1
		for _, key := range []string{ts[i].Symbol, ts[i].Name} {
			if key == "" {
				continue
			}
			ks := pos[BaseName(key)]
			if len(ks) > 1 {
				return fmt.Errorf("%w: tensor %d (%q) matches symbols %v of %v; the symbol order is ambiguous", ErrLayout, i, key, ks, order)
			}
			if len(ks) == 1 {
				idx = ks[0]
				break
			}
		}
		if idx < 0 {
			return fmt.Errorf("%w: tensor %d (name %q, symbol %q) is not among the symbols %v", ErrLayout, i, ts[i].Name, ts[i].Symbol, order)
		}
		if j, dup := seen[idx]; dup {
			return fmt.Errorf("%w: tensors %d (%q) and %d (%q) both resolve to symbol position %d", ErrLayout, j, ts[j].Name, i, ts[i].Name, idx)
		}
		seen[idx] = i
		ts[i].Index = idx
	}
	return nil
}

// SurfaceSpec holds the IOSurfaceCreate properties for one surface.
type SurfaceSpec struct {
	Width           int    // IOSurfaceWidth: W
	Height          int    // IOSurfaceHeight: C·H
	BytesPerElement int    // IOSurfaceBytesPerElement: 2 or 4
	BytesPerRow     int    // IOSurfaceBytesPerRow: RowStride
	AllocSize       int    // IOSurfaceAllocSize: Tensor.Bytes(), or more when padded
	PixelFormat     uint32 // IOSurfacePixelFormat: 0
}

// Surface sizes a surface for the tensor as the public Go driver does: one
// surface row per tensor row, Channels·Height rows of RowStride bytes, and
// Bytes() = max(Channels·PlaneStride, BatchStride) bytes in all.
func (t Tensor) Surface() SurfaceSpec {
	return SurfaceSpec{
		Width:           t.Width,
		Height:          t.Channels * t.Height,
		BytesPerElement: t.ElemSize,
		BytesPerRow:     t.RowStride,
		AllocSize:       t.Bytes(),
	}
}

// SurfaceOptions adjusts surface sizes beyond what the layout needs.
type SurfaceOptions struct {
	// PadToLargest gives every surface of a request (inputs and outputs
	// alike) the allocation size of the largest. One public ObjC project got
	// "status=0x1d : Program Inference error" at evaluation whenever the
	// outputs, or the inputs, of one request had different allocation sizes,
	// and padding them all to the largest cured it. The cost is
	// memory only: the data stays at the front, at the reported strides.
	PadToLargest bool
	// MinAllocSize is a floor on every allocation. The same project saw
	// status 0x1d for surfaces of a few KB, and the smallest that worked was
	// 49152 bytes.
	MinAllocSize int
}

// DefaultSurfaceOptions pads every surface to the largest of its request and
// to at least 48 KiB. Neither is known to be required on every chip; both
// only cost memory, and both work around failures others hit.
var DefaultSurfaceOptions = SurfaceOptions{PadToLargest: true, MinAllocSize: 48 << 10}

// PlanSurfaces sizes the surfaces for a request's inputs and outputs.
func PlanSurfaces(inputs, outputs []Tensor, opt SurfaceOptions) (in, out []SurfaceSpec) {
	in = make([]SurfaceSpec, len(inputs))
	out = make([]SurfaceSpec, len(outputs))
	largest := 0
	for i, t := range inputs {
		in[i] = t.Surface()
		largest = max(largest, in[i].AllocSize)
	}
	for i, t := range outputs {
		out[i] = t.Surface()
		largest = max(largest, out[i].AllocSize)
	}
	for _, s := range [][]SurfaceSpec{in, out} {
		for i := range s {
			if opt.PadToLargest {
				s[i].AllocSize = largest
			}
			s[i].AllocSize = max(s[i].AllocSize, opt.MinAllocSize)
		}
	}
	return in, out
}

func asMap(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok && m != nil
}

func asList(v any) ([]any, bool) {
	switch l := v.(type) {
	case []any:
		return l, l != nil
	case []map[string]any:
		out := make([]any, len(l))
		for i, m := range l {
			out[i] = m
		}
		return out, l != nil
	case []string:
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out, l != nil
	}
	return nil, false
}

// asInt converts any Go integer, or a float with an integral value, to int.
func asInt(v any) (int, bool) {
	const lim = 1 << 62
	var i int64
	switch x := v.(type) {
	case int:
		i = int64(x)
	case int8:
		i = int64(x)
	case int16:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	case uint:
		if uint64(x) > lim {
			return 0, false
		}
		i = int64(x)
	case uint8:
		i = int64(x)
	case uint16:
		i = int64(x)
	case uint32:
		i = int64(x)
	case uint64:
		if x > lim {
			return 0, false
		}
		i = int64(x)
	case float32:
		return asInt(float64(x))
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > lim {
			return 0, false
		}
		i = int64(x)
	default:
		return 0, false
	}
	if i > lim || i < -lim || int64(int(i)) != i {
		return 0, false
	}
	return int(i), true
}
