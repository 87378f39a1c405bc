package dataflow

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// MaxRank is the largest tensor rank the graph admits (the ANE's limit).
const MaxRank = 5

// Errors wrapped by the graph builder, Verify and Eval.
var (
	// ErrShape reports operands whose shapes do not fit the op.
	ErrShape = errors.New("dataflow: shape mismatch")
	// ErrInvalid reports a malformed graph: a bad name, a value from another
	// graph, a bad attribute, a missing input or output.
	ErrInvalid = errors.New("dataflow: invalid graph")
)

// DType is the element type of a value.
type DType uint8

// Element types. Device programs compute in Float16; Float32 exists for
// internal casts, Int32 and Bool for attributes and masks.
const (
	Float16 DType = iota + 1
	Float32
	Int32
	Bool
)

// String returns the dtype's MIL spelling ("fp16", "fp32", "int32", "bool").
func (d DType) String() string {
	switch d {
	case Float16:
		return "fp16"
	case Float32:
		return "fp32"
	case Int32:
		return "int32"
	case Bool:
		return "bool"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// Shape is a static tensor shape; rank 0 is a scalar.
type Shape []int

// Rank is the number of dimensions.
func (s Shape) Rank() int { return len(s) }

// Size is the number of elements (1 for a scalar). A count that does not
// fit an int saturates at math.MaxInt instead of wrapping around (no graph
// holds such a shape: Input, Const, every op and Verify refuse it).
func (s Shape) Size() int {
	n, ok := elements(s)
	if !ok {
		return math.MaxInt
	}
	return n
}

// elements is the product of s's dims; ok is false when it does not fit
// an int. A zero dim gives 0 whatever the others are.
func elements(s Shape) (n int, ok bool) {
	if slices.Contains(s, 0) {
		return 0, true
	}
	n = 1
	for _, d := range s {
		if !mulFits(n, d) {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// mulFits reports whether a·b fits an int.
func mulFits(a, b int) bool {
	if a == 0 || b == 0 {
		return true
	}
	p := a * b
	return p/b == a && !(a == -1 && b == math.MinInt) && !(b == -1 && a == math.MinInt)
}

// addFits reports whether a+b fits an int.
func addFits(a, b int) bool {
	return !(b > 0 && a > math.MaxInt-b) && !(b < 0 && a < math.MinInt-b)
}

// Equal reports whether s and t are the same shape.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of s.
func (s Shape) Clone() Shape { return append(Shape(nil), s...) }

// String formats s as "[d0 d1 …]" ("[]" for a scalar), as in error messages.
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Op names an operation. The string is the op's name in messages.
type Op string

// The op set. Each op's meaning is defined by Eval. The elementwise ops
// are declared with their descriptors: the binary ones (OpAdd … OpMinimum)
// in binary.go, the unary ones (OpNeg … OpGelu) in unary.go.
const (
	OpInput      Op = "input"
	OpConst      Op = "const"
	OpMatMul     Op = "matmul"
	OpConv2D     Op = "conv2d"
	OpReduceSum  Op = "reduce_sum"
	OpReduceMean Op = "reduce_mean"
	OpReduceMax  Op = "reduce_max"
	OpSoftmax    Op = "softmax"
	OpLayerNorm  Op = "layer_norm"
	OpReshape    Op = "reshape"
	OpTranspose  Op = "transpose"
	OpConcat     Op = "concat"
	OpSlice      Op = "slice"
	OpPad        Op = "pad"
)

// GeluMode selects gelu's formula, as MIL's gelu mode parameter.
type GeluMode string

// Gelu modes.
const (
	GeluExact   GeluMode = "EXACT"
	GeluTanh    GeluMode = "TANH_APPROXIMATION"
	GeluSigmoid GeluMode = "SIGMOID_APPROXIMATION"
)

// Conv2DOptions are the parameters of Conv2D. Zero values mean the defaults:
// strides and dilations 1, no padding, one group.
type Conv2DOptions struct {
	Strides   [2]int // along H, W
	Pads      [4]int // top, bottom, left, right (zeros)
	Dilations [2]int // along H, W
	Groups    int
}

// Attrs holds the attributes of a node; each op uses the fields its
// builder documents, and the rest stay zero. The builders store attributes
// in normalized form (negative axes resolved, defaults filled in, −1 sizes
// resolved), so a consumer never has to repeat the normalization.
//
// LayerNorm's node reads x, then gamma if HasGamma, then beta if HasBeta:
// Inputs is [x], [x, gamma], [x, beta] or [x, gamma, beta], and only the two
// flags tell the middle cases apart.
type Attrs struct {
	TransposeX, TransposeY bool          // MatMul
	Conv                   Conv2DOptions // Conv2D, with defaults filled in (strides, dilations, groups ≥ 1)
	Axes                   []int         // ReduceSum/Mean/Max, LayerNorm: normalized to [0, rank), ascending, no duplicates; never empty for rank ≥ 1
	KeepDims               bool          // reductions
	Axis                   int           // Softmax, Concat: normalized to [0, rank)
	Perm                   []int         // Transpose: normalized to [0, rank)
	Shape                  Shape         // Reshape: the target shape, −1 resolved
	Begin, Size            []int         // Slice: begin ≥ 0, size ≥ 1 (−1 resolved)
	Pads                   []int         // Pad: before/after for every axis, 2·rank entries
	PadValue               float64       // Pad
	Epsilon                float64       // LayerNorm
	HasGamma, HasBeta      bool          // LayerNorm: which optional operands follow x in Inputs
	Gelu                   GeluMode      // Gelu: never empty (an empty mode is stored as GeluExact)
}

// Node is one operation in a graph. Inputs are the IDs of the nodes it reads.
// Nodes are created in topological order: every input ID is smaller than ID.
type Node struct {
	ID     int
	Op     Op
	Name   string // inputs and consts: the user's name; others: "" or a given name
	Inputs []int
	Shape  Shape
	DType  DType
	Attrs  Attrs
	Data   []float64 // OpConst: the values, row-major, len == Shape.Size()
}

// Output is a named graph output.
type Output struct {
	Name string
	Node int
}

// Value is a handle to a node's result in one graph. The zero Value is
// "none", used for optional operands.
type Value struct {
	g  *Graph
	id int
}

// Graph is a static dataflow graph under construction. Builder methods never
// panic on user mistakes: the first error is recorded (naming the op and the
// shapes involved), later calls return a zero Value and do nothing, and Err,
// Verify and lowering report it.
type Graph struct {
	nodes   []*Node
	inputs  []int
	outputs []Output
	names   map[string]string // input, const and output names → what holds them
	byName  map[string]int    // input and const names → node ID
	err     error
}
