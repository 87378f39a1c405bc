package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/stretchr/testify/require"
)

// u16 is fp16's unit roundoff, 2⁻¹¹; u32 is float32's, 2⁻²⁴.
const (
	u16 = 0x1p-11
	u32 = 0x1p-24
)

// port is a logical program input or output in the tests.
type port struct {
	name  string
	shape []int
}

func in(name string, shape ...int) port { return port{name, shape} }

// deviceShape is the [1, C, 1, S] layout of a logical shape (lower.IOSpec).
func deviceShape(shape []int) []int {
	c, l := 1, 1
	for i, d := range shape {
		if i < len(shape)-1 {
			c *= d
		} else {
			l = d
		}
	}
	return []int{1, c, 1, lower.TargetSim.RowLength(l)}
}

func ioSpec(name string, shape []int) lower.IOSpec {
	return lower.IOSpec{Name: name, Shape: shape, DeviceShape: deviceShape(shape)}
}

func dims(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func ft(shape []int) string { return "tensor<fp16, " + dims(shape) + ">" }

// MIL text builders for the lines of a test body.

// cInts declares a const int32 rank-1 tensor.
func cInts(name string, vs ...int) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	t := fmt.Sprintf("tensor<int32, [%d]>", len(vs))
	return fmt.Sprintf("        %s %s = const()[name = string(%q), val = %s([%s])];\n", t, name, name, t, strings.Join(parts, ", "))
}

func cInt(name string, v int) string {
	return fmt.Sprintf("        int32 %s = const()[name = string(%q), val = int32(%d)];\n", name, name, v)
}

func cBool(name string, v bool) string {
	return fmt.Sprintf("        bool %s = const()[name = string(%q), val = bool(%v)];\n", name, name, v)
}

func cStr(name, v string) string {
	return fmt.Sprintf("        string %s = const()[name = string(%q), val = string(%q)];\n", name, name, v)
}

func cHalf(name string, v float64) string {
	return fmt.Sprintf("        fp16 %s = const()[name = string(%q), val = fp16(%s)];\n", name, name, hex(v))
}

// cHalfs declares an inline fp16 tensor const.
func cHalfs(name string, shape []int, vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = hex(v)
	}
	return fmt.Sprintf("        %s %s = const()[name = string(%q), val = %s([%s])];\n", ft(shape), name, name, ft(shape), strings.Join(parts, ", "))
}

func hex(v float64) string { return fmt.Sprintf("%x", v) }

// stmt writes `tensor<fp16, shape> out = op(args)[name = string("out")];`.
func stmt(out string, shape []int, op string, args ...string) string {
	return fmt.Sprintf("        %s %s = %s(%s)[name = string(%q)];\n", ft(shape), out, op, strings.Join(args, ", "), out)
}

// program wraps body in a main function whose device inputs and outputs are
// named <name>_in and <name>_out. Each input is unpacked (slice off the row
// padding, reshape) into a variable named after the port, and each output
// variable named after its port is packed back, as the lowering does.
func program(ins []port, body string, outs []port) *lower.Program {
	var sb strings.Builder
	sb.WriteString("program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n")
	var decl []string
	p := &lower.Program{Target: "sim"}
	for _, x := range ins {
		s := ioSpec(x.name+"_in", x.shape)
		p.Inputs = append(p.Inputs, s)
		decl = append(decl, ft(s.DeviceShape)+" "+s.Name)
	}
	fmt.Fprintf(&sb, "    func main<ios18>(%s) {\n", strings.Join(decl, ", "))
	for _, x := range ins {
		s := ioSpec(x.name+"_in", x.shape)
		v := s.Name
		rows := []int{1, s.Rows(), 1, s.RowLen()}
		if s.Stride() != s.RowLen() {
			sb.WriteString(cInts(x.name+"_b", 0, 0, 0, 0))
			sb.WriteString(cInts(x.name+"_s", rows...))
			sb.WriteString(stmt(x.name+"_rows", rows, "slice_by_size", "begin = "+x.name+"_b", "size = "+x.name+"_s", "x = "+v))
			v = x.name + "_rows"
		}
		sb.WriteString(cInts(x.name+"_shape", x.shape...))
		sb.WriteString(stmt(x.name, x.shape, "reshape", "shape = "+x.name+"_shape", "x = "+v))
	}
	sb.WriteString(body)
	var names []string
	for _, x := range outs {
		s := ioSpec(x.name+"_out", x.shape)
		p.Outputs = append(p.Outputs, s)
		names = append(names, s.Name)
		rows := []int{1, s.Rows(), 1, s.RowLen()}
		if s.Stride() == s.RowLen() {
			sb.WriteString(cInts(x.name+"_oshape", rows...))
			sb.WriteString(stmt(s.Name, rows, "reshape", "shape = "+x.name+"_oshape", "x = "+x.name))
			continue
		}
		sb.WriteString(cInts(x.name+"_oshape", rows...))
		sb.WriteString(stmt(x.name+"_orows", rows, "reshape", "shape = "+x.name+"_oshape", "x = "+x.name))
		sb.WriteString(cInts(x.name+"_opad", 0, 0, 0, 0, 0, 0, 0, s.Stride()-s.RowLen()))
		sb.WriteString(stmt(s.Name, s.DeviceShape, "pad", "pad = "+x.name+"_opad", "x = "+x.name+"_orows"))
	}
	fmt.Fprintf(&sb, "    } -> (%s);\n}\n", strings.Join(names, ", "))
	p.MIL = []byte(sb.String())
	return p
}

// posOf returns the line:col of the statement holding marker: the first
// non-blank column of its line.
func posOf(t *testing.T, src []byte, marker string) string {
	t.Helper()
	i := strings.Index(string(src), marker)
	require.GreaterOrEqual(t, i, 0, "marker %q not in program", marker)
	start := strings.LastIndexByte(string(src[:i]), '\n') + 1
	line := strings.Count(string(src[:start]), "\n") + 1
	col := 1
	for src[start+col-1] == ' ' {
		col++
	}
	return mil.Pos{Line: line, Col: col}.String()
}

// run compiles p on a device of the given numerics and runs it.
func run(t *testing.T, n Numerics, p *lower.Program, inputs ...[]float32) [][]float32 {
	t.Helper()
	exe, err := New(n).Compile(p)
	require.NoError(t, err, "program:\n%s", p.MIL)
	out, err := exe.Run(inputs)
	require.NoError(t, err)
	return out
}

func compileErr(t *testing.T, p *lower.Program) error {
	t.Helper()
	_, err := New(Wide).Compile(p)
	require.Error(t, err, "program:\n%s", p.MIL)
	return err
}

// halfs returns n random fp16 values, normally distributed with standard
// deviation scale.
func halfs(rng *rand.Rand, n int, scale float64) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = float32(fp16.Round64(rng.NormFloat64() * scale))
	}
	return xs
}

func filled(n int, v float32) []float32 {
	xs := make([]float32, n)
	for i := range xs {
		xs[i] = v
	}
	return xs
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// requireWithin checks |got − want| ≤ tol[i] elementwise, and no NaN.
func requireWithin(t *testing.T, got []float32, want, tol []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		g := float64(got[i])
		require.False(t, math.IsNaN(g), "%s[%d] is NaN", what, i)
		require.LessOrEqual(t, math.Abs(g-want[i]), tol[i], "%s[%d]: got %g, want %g ± %g", what, i, g, want[i], tol[i])
	}
}
