package mil

import "fmt"

// Pos is a position in MIL source text, 1-based.
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Program is a MIL program: a version, build information and functions.
type Program struct {
	Version   string // "1.3"
	BuildInfo []KV   // printed in this order
	Functions []*Function
}

// KV is one entry of the buildInfo dictionary.
type KV struct{ Key, Value string }

// Function is one MIL function, such as main<ios18>.
type Function struct {
	Name    string // "main"
	Opset   string // "ios18"
	Inputs  []Var
	Ops     []*Op
	Outputs []string // names of the returned variables, in order
	Pos     Pos      // position of the func keyword, when parsed

	// OutputPos holds the positions of the names in Outputs, when parsed.
	OutputPos []Pos
}

// Type is a MIL value type: a tensor type such as tensor<fp16, [1, 4]>, or a
// scalar type such as bool, string or int32.
type Type struct {
	DType  string // fp16, fp32, int32, bool, string, uint64, ...
	Shape  []int  // dimensions of a tensor; empty for rank 0
	Tensor bool   // written as tensor<DType, [Shape]>; false for the scalar spelling
}

// Scalar returns the scalar type spelled DType alone, as in bool(true).
func Scalar(dtype string) Type { return Type{DType: dtype} }

// TensorType returns tensor<dtype, shape>.
func TensorType(dtype string, shape ...int) Type {
	return Type{DType: dtype, Shape: append([]int(nil), shape...), Tensor: true}
}

// Elements is the number of elements a value of the type holds (1 for scalars).
func (t Type) Elements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Var is a typed, named variable: a function input or an op output.
type Var struct {
	Type Type
	Name string
	Pos  Pos // position of the name, when parsed
}

// Op is one statement: outputs = Kind(Args)[Attrs];
type Op struct {
	Outputs []Var
	Kind    string // "add", "const", "matmul", ...
	Args    []Arg  // keyword arguments, in source order
	Attrs   []Arg  // bracket attributes (name = ..., val = ...), in source order
	Pos     Pos
}

// Arg is a keyword argument or attribute: Name = Value.
type Arg struct {
	Name  string
	Value Expr
}

// Expr is an argument value: a *Ref, a *Tuple or a *Literal.
type Expr interface{ expr() }

// Ref names a variable.
type Ref struct {
	Name string
	Pos  Pos
}

// Tuple is a parenthesized list of values, as in concat's values = (a, b).
type Tuple struct {
	Elems []Expr
	Pos   Pos
}

// Literal is a typed immediate value or a reference into a weight file.
// Exactly one of the value slices is set, according to Type.DType:
// Floats for fp16/fp32/fp64, Ints for the integer types, Bools, Strings;
// or Blob for BLOBFILE(path = ..., offset = ...).
// A scalar holds one element.
type Literal struct {
	Type    Type
	Floats  []float64
	Ints    []int64
	Bools   []bool
	Strings []string
	Blob    *BlobRef
	Pos     Pos
}

// BlobRef points at a blob's metadata record in a weight file.
type BlobRef struct {
	Path   string // "@model_path/weights/weight.bin"
	Offset uint64 // offset of the 64-byte metadata record, not of the data
}

func (*Ref) expr()     {}
func (*Tuple) expr()   {}
func (*Literal) expr() {}

// Arg returns the keyword argument of op named name, or nil.
func (op *Op) Arg(name string) Expr {
	for _, a := range op.Args {
		if a.Name == name {
			return a.Value
		}
	}
	return nil
}

// Attr returns the attribute of op named name, or nil.
func (op *Op) Attr(name string) Expr {
	for _, a := range op.Attrs {
		if a.Name == name {
			return a.Value
		}
	}
	return nil
}

// Name returns the op's name attribute (name = string("...")), or "".
func (op *Op) Name() string {
	if l, ok := op.Attr("name").(*Literal); ok && len(l.Strings) == 1 {
		return l.Strings[0]
	}
	return ""
}

// String returns a string literal: string("s").
func String(s string) *Literal {
	return &Literal{Type: Scalar("string"), Strings: []string{s}}
}

// Bool returns a bool literal: bool(b).
func Bool(b bool) *Literal { return &Literal{Type: Scalar("bool"), Bools: []bool{b}} }

// Int32 returns a scalar int32 literal: int32(v).
func Int32(v int) *Literal { return &Literal{Type: Scalar("int32"), Ints: []int64{int64(v)}} }

// FP16 returns a scalar fp16 literal: fp16(v). v is printed exactly, as a hex float.
func FP16(v float64) *Literal { return &Literal{Type: Scalar("fp16"), Floats: []float64{v}} }

// Int32s returns a rank-1 int32 tensor literal: tensor<int32, [n]>([...]).
func Int32s(vs ...int) *Literal {
	l := &Literal{Type: TensorType("int32", len(vs))}
	for _, v := range vs {
		l.Ints = append(l.Ints, int64(v))
	}
	return l
}

// BlobTensor returns a tensor literal stored in a weight file.
func BlobTensor(t Type, path string, offset uint64) *Literal {
	return &Literal{Type: t, Blob: &BlobRef{Path: path, Offset: offset}}
}
