package mil

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// briefProgram is the layout the printer must produce, byte for byte.
const briefProgram = `program(1.3)
[buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"}})]
{
    func main<ios18>(tensor<fp16, [1, 64, 1, 64]> x, tensor<fp16, [1, 1, 1, 32]> z) {
        tensor<int32, [4]> pm = const()[name = string("pm"), val = tensor<int32, [4]>([0, 1, 3, 2])];
        tensor<fp16, [64, 64, 1, 1]> W = const()[name = string("W"), val = tensor<fp16, [64, 64, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
        tensor<fp16, [1, 64, 1, 64]> y = add(x = x, y = x)[name = string("y")];
    } -> (y);
}
`

func TestPrintBuiltProgram(t *testing.T) {
	x := TensorType("fp16", 1, 64, 1, 64)
	w := TensorType("fp16", 64, 64, 1, 1)
	p := &Program{
		Version: "1.3",
		BuildInfo: []KV{
			{Key: "coremlc-component-MIL", Value: "3510.2.1"},
			{Key: "coremlc-version", Value: "3505.4.1"},
		},
		Functions: []*Function{{
			Name:  "main",
			Opset: "ios18",
			Inputs: []Var{
				{Type: x, Name: "x"},
				{Type: TensorType("fp16", 1, 1, 1, 32), Name: "z"},
			},
			Ops: []*Op{
				{
					Outputs: []Var{{Type: TensorType("int32", 4), Name: "pm"}},
					Kind:    "const",
					Attrs:   []Arg{{Name: "name", Value: String("pm")}, {Name: "val", Value: Int32s(0, 1, 3, 2)}},
				},
				{
					Outputs: []Var{{Type: w, Name: "W"}},
					Kind:    "const",
					Attrs: []Arg{
						{Name: "name", Value: String("W")},
						{Name: "val", Value: BlobTensor(w, "@model_path/weights/weight.bin", 64)},
					},
				},
				{
					Outputs: []Var{{Type: x, Name: "y"}},
					Kind:    "add",
					Args:    []Arg{{Name: "x", Value: &Ref{Name: "x"}}, {Name: "y", Value: &Ref{Name: "x"}}},
					Attrs:   []Arg{{Name: "name", Value: String("y")}},
				},
			},
			Outputs: []string{"y"},
		}},
	}
	require.Equal(t, briefProgram, string(Print(p)))
	require.Equal(t, briefProgram, p.String())
	require.NoError(t, p.Check())

	// Without buildInfo the line is left out.
	p.BuildInfo = nil
	require.Equal(t, "program(1.3)\n{\n", p.String()[:len("program(1.3)\n{\n")])
}

func TestAppendHexFloat(t *testing.T) {
	tests := []struct {
		x    float64
		want string
	}{
		{0.125, "0x1p-3"},
		{0, "0x0p+0"},
		{math.Copysign(0, -1), "-0x0p+0"},
		{0x1.5p-17, "0x1.5p-17"},
		{-3, "-0x1.8p+1"},
		{1, "0x1p+0"},
		{2, "0x1p+1"},
		{1024, "0x1p+10"},
		{65504, "0x1.ffcp+15"},
		{0x1p-24, "0x1p-24"},
		{0x1p-149, "0x1p-149"},
		{0x1p-1074, "0x1p-1074"},
		{float64(float32(0x1.5798eep-27)), "0x1.5798eep-27"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
		{math.NaN(), "nan"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, string(AppendHexFloat(nil, tt.x)), "%v", tt.x)
		// Every spelling reads back as the same value.
		got, ok := parseFloat(tt.want)
		require.True(t, ok, tt.want)
		if math.IsNaN(tt.x) {
			require.True(t, math.IsNaN(got))
		} else {
			require.Equal(t, math.Float64bits(tt.x), math.Float64bits(got), tt.want)
		}
	}
}

func TestPrintLiterals(t *testing.T) {
	tests := []struct {
		lit  *Literal
		want string
	}{
		{String(`a"b\c`), `string("a\"b\\c")`},
		{String("l1\nl2\t\r"), `string("l1\nl2\t\r")`},
		{Bool(true), "bool(true)"},
		{Int32(-1), "int32(-1)"},
		{FP16(0.125), "fp16(0x1p-3)"},
		{&Literal{Type: Scalar("uint64"), Ints: []int64{-1}}, "uint64(18446744073709551615)"},
		{&Literal{Type: Scalar("fp32"), Floats: []float64{math.Inf(-1)}}, "fp32(-inf)"},
		{&Literal{Type: TensorType("fp16"), Floats: []float64{0x1p-24}}, "tensor<fp16, []>(0x1p-24)"},
		{&Literal{Type: TensorType("string"), Strings: []string{"x"}}, `tensor<string, []>("x")`},
		{&Literal{Type: TensorType("fp16", 2), Floats: []float64{1, -3}}, "tensor<fp16, [2]>([0x1p+0, -0x1.8p+1])"},
		{&Literal{Type: TensorType("bool", 0)}, "tensor<bool, [0]>([])"},
		{&Literal{Type: TensorType("bool", 2), Bools: []bool{true, false}}, "tensor<bool, [2]>([true, false])"},
		{&Literal{Type: TensorType("string", 2), Strings: []string{"a", ""}}, `tensor<string, [2]>(["a", ""])`},
		// A value slice that does not match the dtype is still printed.
		{&Literal{Type: TensorType("fp16", 2), Ints: []int64{1, 2}}, "tensor<fp16, [2]>([1, 2])"},
		{BlobTensor(TensorType("uint1", 32, 32), "w.bin", 576), `tensor<uint1, [32, 32]>(BLOBFILE(path = string("w.bin"), offset = uint64(576)))`},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.lit.String())
	}
}

func TestPrintMultiOutputAndTuple(t *testing.T) {
	ty := TensorType("fp16", 1, 2)
	op := &Op{
		Outputs: []Var{{Type: ty, Name: "a"}, {Type: ty, Name: "b"}},
		Kind:    "split",
		Args:    []Arg{{Name: "x", Value: &Ref{Name: "x"}}, {Name: "v", Value: &Tuple{Elems: []Expr{&Ref{Name: "p"}, &Tuple{}, Int32(3)}}}},
	}
	require.Equal(t, "tensor<fp16, [1, 2]> a, tensor<fp16, [1, 2]> b = split(x = x, v = (p, (), int32(3)));", op.String())
	// A nil value does not make the printer panic.
	op.Args = append(op.Args, Arg{Name: "n"})
	require.Contains(t, op.String(), "n = <nil>")
	require.Nil(t, Print(nil))
}
