package lower

// WeightPath is the one weight file every program uses (ANE_FACTS §3: one
// file for all consts).
const WeightPath = "@model_path/weights/weight.bin"

// Program is a lowered ANE program: what a device compiles.
type Program struct {
	MIL     []byte   // the MIL text
	Blob    []byte   // the weight file's bytes; empty when the program has no weights
	Inputs  []IOSpec // in the graph's input order
	Outputs []IOSpec // in the graph's output order
	Target  string   // the target it was lowered for
	Hash    string   // hex SHA-256 of the MIL text and the blob
}

// IOSpec describes one program input or output: its logical row-major shape,
// as the graph states it, and the padded [1, C, 1, S] shape the device sees.
//
// A logical tensor of shape [d0, …, dk] is laid out on the device as C = d0·…·d(k−1)
// rows of length dk, each row padded with zeros to S = RowLength(dk); a scalar
// is one row of one element.
type IOSpec struct {
	Name        string
	Shape       []int // logical
	DeviceShape []int // [1, C, 1, S]
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

// Pack copies logical row-major src into the padded device layout dst
// (len DeviceSize), writing zeros into the padding.
func (s IOSpec) Pack(dst, src []float32) {
	n, stride := s.RowLen(), s.Stride()
	for r := 0; r < s.Rows(); r++ {
		row := dst[r*stride : (r+1)*stride]
		copy(row, src[r*n:(r+1)*n])
		clear(row[n:])
	}
}

// Unpack copies the device layout src into logical row-major dst (len Size).
func (s IOSpec) Unpack(dst, src []float32) {
	n, stride := s.RowLen(), s.Stride()
	for r := 0; r < s.Rows(); r++ {
		copy(dst[r*n:(r+1)*n], src[r*stride:r*stride+n])
	}
}
