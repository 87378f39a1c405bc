package engine

import "fmt"

// WeightPath is the one weight file every program uses (docs/ENGINE.md §2: one
// file for all consts).
const WeightPath = "@model_path/weights/weight.bin"

// Program is a lowered ANE program: what a device compiles.
//
// Inputs and Outputs are the graph's logical tensors; InputSurfaces and
// OutputSurfaces are the buffers the device binds, the inputs and
// outputs of the MIL function main. On a target with PackedIO there is
// one surface each way and every logical tensor occupies a band of its
// rows; otherwise each logical tensor has a surface of its own.
type Program struct {
	MIL            []byte    // the MIL text
	Blob           []byte    // the weight file's bytes; empty when the program has no weights
	Inputs         []IOSpec  // in the graph's input order
	Outputs        []IOSpec  // in the graph's output order
	InputSurfaces  []Surface // main's inputs, in declaration order
	OutputSurfaces []Surface // main's outputs, in return order
	Target         string    // the target it was lowered for
	Hash           string    // hex SHA-256 of the MIL text and the blob
}

// Surface is one device buffer: an input or output of the MIL function,
// of shape [1, C, 1, S] (C rows of S fp16 elements).
type Surface struct {
	Name  string
	Shape []int // [1, C, 1, S]
}

// Rows is C.
func (s Surface) Rows() int { return s.Shape[1] }

// Stride is S, the row length.
func (s Surface) Stride() int { return s.Shape[3] }

// Size is the number of elements, C·S.
func (s Surface) Size() int { return s.Rows() * s.Stride() }

// IOSpec describes one logical program input or output: its row-major
// shape, as the graph states it, and where it lies on the device.
//
// A logical tensor of shape [d0, …, dk] is laid out as C = d0·…·d(k−1)
// rows of length dk, each row padded with zeros to the surface's stride S;
// a scalar is one row of one element. The rows are rows Channel …
// Channel+C−1 of surface Surface.
type IOSpec struct {
	Name        string
	Shape       []int // logical
	DeviceShape []int // [1, C, 1, S]: this tensor's band of its surface
	Surface     int   // index into the program's InputSurfaces or OutputSurfaces
	Channel     int   // the band's first row in that surface
}

// Rows is C, the number of rows on the device.
func (s IOSpec) Rows() int { return s.DeviceShape[1] }

// RowLen is the logical row length (the last logical dimension, 1 for a scalar).
func (s IOSpec) RowLen() int {
	if len(s.Shape) == 0 {
		return 1
	}
	return s.Shape[len(s.Shape)-1]
}

// Stride is S, the padded row length on the device.
func (s IOSpec) Stride() int { return s.DeviceShape[3] }

// Size is the number of logical elements.
func (s IOSpec) Size() int {
	n := 1
	for _, d := range s.Shape {
		n *= d
	}
	return n
}

// DeviceSize is the number of elements the device buffer holds, C·S.
func (s IOSpec) DeviceSize() int { return s.Rows() * s.Stride() }

// Band returns the part of a whole surface buffer that holds this tensor:
// its C rows of S elements, starting at row Channel.
func (s IOSpec) Band(surface []float32) []float32 {
	off := s.Channel * s.Stride()
	return surface[off : off+s.DeviceSize()]
}

// EachRow is the one map between a logical tensor and its band of a
// surface, for every element type a device or host keeps a surface in: it
// calls f with each of s's rows in surface — the row's RowLen logical
// elements, padding excluded — and the logical offset of the row's first
// element in the row-major tensor.
func EachRow[T any](s IOSpec, surface []T, f func(row []T, off int)) {
	off, n, stride := s.Channel*s.Stride(), s.RowLen(), s.Stride()
	for r := range s.Rows() {
		f(surface[off+r*stride:off+r*stride+n], r*n)
	}
}

// Pack copies logical row-major src into its band of the surface buffer
// dst, writing zeros into the row padding.
func (s IOSpec) Pack(dst, src []float32) {
	clear(s.Band(dst))
	EachRow(s, dst, func(row []float32, off int) { copy(row, src[off:]) })
}

// Unpack copies this tensor's band of the surface buffer src into logical
// row-major dst (len Size).
func (s IOSpec) Unpack(dst, src []float32) {
	EachRow(s, src, func(row []float32, off int) { copy(dst[off:], row) })
}

// PackInputs lays logical inputs (one per Inputs entry, in order) out as
// the program's input surfaces.
func (p *Program) PackInputs(inputs [][]float32) [][]float32 {
	out := make([][]float32, len(p.InputSurfaces))
	for i, s := range p.InputSurfaces {
		out[i] = make([]float32, s.Size())
	}
	for i, s := range p.Inputs {
		s.Pack(out[s.Surface], inputs[i])
	}
	return out
}

// UnpackOutputs splits the program's output surfaces into its logical
// outputs.
func (p *Program) UnpackOutputs(surfaces [][]float32) [][]float32 {
	out := make([][]float32, len(p.Outputs))
	for i, s := range p.Outputs {
		out[i] = make([]float32, s.Size())
		s.Unpack(out[i], surfaces[s.Surface])
	}
	return out
}

// CheckLayout validates a program's I/O layout, the part of the contract
// every device relies on before it binds a buffer: both surface lists
// present and of shape [1, C, 1, S]; every logical tensor's DeviceShape
// [1, C, 1, S] with C the product of its dimensions but the last and S at
// least the last; its rows Channel … Channel+C−1 inside its surface, at
// the surface's stride; no two inputs on the same row. Every lowered
// program passes; the error says which tensor does not.
func (p *Program) CheckLayout() error {
	if p == nil {
		return fmt.Errorf("nil program")
	}
	if len(p.InputSurfaces) == 0 || len(p.OutputSurfaces) == 0 {
		return fmt.Errorf("the program lists %d input and %d output surfaces; a device binds surfaces, so a program needs both lists (every lowered program has them)", len(p.InputSurfaces), len(p.OutputSurfaces))
	}
	for _, g := range []struct {
		kind     string
		specs    []IOSpec
		surfaces []Surface
	}{{"input", p.Inputs, p.InputSurfaces}, {"output", p.Outputs, p.OutputSurfaces}} {
		for _, sf := range g.surfaces {
			if d := sf.Shape; len(d) != 4 || d[0] != 1 || d[2] != 1 || d[1] < 1 || d[3] < 1 {
				return fmt.Errorf("%s surface %q: shape %v is not [1, C, 1, S]", g.kind, sf.Name, d)
			}
		}
		used := map[[2]int]string{}
		for _, s := range g.specs {
			if err := s.checkBand(g.kind, g.surfaces); err != nil {
				return err
			}
			if g.kind != "input" {
				continue
			}
			for r := s.Channel; r < s.Channel+s.Rows(); r++ {
				if other, ok := used[[2]int{s.Surface, r}]; ok {
					return fmt.Errorf("inputs %q and %q both occupy row %d of surface %d", other, s.Name, r, s.Surface)
				}
				used[[2]int{s.Surface, r}] = s.Name
			}
		}
	}
	return nil
}

func (s IOSpec) checkBand(kind string, surfaces []Surface) error {
	d := s.DeviceShape
	if len(d) != 4 || d[0] != 1 || d[2] != 1 || d[1] < 1 || d[3] < 1 {
		return fmt.Errorf("%s %q: device shape %v is not [1, C, 1, S]", kind, s.Name, d)
	}
	rows := 1
	for i, x := range s.Shape {
		if x < 1 {
			return fmt.Errorf("%s %q: logical shape %v has a dimension below 1", kind, s.Name, s.Shape)
		}
		if i < len(s.Shape)-1 {
			rows *= x
		}
	}
	if rows != d[1] || s.RowLen() > d[3] {
		return fmt.Errorf("%s %q: logical shape %v does not fit device shape %v", kind, s.Name, s.Shape, d)
	}
	if s.Surface < 0 || s.Surface >= len(surfaces) {
		return fmt.Errorf("%s %q: surface %d, the program has %d", kind, s.Name, s.Surface, len(surfaces))
	}
	sf := surfaces[s.Surface]
	if s.Channel < 0 || s.Channel+d[1] > sf.Rows() || d[3] != sf.Stride() {
		return fmt.Errorf("%s %q: rows %d…%d of stride %d do not lie in surface %q of shape %v", kind, s.Name, s.Channel, s.Channel+d[1]-1, d[3], sf.Name, sf.Shape)
	}
	return nil
}
