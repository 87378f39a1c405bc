package selftest

import (
	"fmt"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
)

// milBuilder writes a hand-made program through the MIL AST: one input
// surface, one output surface, parameters as named consts.
type milBuilder struct {
	fn   *mil.Function
	blob *mil.BlobWriter
	seq  int
}

func newMIL(opset string) *milBuilder {
	return &milBuilder{fn: &mil.Function{Name: "main", Opset: opset}, blob: mil.NewBlobWriter()}
}

func (b *milBuilder) input(name string, shape ...int) string {
	b.fn.Inputs = append(b.fn.Inputs, mil.Var{Type: mil.TensorType("fp16", shape...), Name: name})
	return name
}

func (b *milBuilder) konst(lit *mil.Literal) string {
	b.seq++
	name := fmt.Sprintf("k%d", b.seq)
	b.fn.Ops = append(b.fn.Ops, &mil.Op{
		Outputs: []mil.Var{{Type: lit.Type, Name: name}},
		Kind:    "const",
		Attrs:   []mil.Arg{{Name: "name", Value: mil.String(name)}, {Name: "val", Value: lit}},
	})
	return name
}

func (b *milBuilder) ints(v ...int) mil.Expr { return &mil.Ref{Name: b.konst(mil.Int32s(v...))} }
func (b *milBuilder) int1(v int) mil.Expr    { return &mil.Ref{Name: b.konst(mil.Int32(v))} }
func (b *milBuilder) bool1(v bool) mil.Expr  { return &mil.Ref{Name: b.konst(mil.Bool(v))} }
func (b *milBuilder) str(v string) mil.Expr  { return &mil.Ref{Name: b.konst(mil.String(v))} }
func (b *milBuilder) half(v float64) mil.Expr {
	return &mil.Ref{Name: b.konst(mil.FP16(v))}
}

func ref(name string) mil.Expr { return &mil.Ref{Name: name} }

// op appends out = kind(args...) of the given shape; args alternate
// keyword and value. An empty out takes a fresh name.
func (b *milBuilder) op(out, kind string, shape []int, args ...any) string {
	if out == "" {
		b.seq++
		out = fmt.Sprintf("v%d", b.seq)
	}
	o := &mil.Op{
		Outputs: []mil.Var{{Type: mil.TensorType("fp16", shape...), Name: out}},
		Kind:    kind,
		Attrs:   []mil.Arg{{Name: "name", Value: mil.String(out)}},
	}
	for i := 0; i+1 < len(args); i += 2 {
		o.Args = append(o.Args, mil.Arg{Name: args[i].(string), Value: args[i+1].(mil.Expr)})
	}
	b.fn.Ops = append(b.fn.Ops, o)
	return out
}

// program finishes the function, returning out, as a lower.Program whose
// one input and one output are each a whole surface of shape [1, C, 1, S]
// (logical shape [C, S]).
func (b *milBuilder) program(t lower.Target, out string, outShape []int) *lower.Program {
	b.fn.Outputs = []string{out}
	var buildInfo = []mil.KV{
		{Key: "coremlc-component-MIL", Value: "3510.2.1"},
		{Key: "coremlc-version", Value: "3505.4.1"},
		{Key: "coremltools-component-milinternal", Value: ""},
		{Key: "coremltools-version", Value: "9.0"},
	}
	p := &lower.Program{
		MIL:    mil.Print(&mil.Program{Version: "1.3", BuildInfo: buildInfo, Functions: []*mil.Function{b.fn}}),
		Target: t.Name,
	}
	if b.blob.Len() > 0 {
		p.Blob = b.blob.Bytes()
	}
	spec := func(name string, shape []int) lower.IOSpec {
		return lower.IOSpec{Name: name, Shape: []int{shape[1], shape[3]}, DeviceShape: append([]int{}, shape...)}
	}
	for _, in := range b.fn.Inputs {
		p.Inputs = append(p.Inputs, spec(in.Name, in.Type.Shape))
		p.InputSurfaces = append(p.InputSurfaces, lower.Surface{Name: in.Name, Shape: append([]int{}, in.Type.Shape...)})
	}
	p.Outputs = []lower.IOSpec{spec(out, outShape)}
	p.OutputSurfaces = []lower.Surface{{Name: out, Shape: append([]int{}, outShape...)}}
	p.Hash = engine.ProgramHash(p.MIL, p.Blob)
	return p
}

// sliceClamp slices a row at last-axis offset 0 and at offset W (one
