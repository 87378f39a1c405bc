package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
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

// program wraps body in a main function with one input surface, "input",
// and one output surface, "output", as the lowering for a PackedIO target
// emits them: the logical inputs (IOSpecs named <name>_in) are bands of
// rows of the input surface, sliced apart at channel offsets and reshaped
// into variables named after the ports; the output variables named after
// the ports are reshaped to rows, padded to the surface's stride and
// concatenated two at a time along the channel axis (IOSpecs <name>_out).
// Every inline fp16 tensor literal of the text becomes a weight in the
// blob; programInline keeps them inline.
func program(ins []port, body string, outs []port) *lower.Program {
	p := programInline(ins, body, outs)
	p.MIL, p.Blob = blobify(p.MIL)
	return p
}

// ioSpecs lays ports out as bands of one surface of the given name: the
// surface's stride is the longest padded row, widened (and rows added past
// the bands where that is not enough) to the simulator's minimum surface
// size, as the lowering sizes them (lower.SurfaceShape).
func ioSpecs(ports []port, suffix string) ([]lower.IOSpec, lower.Surface) {
	stride, rows := 0, 0
	for _, x := range ports {
		stride = max(stride, deviceShape(x.shape)[3])
		rows += deviceShape(x.shape)[1]
	}
	rows, stride = lower.SurfaceShape(lower.TargetSim, rows, stride)
	var specs []lower.IOSpec
	ch := 0
	for _, x := range ports {
		s := ioSpec(x.name+suffix, x.shape)
		s.DeviceShape[3] = stride
		s.Channel = ch
		ch += s.Rows()
		specs = append(specs, s)
	}
	name := "input"
	if suffix == "_out" {
		name = "output"
	}
	return specs, lower.Surface{Name: name, Shape: []int{1, rows, 1, stride}}
}

func programInline(ins []port, body string, outs []port) *lower.Program {
	var sb strings.Builder
	sb.WriteString("program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n")
	p := &lower.Program{Target: "sim"}
	var isf, osf lower.Surface
	p.Inputs, isf = ioSpecs(ins, "_in")
	p.Outputs, osf = ioSpecs(outs, "_out")
	p.InputSurfaces, p.OutputSurfaces = []lower.Surface{isf}, []lower.Surface{osf}
	fmt.Fprintf(&sb, "    func main<ios18>(%s %s) {\n", ft(isf.Shape), isf.Name)
	for i, x := range ins {
		s := p.Inputs[i]
		v := isf.Name
		rows := []int{1, s.Rows(), 1, s.RowLen()}
		if !equalShapes(rows, isf.Shape) {
			sb.WriteString(cInts(x.name+"_b", 0, s.Channel, 0, 0))
			sb.WriteString(cInts(x.name+"_s", rows...))
			sb.WriteString(stmt(x.name+"_rows", rows, "slice_by_size", "begin = "+x.name+"_b", "size = "+x.name+"_s", "x = "+v))
			v = x.name + "_rows"
		}
		sb.WriteString(cInts(x.name+"_shape", x.shape...))
		sb.WriteString(stmt(x.name, x.shape, "reshape", "shape = "+x.name+"_shape", "x = "+v))
	}
	sb.WriteString(body)
	used := 0
	for _, s := range p.Outputs {
		used += s.Rows()
	}
	fill := osf.Shape[1] - used // zero rows that bring the surface to its minimum size
	if len(outs) > 1 || fill > 0 {
		sb.WriteString(cInt("out_ax", 1) + cBool("out_il", false))
	}
	acc, accRows := "", 0
	for i, x := range outs {
		s := p.Outputs[i]
		rows := []int{1, s.Rows(), 1, s.RowLen()}
		band := x.name + "_oband"
		if len(outs) == 1 && fill == 0 {
			band = osf.Name
		}
		if s.Stride() == s.RowLen() {
			sb.WriteString(cInts(x.name+"_oshape", rows...))
			sb.WriteString(stmt(band, rows, "reshape", "shape = "+x.name+"_oshape", "x = "+x.name))
		} else {
			sb.WriteString(cInts(x.name+"_oshape", rows...))
			sb.WriteString(stmt(x.name+"_orows", rows, "reshape", "shape = "+x.name+"_oshape", "x = "+x.name))
			sb.WriteString(cInts(x.name+"_opad", 0, 0, 0, 0, 0, 0, 0, s.Stride()-s.RowLen()))
			sb.WriteString(stmt(band, s.DeviceShape, "pad", "pad = "+x.name+"_opad", "x = "+x.name+"_orows"))
		}
		if i == 0 {
			acc, accRows = band, s.Rows()
			continue
		}
		accRows += s.Rows()
		name := fmt.Sprintf("out_cat%d", i)
		if i == len(outs)-1 && fill == 0 {
			name = osf.Name
		}
		sb.WriteString(stmt(name, []int{1, accRows, 1, osf.Stride()}, "concat", "axis = out_ax", "interleave = out_il", "values = ("+acc+", "+band+")"))
		acc = name
	}
	if fill > 0 {
		zeros := make([]string, fill*osf.Stride())
		for i := range zeros {
			zeros[i] = "0"
		}
		fillShape := []int{1, fill, 1, osf.Stride()}
		fmt.Fprintf(&sb, "        %s out_fill = const()[name = string(\"out_fill\"), val = %s([%s])];\n", ft(fillShape), ft(fillShape), strings.Join(zeros, ", "))
		sb.WriteString(stmt(osf.Name, osf.Shape, "concat", "axis = out_ax", "interleave = out_il", "values = ("+acc+", out_fill)"))
	}
	fmt.Fprintf(&sb, "    } -> (%s);\n}\n", osf.Name)
	p.MIL = []byte(sb.String())
	return p
}

// inlineHalfs matches an inline fp16 tensor literal: its type and values.
var inlineHalfs = regexp.MustCompile(`val = (tensor<fp16, \[[0-9, ]+\]>)\(\[([^\]]*)\]\)`)

// blobify moves every inline fp16 tensor literal of src into a weight blob
// and returns the new text and the blob (nil if there was none).
func blobify(src []byte) ([]byte, []byte) {
	w := mil.NewBlobWriter()
	n := 0
	out := inlineHalfs.ReplaceAllFunc(src, func(m []byte) []byte {
		sub := inlineHalfs.FindSubmatch(m)
		var vals []float64
		for _, f := range strings.Split(string(sub[2]), ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				panic(fmt.Sprintf("blobify: %q: %v", f, err))
			}
			vals = append(vals, v)
		}
		n++
		off := w.Add(mil.BlobFP16, mil.FP16Data(vals))
		return []byte(fmt.Sprintf("val = %s(BLOBFILE(path = string(%q), offset = uint64(%d)))", sub[1], lower.WeightPath, off))
	})
	if n == 0 {
		return src, nil
	}
	return out, w.Bytes()
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
