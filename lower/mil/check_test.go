package mil

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		src  string
		pos  Pos
		msg  string // "" for a valid program
	}{
		{"valid", body(`tensor<fp16, [2]> y = add(x = x, y = x)[name = string("y")];`), Pos{}, ""},
		{"use before define", body(
			`tensor<fp16, [2]> y = add(x = x, y = w)[name = string("y")];`,
			`tensor<fp16, [2]> w = const()[val = tensor<fp16, [2]>([1, 2])];`),
			Pos{4, 46}, "w used before its definition at 5:27"},
		{"undefined variable", body(`tensor<fp16, [2]> y = add(x = x, y = nope);`), Pos{4, 46}, "undefined variable nope"},
		{"undefined in tuple", body(`tensor<fp16, [4]> y = concat(axis = int32(0), values = (x, (x, q)));`), Pos{4, 72}, "undefined variable q"},
		{"undefined in attribute", body(`tensor<fp16, [2]> y = add(x = x, y = x)[name = nm];`), Pos{4, 56}, "undefined variable nm"},
		{"undefined output", "program(1.3)\n{\n    func main<ios18>(fp16 x) {\n    } -> (x, zz);\n}\n", Pos{4, 14}, "output zz of function main is not defined"},
		{"redefined input", body(`tensor<fp16, [2]> x = add(x = x, y = x);`, `tensor<fp16, [2]> y = add(x = x, y = x);`), Pos{4, 27}, "x redefined (first defined at 3:40)"},
		{"redefined output", body(
			`tensor<fp16, [2]> y = add(x = x, y = x);`,
			`tensor<fp16, [2]> a, tensor<fp16, [2]> y = split(x = x);`),
			Pos{5, 48}, "y redefined (first defined at 4:27)"},
		{"self reference", body(`tensor<fp16, [2]> y = add(x = y, y = x);`), Pos{4, 39}, "y used before its definition at 4:27"},
		{"duplicate function", "program(1.3)\n{\n    func f<ios18>() {\n    } -> ();\n    func f<ios18>() {\n    } -> ();\n}\n", Pos{5, 5}, "function f redefined (first defined at 3:5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.src))
			require.NoError(t, err)
			err = p.Check()
			if tt.msg == "" {
				require.NoError(t, err)
				return
			}
			var ce *CheckError
			require.ErrorAs(t, err, &ce)
			require.ErrorIs(t, err, ErrCheck)
			require.Equal(t, tt.pos, ce.Pos, "%v", err)
			require.Contains(t, ce.Msg, tt.msg)
			require.Equal(t, "mil: "+tt.pos.String()+": "+ce.Msg, err.Error())
		})
	}
}

// TestCheckBuilt checks ASTs built in code, whose nodes carry no positions.
func TestCheckBuilt(t *testing.T) {
	ty := TensorType("fp16", 2)
	prog := func(ops ...*Op) *Program {
		return &Program{Functions: []*Function{{
			Name: "main", Opset: "ios18",
			Inputs:  []Var{{Type: ty, Name: "x"}},
			Ops:     ops,
			Outputs: []string{"x"},
		}}}
	}
	op := func(kind string, out Var, attrs ...Arg) *Op {
		return &Op{Kind: kind, Outputs: []Var{out}, Attrs: attrs, Pos: Pos{7, 3}}
	}
	tests := []struct {
		name string
		p    *Program
		msg  string
	}{
		{"ok", prog(op("const", Var{Type: ty, Name: "c"}, Arg{Name: "val", Value: &Literal{Type: ty, Floats: []float64{1, 2}}})), ""},
		{"short literal", prog(op("const", Var{Type: ty, Name: "c"}, Arg{Name: "val", Value: &Literal{Type: ty, Floats: []float64{1}}})),
			"tensor<fp16, [2]> literal holds 1 values of its dtype, want 2"},
		{"wrong value slice", prog(op("const", Var{Type: ty, Name: "c"}, Arg{Name: "val", Value: &Literal{Type: ty, Ints: []int64{1, 2}}})),
			"literal holds 0 values of its dtype, want 2"},
		{"unknown dtype", prog(op("const", Var{Type: TensorType("float", 2), Name: "c"})), `unknown dtype "float"`},
		{"undefined ref", prog(op("add", Var{Type: ty, Name: "c"}, Arg{Name: "y", Value: &Ref{Name: "nope"}})), "undefined variable nope in add argument y"},
		{"nil value", prog(op("add", Var{Type: ty, Name: "c"}, Arg{Name: "y"})), "nil value in add argument y"},
		{"no outputs", prog(&Op{Kind: "add", Pos: Pos{7, 3}}), "add op without outputs"},
		{"no kind", prog(&Op{Outputs: []Var{{Type: ty, Name: "c"}}, Pos: Pos{7, 3}}), `op kind "" is not an identifier`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Check()
			if tt.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrCheck)
			require.Contains(t, err.Error(), tt.msg)
			require.Contains(t, err.Error(), "mil: 7:3: ", "built nodes report their op's position")
		})
	}
}
