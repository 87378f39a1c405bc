package ane

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// Keys of the compiled model's attributes dictionary (modelAttributes of the
// inner _ANEModel), as read by the public Go and ObjC drivers (ANE_CALLS §4).
const (
	KeyNetworkStatusList = "NetworkStatusList"
	KeyLiveInputList     = "LiveInputList"
	KeyLiveOutputList    = "LiveOutputList"
	KeyModelDescription  = "ANEFModelDescription"
	KeyInputSymbols      = "kANEFModelInputSymbolsArrayKey"
	KeyOutputSymbols     = "kANEFModelOutputSymbolsArrayKey"

	KeyChannels    = "Channels"
	KeyWidth       = "Width"
	KeyHeight      = "Height"
	KeyPlaneStride = "PlaneStride"
	KeyRowStride   = "RowStride"
	KeyType        = "Type"
	KeyName        = "Name"
	KeySymbol      = "Symbol"
)

// RowAlignBytes is the alignment the ANE requires of every row.
const RowAlignBytes = 64

// maxSurfaceBytes bounds Channels·PlaneStride so that layout arithmetic
// cannot overflow on bad input (16 GiB is far beyond any ANE surface).
const maxSurfaceBytes = 1 << 34

// Tensor is one live input or output of a compiled model as the model
// reports it: Channels planes of Height rows of Width elements. Element
// (c, h, w) sits at byte c·PlaneStride + h·RowStride + w·ElemSize of its
// surface.
type Tensor struct {
	Name        string // the entry's "Name"
	Symbol      string // the entry's "Symbol"
	Type        string // the entry's "Type"; "Float32" is 4 bytes, anything else fp16
	Channels    int
	Height      int
	Width       int
	RowStride   int // bytes from one row to the next
	PlaneStride int // bytes from one channel to the next
	ElemSize    int // 2 (fp16) or 4 (Float32)
	Index       int // the symbol index passed for this surface in the request
}

// Layout is the I/O layout of a compiled model.
type Layout struct {
	Inputs        []Tensor // in LiveInputList order
	Outputs       []Tensor // in LiveOutputList order
	InputSymbols  []string // kANEFModelInputSymbolsArrayKey, if present
	OutputSymbols []string // kANEFModelOutputSymbolsArrayKey, if present
}

func roundUp(n, a int) int { return (n + a - 1) / a * a }

// Validate checks the tensor's dimensions and strides: positive sizes,
// rows 64-byte aligned and wide enough for Width elements, planes tall
// enough for Height rows.
func (t Tensor) Validate() error {
	const big = 1 << 31
	switch {
	case t.Channels <= 0 || t.Height <= 0 || t.Width <= 0:
		return fmt.Errorf("%w: tensor %q: dimensions C=%d H=%d W=%d must be positive", ErrLayout, t.Name, t.Channels, t.Height, t.Width)
	case t.Channels >= big || t.Height >= big || t.Width >= big || t.RowStride >= big || t.PlaneStride >= big:
		return fmt.Errorf("%w: tensor %q: dimensions or strides too large", ErrLayout, t.Name)
	case t.ElemSize != 2 && t.ElemSize != 4:
		return fmt.Errorf("%w: tensor %q: element size %d, want 2 or 4", ErrLayout, t.Name, t.ElemSize)
	case t.RowStride <= 0 || t.RowStride%RowAlignBytes != 0:
		return fmt.Errorf("%w: tensor %q: RowStride %d is not a positive multiple of %d", ErrLayout, t.Name, t.RowStride, RowAlignBytes)
	case t.RowStride < roundUp(t.Width*t.ElemSize, RowAlignBytes):
		return fmt.Errorf("%w: tensor %q: RowStride %d < %d needed for Width %d of %d-byte elements", ErrLayout, t.Name, t.RowStride, roundUp(t.Width*t.ElemSize, RowAlignBytes), t.Width, t.ElemSize)
	case t.PlaneStride < t.Height*t.RowStride:
		return fmt.Errorf("%w: tensor %q: PlaneStride %d < Height·RowStride = %d·%d", ErrLayout, t.Name, t.PlaneStride, t.Height, t.RowStride)
	case t.Channels*t.PlaneStride > maxSurfaceBytes:
		return fmt.Errorf("%w: tensor %q: %d bytes is too large a surface", ErrLayout, t.Name, t.Channels*t.PlaneStride)
	}
	return nil
}

// Bytes is the number of bytes the tensor spans, Channels·PlaneStride.
func (t Tensor) Bytes() int { return t.Channels * t.PlaneStride }

// Offset is the byte offset of element (c, h, w).
func (t Tensor) Offset(c, h, w int) int { return c*t.PlaneStride + h*t.RowStride + w*t.ElemSize }

// Packed reports whether the strides are exactly the packed ones (no gap
// after a row or a plane). One public project reports that the engine reads
// inputs packed, ignoring strides (ANE_CALLS §5); whenever Packed is true
// that report and the stride-following layout this package writes agree.
// lower pads rows to 32 fp16 elements = 64 bytes, so for its programs they
// agree unless the model reports extra row padding.
func (t Tensor) Packed() bool {
	return t.RowStride == t.Width*t.ElemSize && t.PlaneStride == t.Height*t.RowStride
}

// ParseLayout reads the I/O layout out of a model attributes dictionary
// converted to Go data: dictionaries as map[string]any, arrays as []any,
// strings as string and numbers as any Go integer type (or an integral
// float). Only the first element of NetworkStatusList (procedure 0) is read.
// Every tensor is validated, and each gets the symbol index to pass in the
// request: the position of its Symbol in the model description's symbol
// array, else the position of its Name, else its position in the live list.
//
// About order: one public project, passing indices 0..n−1, found that
// surfaces had to be supplied in alphabetical order of their MIL names, for
// inputs and outputs alike (ANE_CALLS §4). That is what one expects if the
// symbol arrays are sorted by name, which is why the symbol index, not the
// position in the program's signature, is what goes into the request.
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
		if l.InputSymbols, err = stringList(desc, KeyInputSymbols); err != nil {
			return nil, err
		}
		if l.OutputSymbols, err = stringList(desc, KeyOutputSymbols); err != nil {
			return nil, err
		}
	}
	var err error
	if l.Inputs, err = parseTensors(proc, KeyLiveInputList, l.InputSymbols); err != nil {
		return nil, err
	}
	if l.Outputs, err = parseTensors(proc, KeyLiveOutputList, l.OutputSymbols); err != nil {
		return nil, err
	}
	return l, nil
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

func parseTensors(proc map[string]any, key string, symbols []string) ([]Tensor, error) {
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
		t, err := parseTensor(m)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", key, i, err)
		}
		ts[i] = t
	}
	if err := ResolveIndices(ts, symbols); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return ts, nil
}

func parseTensor(m map[string]any) (Tensor, error) {
	var t Tensor
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
			return Tensor{}, fmt.Errorf("%w: %s is %T, not a string", ErrLayout, f.key, v)
		}
		*f.dst = s
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{KeyChannels, &t.Channels}, {KeyWidth, &t.Width}, {KeyHeight, &t.Height}, {KeyPlaneStride, &t.PlaneStride}, {KeyRowStride, &t.RowStride}} {
		v, present := m[f.key]
		if !present {
			return Tensor{}, fmt.Errorf("%w: tensor %q has no %s", ErrLayout, t.Name, f.key)
		}
		n, ok := asInt(v)
		if !ok {
			return Tensor{}, fmt.Errorf("%w: tensor %q: %s = %v (%T) is not an integer", ErrLayout, t.Name, f.key, v, v)
		}
		*f.dst = n
	}
	t.ElemSize = 2
	if t.Type == "Float32" {
		t.ElemSize = 4
	}
	return t, t.Validate()
}

// ResolveIndices sets each tensor's Index: the position of its Symbol in
// symbols, else of its Name, else its own position in ts. It fails if two
// tensors end up with the same index.
func ResolveIndices(ts []Tensor, symbols []string) error {
	pos := make(map[string]int, len(symbols))
	for i, s := range symbols {
		if _, dup := pos[s]; !dup {
			pos[s] = i
		}
	}
	seen := make(map[int]int, len(ts))
	for i := range ts {
		idx, ok := -1, false
		if ts[i].Symbol != "" {
			idx, ok = pos[ts[i].Symbol]
		}
		if !ok && ts[i].Name != "" {
			idx, ok = pos[ts[i].Name]
		}
		if !ok {
			idx = i
		}
		if j, dup := seen[idx]; dup {
			return fmt.Errorf("%w: tensors %d (%q) and %d (%q) both resolve to symbol index %d", ErrLayout, j, ts[j].Name, i, ts[i].Name, idx)
		}
		seen[idx] = i
		ts[i].Index = idx
	}
	return nil
}

// Port pairs a program input or output with the tensor the compiled model
// reports for it.
type Port struct {
	Spec   lower.IOSpec
	Tensor Tensor
}

// Bind pairs the program's inputs and outputs, in signature order, with the
// layout's tensors and checks that they agree: Channels, Height and Width
// must equal the [1, C, 1, S] device shape's C, 1 and S.
//
// A port is matched to the tensor whose Name, else whose Symbol, equals the
// MIL name. Ports left unmatched are paired in alphabetical order of their
// MIL names with the unmatched tensors in order of symbol index (the order
// the public ObjC project observed; see ParseLayout).
func Bind(l *Layout, p *lower.Program) (inputs, outputs []Port, err error) {
	if l == nil || p == nil {
		return nil, nil, fmt.Errorf("%w: nil layout or program", ErrLayout)
	}
	if inputs, err = bindPorts("input", p.Inputs, l.Inputs); err != nil {
		return nil, nil, err
	}
	if outputs, err = bindPorts("output", p.Outputs, l.Outputs); err != nil {
		return nil, nil, err
	}
	return inputs, outputs, nil
}

func bindPorts(kind string, specs []lower.IOSpec, ts []Tensor) ([]Port, error) {
	if len(specs) != len(ts) {
		return nil, fmt.Errorf("%w: program has %d %ss, compiled model reports %d", ErrLayout, len(specs), kind, len(ts))
	}
	ports := make([]Port, len(specs))
	used := make([]bool, len(ts))
	var unmatched []int // spec indices
	for i, s := range specs {
		ports[i].Spec = s
		j := findTensor(ts, used, s.Name)
		if j < 0 {
			unmatched = append(unmatched, i)
			continue
		}
		used[j] = true
		ports[i].Tensor = ts[j]
	}
	if len(unmatched) > 0 {
		sort.SliceStable(unmatched, func(a, b int) bool { return specs[unmatched[a]].Name < specs[unmatched[b]].Name })
		var free []int // tensor indices
		for j := range ts {
			if !used[j] {
				free = append(free, j)
			}
		}
		sort.SliceStable(free, func(a, b int) bool { return ts[free[a]].Index < ts[free[b]].Index })
		for k, i := range unmatched {
			ports[i].Tensor = ts[free[k]]
		}
	}
	for _, pt := range ports {
		if err := pt.check(kind); err != nil {
			return nil, err
		}
	}
	return ports, nil
}

func findTensor(ts []Tensor, used []bool, name string) int {
	if name == "" {
		return -1
	}
	for j, t := range ts {
		if !used[j] && t.Name == name {
			return j
		}
	}
	for j, t := range ts {
		if !used[j] && t.Symbol == name {
			return j
		}
	}
	return -1
}

// check verifies that the port's spec and tensor agree, so that Pack and
// Unpack index within bounds.
func (p Port) check(kind string) error {
	if err := p.Tensor.Validate(); err != nil {
		return fmt.Errorf("%s %q: %w", kind, p.Spec.Name, err)
	}
	ds := p.Spec.DeviceShape
	if len(ds) != 4 || ds[0] != 1 || ds[2] != 1 || ds[1] <= 0 || ds[3] <= 0 {
		return fmt.Errorf("%w: %s %q: device shape %v is not [1, C, 1, S]", ErrLayout, kind, p.Spec.Name, ds)
	}
	t := p.Tensor
	if t.Channels != ds[1] || t.Height != ds[2] || t.Width != ds[3] {
		return fmt.Errorf("%w: %s %q: model reports C=%d H=%d W=%d (%q), program declares %v", ErrLayout, kind, p.Spec.Name, t.Channels, t.Height, t.Width, t.Name, ds)
	}
	n := p.Spec.RowLen()
	if n <= 0 || n > t.Width || p.Spec.Size() != ds[1]*n {
		return fmt.Errorf("%w: %s %q: logical shape %v does not fit device shape %v", ErrLayout, kind, p.Spec.Name, p.Spec.Shape, ds)
	}
	return nil
}

// Pack writes the logical row-major input src into the surface bytes dst at
// the tensor's strides, zeroing row padding and the gaps between rows and
// planes. Values are rounded to fp16 (nearest even); a value whose rounding
// is ±Inf or NaN is an error wrapping shim.ErrRange that names the input and
// the element. Float32 tensors are written as float32, with the same check.
func (p Port) Pack(dst []byte, src []float32) error {
	if err := p.check("input"); err != nil {
		return err
	}
	if len(src) != p.Spec.Size() {
		return fmt.Errorf("ane: input %q has %d values, want %d (shape %v): %w", p.Spec.Name, len(src), p.Spec.Size(), p.Spec.Shape, shim.ErrShape)
	}
	t := p.Tensor
	if len(dst) < t.Bytes() {
		return fmt.Errorf("%w: input %q: surface has %d bytes, tensor needs %d", ErrLayout, p.Spec.Name, len(dst), t.Bytes())
	}
	n := p.Spec.RowLen()
	for c := range t.Channels {
		plane := dst[c*t.PlaneStride : (c+1)*t.PlaneStride]
		for h := range t.Height {
			row := plane[h*t.RowStride : (h+1)*t.RowStride]
			r := c*t.Height + h
			vals := src[r*n : (r+1)*n]
			for w, x := range vals {
				hb := fp16.FromFloat32(x)
				if hb.IsInf() || hb.IsNaN() {
					return fmt.Errorf("ane: input %q element %d = %v does not fit fp16 (|x| rounds past %g, or NaN): %w", p.Spec.Name, r*n+w, x, fp16.MaxValue, shim.ErrRange)
				}
				if t.ElemSize == 4 {
					binary.LittleEndian.PutUint32(row[4*w:], math.Float32bits(x))
				} else {
					binary.LittleEndian.PutUint16(row[2*w:], uint16(hb))
				}
			}
			clear(row[n*t.ElemSize:])
		}
		clear(plane[t.Height*t.RowStride:])
	}
	return nil
}

// Unpack reads the output surface bytes src, laid out at the tensor's
// strides, into the logical row-major dst. The engine saturates overflow to
// ±Inf silently (ANE_FACTS §5); an Inf or NaN in the output is an error
// wrapping shim.ErrRange naming the output and the first such element. dst
// is filled in full either way.
func (p Port) Unpack(dst []float32, src []byte) error {
	if err := p.check("output"); err != nil {
		return err
	}
	if len(dst) != p.Spec.Size() {
		return fmt.Errorf("ane: output %q: destination has %d values, want %d: %w", p.Spec.Name, len(dst), p.Spec.Size(), shim.ErrShape)
	}
	t := p.Tensor
	if len(src) < t.Bytes() {
		return fmt.Errorf("%w: output %q: surface has %d bytes, tensor needs %d", ErrLayout, p.Spec.Name, len(src), t.Bytes())
	}
	n := p.Spec.RowLen()
	bad := -1
	for c := range t.Channels {
		for h := range t.Height {
			off := c*t.PlaneStride + h*t.RowStride
			r := c*t.Height + h
			out := dst[r*n : (r+1)*n]
			for w := range out {
				var x float32
				if t.ElemSize == 4 {
					x = math.Float32frombits(binary.LittleEndian.Uint32(src[off+4*w:]))
				} else {
					x = fp16.Bits(binary.LittleEndian.Uint16(src[off+2*w:])).Float32()
				}
				if bad < 0 && (math.IsInf(float64(x), 0) || x != x) {
					bad = r*n + w
				}
				out[w] = x
			}
		}
	}
	if bad >= 0 {
		return fmt.Errorf("ane: output %q element %d is %v: the device overflowed fp16 (or produced NaN): %w", p.Spec.Name, bad, dst[bad], shim.ErrRange)
	}
	return nil
}

// SurfaceSpec holds the IOSurfaceCreate properties for one surface.
type SurfaceSpec struct {
	Width           int    // IOSurfaceWidth: W
	Height          int    // IOSurfaceHeight: C·H
	BytesPerElement int    // IOSurfaceBytesPerElement: 2 or 4
	BytesPerRow     int    // IOSurfaceBytesPerRow: RowStride
	AllocSize       int    // IOSurfaceAllocSize: C·PlaneStride, or more when padded
	PixelFormat     uint32 // IOSurfacePixelFormat: 0
}

// Surface sizes a surface for the tensor as the public Go driver does: one
// surface row per tensor row, Channels·Height rows of RowStride bytes, and
// Channels·PlaneStride bytes in all.
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
	// and padding them all to the largest cured it (ANE_CALLS §7). The cost is
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

// PortTensors returns the tensors of ports, in order.
func PortTensors(ports []Port) []Tensor {
	ts := make([]Tensor, len(ports))
	for i, p := range ports {
		ts[i] = p.Tensor
	}
	return ts
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
