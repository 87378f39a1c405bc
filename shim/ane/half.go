package ane

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// The fp16 surface path (shim.HalfRunner): a shim.Session holds each
// program surface as fp16 encodings in the lowering's layout, row r of
// the surface at r·S. PackHalf and UnpackHalf move those rows to and from
// the engine's IOSurface at the strides the model reports: a copy of bits,
// no conversion and no range check (a float32 surface, which the engine
// may report, is widened exactly). The session checks what the host reads.

// PackHalf writes the port's members, taken from the fp16 surfaces in,
// into the surface bytes dst. specs are the logical inputs of the program
// the caller's surfaces belong to (Executable.Program's): member m's rows
// lie where specs[m.Arg] says, which need not be where the compiled
// program has them (the per-output fallback). Everything else in the
// tensor's bytes is zeroed.
func (p Port) PackHalf(dst []byte, in [][]uint16, specs []lower.IOSpec) error {
	if err := p.check("input"); err != nil {
		return err
	}
	t := p.Tensor
	if len(dst) < t.Bytes() {
		return fmt.Errorf("%w: input %q: surface has %d bytes, tensor needs %d", ErrLayout, p.Name, len(dst), t.Bytes())
	}
	clear(dst[:t.Bytes()])
	for _, m := range p.Members {
		src, err := memberRows(in, specs, m, "input")
		if err != nil {
			return err
		}
		sp := specs[m.Arg]
		n, stride := sp.RowLen(), sp.Stride()
		for r := range sp.Rows() {
			row := dst[t.Offset(m.Row+r, 0, 0):]
			for w, h := range src[r*stride : r*stride+n] {
				if t.ElemSize == 4 {
					binary.LittleEndian.PutUint32(row[4*w:], math.Float32bits(fp16.Bits(h).Float32()))
				} else {
					binary.LittleEndian.PutUint16(row[2*w:], h)
				}
			}
		}
	}
	return nil
}

// UnpackHalf reads the port's members from the surface bytes src into
// their rows of the fp16 surfaces out, placed by specs as PackHalf does. A
// float32 surface's values are rounded to fp16 (nearest even), which keeps
// an overflow an infinity.
func (p Port) UnpackHalf(out [][]uint16, src []byte, specs []lower.IOSpec) error {
	if err := p.check("output"); err != nil {
		return err
	}
	t := p.Tensor
	if len(src) < t.Bytes() {
		return fmt.Errorf("%w: output %q: surface has %d bytes, tensor needs %d", ErrLayout, p.Name, len(src), t.Bytes())
	}
	for _, m := range p.Members {
		dst, err := memberRows(out, specs, m, "output")
		if err != nil {
			return err
		}
		sp := specs[m.Arg]
		n, stride := sp.RowLen(), sp.Stride()
		for r := range sp.Rows() {
			off := t.Offset(m.Row+r, 0, 0)
			row := dst[r*stride : r*stride+n]
			for w := range row {
				if t.ElemSize == 4 {
					row[w] = uint16(fp16.FromFloat32(math.Float32frombits(binary.LittleEndian.Uint32(src[off+4*w:]))))
				} else {
					row[w] = binary.LittleEndian.Uint16(src[off+2*w:])
				}
			}
		}
	}
	return nil
}

// memberRows is member m's rows of its fp16 surface.
func memberRows(surfaces [][]uint16, specs []lower.IOSpec, m Member, kind string) ([]uint16, error) {
	if m.Arg < 0 || m.Arg >= len(specs) {
		return nil, fmt.Errorf("ane: %s %q is argument %d of %d: %w", kind, m.Spec.Name, m.Arg, len(specs), shim.ErrShape)
	}
	s := specs[m.Arg]
	if s.Surface < 0 || s.Surface >= len(surfaces) {
		return nil, fmt.Errorf("ane: %s %q lies on surface %d of %d given: %w", kind, s.Name, s.Surface, len(surfaces), shim.ErrShape)
	}
	off, size := s.Channel*s.Stride(), s.DeviceSize()
	if off+size > len(surfaces[s.Surface]) {
		return nil, fmt.Errorf("ane: %s %q needs elements %d..%d of surface %d, which has %d: %w", kind, s.Name, off, off+size-1, s.Surface, len(surfaces[s.Surface]), shim.ErrShape)
	}
	return surfaces[s.Surface][off : off+size], nil
}
