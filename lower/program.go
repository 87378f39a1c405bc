package lower

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

// Pack copies logical row-major src into its band of the surface buffer
// dst, writing zeros into the row padding.
func (s IOSpec) Pack(dst, src []float32) {
	dst = s.Band(dst)
	n, stride := s.RowLen(), s.Stride()
	for r := 0; r < s.Rows(); r++ {
		row := dst[r*stride : (r+1)*stride]
		copy(row, src[r*n:(r+1)*n])
		clear(row[n:])
	}
}

// Unpack copies this tensor's band of the surface buffer src into logical
// row-major dst (len Size).
func (s IOSpec) Unpack(dst, src []float32) {
	src = s.Band(src)
	n, stride := s.RowLen(), s.Stride()
	for r := 0; r < s.Rows(); r++ {
		copy(dst[r*n:(r+1)*n], src[r*stride:r*stride+n])
	}
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
