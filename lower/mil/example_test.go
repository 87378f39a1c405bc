package mil_test

import (
	"fmt"

	"github.com/anemone-go/anemone/lower/mil"
)

func ExampleParse() {
	src := `program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 4]> x) {
        fp16 s = const()[name = string("s"), val = fp16(0.125)];
        tensor<fp16, [1, 4]> y = mul(x = x, y = s)[name = string("y")];
    } -> (y);
}
`
	p, err := mil.Parse([]byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := p.Check(); err != nil {
		fmt.Println(err)
		return
	}
	for _, op := range p.Functions[0].Ops {
		fmt.Println(op.Pos, op.Kind, op.Name())
	}
	fmt.Println(p.Functions[0].Ops[0].Attr("val"))

	// A syntax error names line and column.
	_, err = mil.Parse([]byte("program(1.3)\n{\n    func main<ios18>( {\n"))
	fmt.Println(err)
	// Output:
	// 4:9 const s
	// 5:9 mul y
	// fp16(0x1p-3)
	// mil: 3:23: expected type, found '{'
}

func ExamplePrint() {
	x := mil.TensorType("fp16", 1, 2)
	p := &mil.Program{
		Version: "1.3",
		Functions: []*mil.Function{{
			Name:   "main",
			Opset:  "ios18",
			Inputs: []mil.Var{{Type: x, Name: "x"}},
			Ops: []*mil.Op{
				{
					Outputs: []mil.Var{{Type: mil.TensorType("int32", 2), Name: "p"}},
					Kind:    "const",
					Attrs:   []mil.Arg{{Name: "name", Value: mil.String("p")}, {Name: "val", Value: mil.Int32s(1, 0)}},
				},
				{
					Outputs: []mil.Var{{Type: mil.TensorType("fp16", 2, 1), Name: "y"}},
					Kind:    "transpose",
					Args:    []mil.Arg{{Name: "perm", Value: &mil.Ref{Name: "p"}}, {Name: "x", Value: &mil.Ref{Name: "x"}}},
					Attrs:   []mil.Arg{{Name: "name", Value: mil.String("y")}},
				},
			},
			Outputs: []string{"y"},
		}},
	}
	fmt.Print(string(mil.Print(p)))
	// Output:
	// program(1.3)
	// {
	//     func main<ios18>(tensor<fp16, [1, 2]> x) {
	//         tensor<int32, [2]> p = const()[name = string("p"), val = tensor<int32, [2]>([1, 0])];
	//         tensor<fp16, [2, 1]> y = transpose(perm = p, x = x)[name = string("y")];
	//     } -> (y);
	// }
}

func ExampleBlobWriter() {
	w := mil.NewBlobWriter()
	a := w.Add(mil.BlobFP16, mil.FP16Data([]float64{1, 2, 3}))
	b := w.Add(mil.BlobFP16, mil.FP16Data([]float64{0.5}))
	fmt.Println("offsets:", a, b, "file bytes:", w.Len())

	// The offset goes into the MIL text.
	fmt.Println(mil.BlobTensor(mil.TensorType("fp16", 3), "@model_path/weights/weight.bin", a))

	f, err := mil.ReadBlob(w.Bytes())
	if err != nil {
		fmt.Println(err)
		return
	}
	e, _ := f.At(b)
	fmt.Printf("%s % x\n", e.DType, e.Data)
	// Output:
	// offsets: 64 192 file bytes: 320
	// tensor<fp16, [3]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))
	// fp16 00 38
}

func ExampleFormat() {
	out, err := mil.Format([]byte(`program(1.0) { func main<ios16>(tensor<fp32, [2]> x) {
  tensor<fp32, [2]> y = add(x=x, y=tensor<fp32, [2]>([1.5, -2]))[name=tensor<string, []>("y")]; } -> (y); }`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	// Output:
	// program(1.0)
	// {
	//     func main<ios16>(tensor<fp32, [2]> x) {
	//         tensor<fp32, [2]> y = add(x = x, y = tensor<fp32, [2]>([0x1.8p+0, -0x1p+1]))[name = tensor<string, []>("y")];
	//     } -> (y);
	// }
}
