package mil

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomLiteral returns a literal of a random dtype and shape whose values
// are in range, so that Check accepts it.
func randomLiteral(rng *rand.Rand) *Literal {
	names := []string{"bool", "string", "fp16", "fp32", "fp64", "bf16", "fp8e5m2", "int4", "int8", "int32", "int64", "uint1", "uint3", "uint8", "uint64"}
	dt := names[rng.IntN(len(names))]
	var t Type
	switch rng.IntN(3) {
	case 0:
		t = Scalar(dt)
	case 1:
		t = TensorType(dt) // rank 0
	default:
		shape := make([]int, 1+rng.IntN(3))
		for i := range shape {
			shape[i] = rng.IntN(4)
		}
		t = TensorType(dt, shape...)
	}
	if rng.IntN(8) == 0 {
		return BlobTensor(t, "@model_path/weights/weight.bin", 64*rng.Uint64N(1000))
	}
	l := &Literal{Type: t}
	info := dtypes[dt]
	for range t.Elements() {
		switch info.class {
		case classFloat:
			var x float64
			switch rng.IntN(6) {
			case 0:
				x = math.Inf(1 - 2*rng.IntN(2))
			case 1:
				x = math.Copysign(0, -1)
			case 2:
				x = math.Ldexp(rng.Float64(), rng.IntN(2000)-1000)
			default:
				x = float64(rng.IntN(2001)-1000) / 64
			}
			l.Floats = append(l.Floats, x)
		case classInt, classUint:
			v := int64(rng.Uint64())
			if info.bits < 64 {
				v &= 1<<info.bits - 1
				if info.class == classInt {
					v -= 1 << (info.bits - 1)
				}
			}
			l.Ints = append(l.Ints, v)
		case classBool:
			l.Bools = append(l.Bools, rng.IntN(2) == 0)
		case classString:
			l.Strings = append(l.Strings, string([]byte{byte(rng.IntN(128)), '"', '\\', byte(rng.IntN(256)), '\n'}))
		}
	}
	return l
}

// randomProgram builds a program that passes Check.
func randomProgram(rng *rand.Rand) *Program {
	p := &Program{Version: fmt.Sprintf("1.%d", rng.IntN(4))}
	for i := range rng.IntN(3) {
		p.BuildInfo = append(p.BuildInfo, KV{Key: fmt.Sprintf("k%d", i), Value: string(rune(rng.IntN(0x3000)))})
	}
	for fi := range 1 + rng.IntN(2) {
		f := &Function{Name: fmt.Sprintf("f%d", fi), Opset: "ios18"}
		var defined []string
		for i := range rng.IntN(3) {
			name := fmt.Sprintf("in%d", i)
			f.Inputs = append(f.Inputs, Var{Type: TensorType("fp16", 1, 1+i), Name: name})
			defined = append(defined, name)
		}
		var value func(depth int) Expr
		value = func(depth int) Expr {
			switch r := rng.IntN(5); {
			case r < 2 && len(defined) > 0:
				return &Ref{Name: defined[rng.IntN(len(defined))]}
			case r == 2 && depth < 3:
				t := &Tuple{}
				for range rng.IntN(3) {
					t.Elems = append(t.Elems, value(depth+1))
				}
				return t
			default:
				return randomLiteral(rng)
			}
		}
		for i := range rng.IntN(12) {
			op := &Op{Kind: []string{"const", "add", "split", "concat", "conv"}[rng.IntN(5)]}
			for j := range 1 + rng.IntN(2) {
				op.Outputs = append(op.Outputs, Var{Type: randomLiteral(rng).Type, Name: fmt.Sprintf("v%d_%d", i, j)})
			}
			for j := range rng.IntN(4) {
				op.Args = append(op.Args, Arg{Name: fmt.Sprintf("a%d", j), Value: value(0)})
			}
			for j := range rng.IntN(3) {
				op.Attrs = append(op.Attrs, Arg{Name: fmt.Sprintf("t%d", j), Value: value(0)})
			}
			f.Ops = append(f.Ops, op)
			for _, v := range op.Outputs {
				defined = append(defined, v.Name)
			}
		}
		for range rng.IntN(3) {
			if len(defined) > 0 {
				f.Outputs = append(f.Outputs, defined[rng.IntN(len(defined))])
			}
		}
		p.Functions = append(p.Functions, f)
	}
	return p
}

// clearPos zeroes every position in p, so that a parsed program can be
// compared with a built one.
func clearPos(p *Program) {
	var clearExpr func(e Expr)
	clearExpr = func(e Expr) {
		switch e := e.(type) {
		case *Ref:
			e.Pos = Pos{}
		case *Literal:
			e.Pos = Pos{}
		case *Tuple:
			e.Pos = Pos{}
			for _, x := range e.Elems {
				clearExpr(x)
			}
		}
	}
	for _, f := range p.Functions {
		f.Pos, f.OutputPos = Pos{}, nil
		for i := range f.Inputs {
			f.Inputs[i].Pos = Pos{}
		}
		for _, op := range f.Ops {
			op.Pos = Pos{}
			for i := range op.Outputs {
				op.Outputs[i].Pos = Pos{}
			}
			for _, a := range append(append([]Arg(nil), op.Args...), op.Attrs...) {
				clearExpr(a.Value)
			}
		}
	}
}

// TestRandomProgramsRoundTrip checks the package invariant on built ASTs:
// a program that passes Check prints as text that parses back to the same
// AST, and printing is a fixed point.
func TestRandomProgramsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	n := 300
	if testing.Short() {
		n = 50
	}
	for i := range n {
		p := randomProgram(rng)
		require.NoError(t, p.Check(), "program %d", i)
		src := Print(p)
		q, err := Parse(src)
		require.NoError(t, err, "program %d:\n%s", i, src)
		require.NoError(t, q.Check())
		require.Equal(t, string(src), string(Print(q)), "program %d", i)
		clearPos(q)
		require.Equal(t, p, q, "program %d:\n%s", i, src)
	}
}
