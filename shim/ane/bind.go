package ane

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// Port is one surface of a request: an input or output of the MIL
// function, the tensor the compiled model reports for it, and the logical
// program inputs or outputs packed into it as rows.
type Port struct {
	Name    string   // the MIL name of the function input or output
	Shape   []int    // [1, C, 1, S] as the program declares it
	Tensor  Tensor   // as the compiled model reports it
	Members []Member // the logical tensors it carries
}

// Member is one logical program input or output inside a port's surface.
type Member struct {
	Spec lower.IOSpec
	Arg  int // its position in Program.Inputs or Program.Outputs
	Row  int // the surface row (channel) its first row sits at
}

// Binding is the program's surfaces paired with the compiled model's
// tensors, and what was assumed to pair them.
type Binding struct {
	Inputs, Outputs []Port
	// Warnings lists every assumption made on the way: a tensor without a
	// Type taken for fp16, a lone surface bound by position although its
	// reported name differs.
	Warnings []string
}

// Bind pairs the program's surfaces with the layout's tensors and checks
// that they agree: a [1, C, 1, S] surface needs a tensor of C channels, one
// row each, of width S; every member's rows must fit inside it.
//
// A surface is matched to the one tensor whose Name, else whose Symbol,
// equals its MIL name after trimming OutputSuffix. When a direction has
// exactly one surface and one tensor and the names differ (a logged M3
// dictionary names a lone input "a_input0"), there is only one way to pair
// them: they are bound by position, with a warning. With several surfaces,
// a surface no tensor matches, or that two tensors match, is an error
// wrapping ErrLayout: the order of the live lists and the alphabetical
// order of names are not evidence of which tensor is which. The layout's
// own warnings come first in the result's.
func Bind(l *Layout, p *lower.Program) (Binding, error) {
	if l == nil || p == nil {
		return Binding{}, fmt.Errorf("%w: nil layout or program", ErrLayout)
	}
	inPlan, outPlan, err := programPorts(p)
	if err != nil {
		return Binding{}, err
	}
	b := Binding{Warnings: slices.Clone(l.Warnings)}
	if b.Inputs, err = bindPorts("input", inPlan, l.Inputs, &b.Warnings); err != nil {
		return Binding{}, err
	}
	if b.Outputs, err = bindPorts("output", outPlan, l.Outputs, &b.Warnings); err != nil {
		return Binding{}, err
	}
	return b, nil
}

func bindPorts(kind string, ports []Port, ts []Tensor, warnings *[]string) ([]Port, error) {
	if len(ports) != len(ts) {
		return nil, fmt.Errorf("%w: program has %d %s surfaces, compiled model reports %d", ErrLayout, len(ports), kind, len(ts))
	}
	used := make([]int, len(ts)) // 1 + the port index, or 0
	for i := range ports {
		j, err := findTensor(ts, ports[i].Name)
		if err != nil {
			if len(ports) != 1 {
				return nil, within(fmt.Sprintf("%s %q", kind, ports[i].Name), err)
			}
			j = 0
			*warnings = append(*warnings, fmt.Sprintf("%s surface %q bound by position to the model's only %s tensor, reported as name %q, symbol %q", kind, ports[i].Name, kind, ts[0].Name, ts[0].Symbol))
		}
		if used[j] != 0 {
			return nil, fmt.Errorf("%w: %ss %q and %q both match tensor %q", ErrLayout, kind, ports[used[j]-1].Name, ports[i].Name, ts[j].Name)
		}
		used[j] = i + 1
		ports[i].Tensor = ts[j]
		if err := ports[i].check(kind); err != nil {
			return nil, err
		}
	}
	return ports, nil
}

func findTensor(ts []Tensor, name string) (int, error) {
	if name == "" {
		return -1, fmt.Errorf("%w: no MIL name to match", ErrLayout)
	}
	for _, field := range []func(Tensor) string{
		func(t Tensor) string { return t.Name },
		func(t Tensor) string { return t.Symbol },
	} {
		found := -1
		for j, t := range ts {
			if f := field(t); f != "" && BaseName(f) == name {
				if found >= 0 {
					return -1, fmt.Errorf("%w: tensors %q and %q both match", ErrLayout, ts[found].Name, t.Name)
				}
				found = j
			}
		}
		if found >= 0 {
			return found, nil
		}
	}
	names := make([]string, len(ts))
	for j, t := range ts {
		names[j] = t.Name
	}
	return -1, fmt.Errorf("%w: no tensor of the compiled model is named %q (it reports %q)", ErrLayout, name, names)
}

// check verifies that the port's shape, tensor and members agree, so that
// Pack and Unpack index within bounds.
func (p Port) check(kind string) error {
	if err := p.Tensor.Validate(); err != nil {
		return within(fmt.Sprintf("%s %q", kind, p.Name), err)
	}
	if err := checkShape(kind, p); err != nil {
		return fmt.Errorf("%w: %v", ErrLayout, err)
	}
	t, ds := p.Tensor, p.Shape
	if t.Channels != ds[1] || t.Height != ds[2] || t.Width != ds[3] {
		return fmt.Errorf("%w: %s %q: model reports C=%d H=%d W=%d (%q), program declares %v", ErrLayout, kind, p.Name, t.Channels, t.Height, t.Width, t.Name, ds)
	}
	return nil
}

// checkShape checks a port as the program declares it: a [1, C, 1, S]
// surface, at least one member, each member a [1, C_i, 1, S] band of rows
// inside it with its logical shape fitting the band, and no two input
// bands sharing a row (they would overwrite each other; outputs only read,
// so they may share). Its errors wrap no sentinel; callers add one.
func checkShape(kind string, p Port) error {
	ds := p.Shape
	if len(ds) != 4 || ds[0] != 1 || ds[2] != 1 || ds[1] <= 0 || ds[3] <= 0 {
		return fmt.Errorf("%s %q: surface shape %v is not [1, C, 1, S]", kind, p.Name, ds)
	}
	if len(p.Members) == 0 {
		return fmt.Errorf("%s surface %q carries no program %s", kind, p.Name, kind)
	}
	rows := make([]int, ds[1]) // 1 + the member writing each row, or 0
	for k, m := range p.Members {
		ms := m.Spec.DeviceShape
		if len(ms) != 4 || ms[0] != 1 || ms[2] != 1 || ms[1] <= 0 || ms[3] != ds[3] {
			return fmt.Errorf("%s %q: %q has device shape %v, not [1, C, 1, %d]", kind, p.Name, m.Spec.Name, ms, ds[3])
		}
		if m.Row < 0 || m.Row+ms[1] > ds[1] {
			return fmt.Errorf("%s %q: %q occupies rows %d..%d of a surface of %d", kind, p.Name, m.Spec.Name, m.Row, m.Row+ms[1]-1, ds[1])
		}
		for _, d := range m.Spec.Shape {
			if d <= 0 {
				return fmt.Errorf("%s %q: logical shape %v of %q has a non-positive dimension", kind, p.Name, m.Spec.Shape, m.Spec.Name)
			}
		}
		n := m.Spec.RowLen()
		if n > ds[3] || m.Spec.Size() != ms[1]*n {
			return fmt.Errorf("%s %q: logical shape %v of %q does not fit device shape %v", kind, p.Name, m.Spec.Shape, m.Spec.Name, ms)
		}
		if kind == "input" {
			for r := m.Row; r < m.Row+ms[1]; r++ {
				if rows[r] != 0 {
					return fmt.Errorf("%s %q: %q and %q both occupy row %d", kind, p.Name, p.Members[rows[r]-1].Spec.Name, m.Spec.Name, r)
				}
				rows[r] = k + 1
			}
		}
	}
	return nil
}

// Pack writes the surface's program inputs, taken from args by each
// member's Arg, into the surface bytes dst at the tensor's strides: member
// row r goes to surface channel Row + r. Everything else in the first
// Tensor.Bytes() bytes (row padding, unused rows, gaps between planes) is
// zeroed. Values are rounded to fp16 (nearest even); a value whose rounding
// is ±Inf or NaN is an error wrapping shim.ErrRange that names the input and
// the element. Float32 tensors are written as float32, with the same check.
func (p Port) Pack(dst []byte, args [][]float32) error {
	if err := p.check("input"); err != nil {
		return err
	}
	for _, m := range p.Members {
		if m.Arg < 0 || m.Arg >= len(args) {
			return fmt.Errorf("ane: input %q is argument %d of %d given: %w", m.Spec.Name, m.Arg, len(args), shim.ErrShape)
		}
		if src := args[m.Arg]; len(src) != m.Spec.Size() {
			return fmt.Errorf("ane: input %q has %d values, want %d (shape %v): %w", m.Spec.Name, len(src), m.Spec.Size(), m.Spec.Shape, shim.ErrShape)
		}
	}
	t := p.Tensor
	if len(dst) < t.Bytes() {
		return fmt.Errorf("%w: input %q: surface has %d bytes, tensor needs %d", ErrLayout, p.Name, len(dst), t.Bytes())
	}
	clear(dst[:t.Bytes()])
	for _, m := range p.Members {
		src := args[m.Arg]
		n := m.Spec.RowLen()
		for r := range m.Spec.DeviceShape[1] {
			row := dst[t.Offset(m.Row+r, 0, 0):]
			for w, x := range src[r*n : (r+1)*n] {
				hb := fp16.FromFloat32(x)
				if hb.IsInf() || hb.IsNaN() {
					return fmt.Errorf("ane: input %q element %d = %v does not fit fp16 (|x| rounds past %g, or NaN): %w", m.Spec.Name, r*n+w, x, fp16.MaxValue, shim.ErrRange)
				}
				if t.ElemSize == 4 {
					binary.LittleEndian.PutUint32(row[4*w:], math.Float32bits(x))
				} else {
					binary.LittleEndian.PutUint16(row[2*w:], uint16(hb))
				}
			}
		}
	}
	return nil
}

// Unpack reads the surface bytes src, laid out at the tensor's strides,
// into each member's slot of outs (by Arg), in its logical row-major shape.
// The engine saturates overflow to ±Inf silently; an Inf or
// NaN in an output is an error wrapping shim.ErrRange naming the output and
// its first such element. Every member's slot is filled in full either way.
func (p Port) Unpack(outs [][]float32, src []byte) error {
	if err := p.check("output"); err != nil {
		return err
	}
	for _, m := range p.Members {
		if m.Arg < 0 || m.Arg >= len(outs) || len(outs[m.Arg]) != m.Spec.Size() {
			return fmt.Errorf("ane: output %q: no destination of %d values at position %d: %w", m.Spec.Name, m.Spec.Size(), m.Arg, shim.ErrShape)
		}
	}
	t := p.Tensor
	if len(src) < t.Bytes() {
		return fmt.Errorf("%w: output %q: surface has %d bytes, tensor needs %d", ErrLayout, p.Name, len(src), t.Bytes())
	}
	var firstBad error
	for _, m := range p.Members {
		dst := outs[m.Arg]
		n := m.Spec.RowLen()
		bad := -1
		for r := range m.Spec.DeviceShape[1] {
			off := t.Offset(m.Row+r, 0, 0)
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
		if bad >= 0 && firstBad == nil {
			firstBad = fmt.Errorf("ane: output %q element %d is %v: the device overflowed fp16 (or produced NaN): %w", m.Spec.Name, bad, dst[bad], shim.ErrRange)
		}
	}
	return firstBad
}

// RequestOrder returns the indices of ports in the order of the request's
// arrays: by symbol position, each port's Tensor.Index, which must be
// exactly 0..n−1, so that position i holds the surface whose index is i
// (what every public driver with hardware results passes). Anything else is
// an error wrapping ErrLayout.
func RequestOrder(ports []Port) ([]int, error) {
	order := make([]int, len(ports))
	for i := range order {
		order[i] = -1
	}
	for i, p := range ports {
		k := p.Tensor.Index
		if k < 0 || k >= len(ports) {
			return nil, fmt.Errorf("%w: surface %q has symbol position %d, outside 0..%d", ErrLayout, p.Name, k, len(ports)-1)
		}
		if order[k] >= 0 {
			return nil, fmt.Errorf("%w: surfaces %q and %q both have symbol position %d", ErrLayout, ports[order[k]].Name, p.Name, k)
		}
		order[k] = i
	}
	return order, nil
}

// Reorder returns ports in the given order.
func Reorder(ports []Port, order []int) []Port {
	out := make([]Port, len(order))
	for k, i := range order {
		out[k] = ports[i]
	}
	return out
}

// PortTensors returns the tensors of ports, in order.
func PortTensors(ports []Port) []Tensor {
	ts := make([]Tensor, len(ports))
	for i, p := range ports {
		ts[i] = p.Tensor
	}
	return ts
}

// programPorts lists the program's surfaces (Program.InputSurfaces and
// OutputSurfaces, the MIL function's inputs and outputs), each with the
// logical inputs or outputs whose IOSpec.Surface names it, at row
// IOSpec.Channel. CheckProgram refuses a program without surface lists;
// for tests built by hand, such a program binds one surface per logical
// tensor, named like it.
func programPorts(p *lower.Program) (in, out []Port, err error) {
	if in, err = surfacePorts("input", p.InputSurfaces, p.Inputs); err != nil {
		return nil, nil, err
	}
	if out, err = surfacePorts("output", p.OutputSurfaces, p.Outputs); err != nil {
		return nil, nil, err
	}
	return in, out, nil
}

func surfacePorts(kind string, surfaces []lower.Surface, specs []lower.IOSpec) ([]Port, error) {
	if len(surfaces) == 0 {
		ports := make([]Port, len(specs))
		for i, s := range specs {
			ports[i] = Port{Name: s.Name, Shape: slices.Clone(s.DeviceShape), Members: []Member{{Spec: s, Arg: i}}}
		}
		return ports, nil
	}
	ports := make([]Port, len(surfaces))
	for i, s := range surfaces {
		ports[i] = Port{Name: s.Name, Shape: slices.Clone(s.Shape)}
	}
	for i, s := range specs {
		if s.Surface < 0 || s.Surface >= len(ports) {
			return nil, fmt.Errorf("%w: %s %q names surface %d of %d", ErrProgram, kind, s.Name, s.Surface, len(ports))
		}
		ports[s.Surface].Members = append(ports[s.Surface].Members, Member{Spec: s, Arg: i, Row: s.Channel})
	}
	return ports, nil
}
