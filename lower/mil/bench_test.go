package mil

import (
	"fmt"
	"testing"
)

// bigProgram builds a program of n statements: a rotation of consts, binary
// ops with scalar consts, transposes and tuple concats.
func bigProgram(n int) *Program {
	ty := TensorType("fp16", 1, 64, 1, 64)
	f := &Function{Name: "main", Opset: "ios18", Inputs: []Var{{Type: ty, Name: "x"}}}
	prev := "x"
	for i := 0; len(f.Ops) < n; i++ {
		name := fmt.Sprintf("v%d", i)
		var op *Op
		switch i % 4 {
		case 0:
			op = &Op{Outputs: []Var{{Type: Scalar("fp16"), Name: name}}, Kind: "const",
				Attrs: []Arg{{Name: "name", Value: String(name)}, {Name: "val", Value: FP16(float64(i) * 0x1p-7)}}}
		case 1:
			op = &Op{Outputs: []Var{{Type: ty, Name: name}}, Kind: "mul",
				Args:  []Arg{{Name: "x", Value: &Ref{Name: prev}}, {Name: "y", Value: &Ref{Name: fmt.Sprintf("v%d", i-1)}}},
				Attrs: []Arg{{Name: "name", Value: String(name)}}}
			prev = name
		case 2:
			op = &Op{Outputs: []Var{{Type: TensorType("int32", 4), Name: name}}, Kind: "const",
				Attrs: []Arg{{Name: "name", Value: String(name)}, {Name: "val", Value: Int32s(0, 1, 3, 2)}}}
		case 3:
			op = &Op{Outputs: []Var{{Type: ty, Name: name}}, Kind: "concat",
				Args: []Arg{{Name: "axis", Value: Int32(1)}, {Name: "interleave", Value: Bool(false)},
					{Name: "values", Value: &Tuple{Elems: []Expr{&Ref{Name: prev}, &Ref{Name: "x"}}}}},
				Attrs: []Arg{{Name: "name", Value: String(name)}}}
			prev = name
		}
		f.Ops = append(f.Ops, op)
	}
	f.Outputs = []string{prev}
	return &Program{Version: "1.3", BuildInfo: []KV{{Key: "coremlc-version", Value: "3505.4.1"}}, Functions: []*Function{f}}
}

func BenchmarkParse(b *testing.B) {
	src := Print(bigProgram(10000))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPrint(b *testing.B) {
	p := bigProgram(10000)
	b.SetBytes(int64(len(Print(p))))
	b.ReportAllocs()
	for b.Loop() {
		Print(p)
	}
}

func TestBigProgramRoundTrip(t *testing.T) {
	p := bigProgram(1000)
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	src := Print(p)
	q, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	if got := Print(q); string(got) != string(src) {
		t.Fatal("round trip changed the program")
	}
}
