package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
)

func TestCompileRejects(t *testing.T) {
	v := []int{2, 32}
	two := []port{in("x", v...), in("y", v...)}
	one := []port{in("x", v...)}
	out := []port{in("z", v...)}
	cases := []struct {
		name     string
		ins      []port
		body     string
		outs     []port
		sentinel error
		msg      string // substring of the message
		marker   string // the statement the error must point at ("" for none)
	}{
		{"unknown op", one, stmt("z", v, "frobnicate", "x = x"), out,
			shim.ErrUnsupported, `op "frobnicate" is not supported`, "frobnicate("},
		{"rsqrt", one, stmt("z", v, "rsqrt", "x = x"), out,
			shim.ErrUnsupported, `op "rsqrt" is not supported (use pow(x, -0.5))`, "rsqrt("},
		{"missing required argument", two, stmt("z", v, "matmul", "x = x"), out,
			ErrInvalid, `missing required argument "y"`, "matmul("},
		{"gelu needs mode", one, stmt("z", v, "gelu", "x = x"), out,
			ErrInvalid, `missing required argument "mode"`, "gelu("},
		{"unknown argument", two, stmt("z", v, "add", "x = x", "y = y", "alpha = y"), out,
			ErrInvalid, `add has no argument "alpha"`, "add("},
		{"argument given twice", two, stmt("z", v, "add", "x = x", "y = y", "y = x"), out,
			ErrInvalid, `argument "y" given twice`, "add("},
		{"undefined variable", one, stmt("z", v, "add", "x = x", "y = nope"), out,
			ErrInvalid, `undefined variable nope`, ""},
		{"wrong declared shape", two, stmt("z", []int{32, 2}, "add", "x = x", "y = y"), out,
			ErrInvalid, "declared type tensor<fp16, [32, 2]> of \"z\" does not match the inferred type tensor<fp16, [2, 32]>", "add("},
		{"wrong declared dtype", two, "        tensor<fp32, [2, 32]> z = add(x = x, y = y)[name = string(\"z\")];\n", out,
			ErrInvalid, "declared type tensor<fp32, [2, 32]>", "add("},
		{"broadcast mismatch", []port{in("x", 2, 32), in("y", 3, 32)}, stmt("z", v, "add", "x = x", "y = y"), out,
			ErrInvalid, "do not broadcast", "add("},
		{"param not const", one, stmt("z", v, "softmax", "axis = x", "x = x"), out,
			ErrInvalid, `argument "axis" must be a const int32 scalar`, "softmax("},
		{"data not fp16", one, cInts("k", 1, 2) + stmt("z", v, "add", "x = x", "y = k"), out,
			ErrInvalid, `argument "y" must be an fp16 tensor`, "add("},
		{"epsilon of wrong kind", one, cInt("e", 1) + stmt("z", v, "log", "epsilon = e", "x = x"), out,
			ErrInvalid, `argument "epsilon" must be a const fp16 scalar`, "log("},
		{"inline literal argument", one, "        tensor<fp16, [2, 32]> z = add(x = x, y = fp16(0x1p+0))[name = string(\"z\")];\n", out,
			shim.ErrUnsupported, "inline literal", "add("},
		{"missing name attribute", two, "        tensor<fp16, [2, 32]> z = add(x = x, y = y);\n", out,
			ErrInvalid, "no name attribute", "add("},
		{"rank-1 matmul", one, cInts("s", 64) + stmt("x1", []int{64}, "reshape", "shape = s", "x = x") +
			stmt("d", []int{}, "matmul", "x = x1", "y = x1") + stmt("z", v, "add", "x = x", "y = d"), out,
			shim.ErrUnsupported, "rank-1", "matmul("},
		{"contraction mismatch", two, stmt("z", []int{2, 2}, "matmul", "x = x", "y = y"), []port{in("z", 2, 2)},
			ErrInvalid, "contraction dimensions differ", "matmul("},
		{"spatial limit", two, cInts("p", 0, 16384) + stmt("w", []int{2, 16416}, "pad", "pad = p", "x = x") +
			stmt("z", v, "add", "x = x", "y = y"), out,
			shim.ErrUnsupported, "exceeds the target's spatial limit of 16384", "w = pad("},
		{"rank limit", one, cInts("s", 1, 1, 2, 1, 4, 8) + stmt("w", []int{1, 1, 2, 1, 4, 8}, "reshape", "shape = s", "x = x") +
			stmt("z", v, "add", "x = x", "y = x"), out,
			shim.ErrUnsupported, "rank 6, beyond the target's limit of 5", "w = reshape("},
		{"conv kernel limit", []port{in("x", 1, 1, 4, 32)},
			cHalfs("w", []int{1, 1, 1, 14}, make([]float64, 14)) + stmt("z", []int{1, 1, 4, 19}, "conv", "weight = w", "x = x"),
			[]port{in("z", 1, 1, 4, 19)}, shim.ErrUnsupported, "kernel 1×14 exceeds the target's kernel limit of 13", "conv("},
		{"conv dilated input weight", []port{in("x", 1, 1, 8, 32), in("w", 1, 1, 3, 3)},
			cInts("dl", 2, 2) + stmt("z", []int{1, 1, 4, 28}, "conv", "dilations = dl", "weight = w", "x = x"),
			[]port{in("z", 1, 1, 4, 28)}, shim.ErrUnsupported, "need a const weight", "z = conv("},
		{"conv same_lower", []port{in("x", 1, 1, 8, 32)},
			cHalfs("w", []int{1, 1, 1, 3}, []float64{1, 2, 3}) + cStr("pt", "same_lower") +
				stmt("z", []int{1, 1, 8, 32}, "conv", "pad_type = pt", "weight = w", "x = x"),
			[]port{in("z", 1, 1, 8, 32)}, shim.ErrUnsupported, "same_lower", "z = conv("},
		{"conv pad without custom", []port{in("x", 1, 1, 8, 32)},
			cHalfs("w", []int{1, 1, 1, 3}, []float64{1, 2, 3}) + cInts("pd", 0, 0, 1, 1) +
				stmt("z", []int{1, 1, 8, 30}, "conv", "pad = pd", "weight = w", "x = x"),
			[]port{in("z", 1, 1, 8, 30)}, ErrInvalid, "pad_type is not custom", "z = conv("},
		{"conv groups", []port{in("x", 1, 3, 8, 32)},
			cHalfs("w", []int{2, 3, 1, 1}, []float64{1, 2, 3, 4, 5, 6}) + cInt("g", 2) +
				stmt("z", []int{1, 2, 8, 32}, "conv", "groups = g", "weight = w", "x = x"),
			[]port{in("z", 1, 2, 8, 32)}, ErrInvalid, "groups 2 must divide C_in 3", "z = conv("},
		{"pad reflect", one, cInts("p", 0, 0) + cStr("m", "reflect") + stmt("z", v, "pad", "mode = m", "pad = p", "x = x"), out,
			shim.ErrUnsupported, `mode "reflect" is not supported`, "pad("},
		{"pad bad mode", one, cInts("p", 0, 0) + cStr("m", "wrap") + stmt("z", v, "pad", "mode = m", "pad = p", "x = x"), out,
			ErrInvalid, `mode "wrap"`, "pad("},
		{"gelu bad mode", one, cStr("m", "FAST") + stmt("z", v, "gelu", "mode = m", "x = x"), out,
			ErrInvalid, `mode "FAST"`, "gelu("},
		{"fp32 const", one, "        fp32 c = const()[name = string(\"c\"), val = fp32(0x1p+0)];\n" + stmt("z", v, "add", "x = x", "y = x"), out,
			shim.ErrUnsupported, "dtype fp32", "c = const()"},
		{"non-finite const", one, "        fp16 c = const()[name = string(\"c\"), val = fp16(0x1p+17)];\n" + stmt("z", v, "add", "x = x", "y = c"), out,
			shim.ErrRange, "not a finite fp16 value", "c = const()"},
		{"const type mismatch", one, "        tensor<int32, [3]> c = const()[name = string(\"c\"), val = tensor<int32, [2]>([1, 2])];\n" + stmt("z", v, "add", "x = x", "y = x"), out,
			ErrInvalid, "declared tensor<int32, [3]> but its value is tensor<int32, [2]>", "c = const()"},
		{"reshape count", one, cInts("s", 3, -1) + stmt("z", v, "reshape", "shape = s", "x = x"), out,
			ErrInvalid, "cannot infer the -1", "z = reshape("},
		{"transpose perm", one, cInts("p", 0, 0) + stmt("z", v, "transpose", "perm = p", "x = x"), out,
			ErrInvalid, "not a permutation", "transpose("},
		{"slice out of range", one, cInts("b", 1, 0) + cInts("s", 2, 32) + stmt("z", v, "slice_by_size", "begin = b", "size = s", "x = x"), out,
			ErrInvalid, "out of range", "z = slice_by_size("},
		{"reduce axis out of range", one, cInts("a", 2) + stmt("z", v, "reduce_sum", "axes = a", "x = x"), out,
			ErrInvalid, "axis 2 out of range for rank 2", "reduce_sum("},
		{"output not returned", one, stmt("z", v, "relu", "x = x"), []port{in("z", v...), in("q", v...)},
			ErrInvalid, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := program(c.ins, c.body, c.outs)
			err := compileErr(t, p)
			require.ErrorIs(t, err, c.sentinel, "%v", err)
			require.Contains(t, err.Error(), c.msg)
			require.True(t, strings.HasPrefix(err.Error(), "sim: "), err.Error())
			if c.marker != "" {
				require.Contains(t, err.Error(), "sim: "+posOf(t, p.MIL, c.marker)+": ")
			}
		})
	}
}

// wider is a surface shape with two more rows than shape.
func wider(shape []int) []int { return []int{shape[0], shape[1] + 2, shape[2], shape[3]} }

func TestCompileRejectsSignature(t *testing.T) {
	good := func() *lower.Program {
		return program([]port{in("x", 2, 32)}, stmt("z", []int{2, 32}, "relu", "x = x"), []port{in("z", 2, 32)})
	}
	cases := []struct {
		name     string
		edit     func(p *lower.Program)
		sentinel error
		msg      string
	}{
		{"input surface name", func(p *lower.Program) { p.InputSurfaces[0].Name = "other" }, ErrInvalid, `input surface 0 is "other", function main's input 0 is "input"`},
		{"input surface count", func(p *lower.Program) {
			p.InputSurfaces = append(p.InputSurfaces, lower.Surface{Name: "w", Shape: p.InputSurfaces[0].Shape})
		}, ErrInvalid, "the program lists 2 input surfaces"},
		{"input surface shape", func(p *lower.Program) { p.InputSurfaces[0].Shape = wider(p.InputSurfaces[0].Shape) }, ErrInvalid, "the program's surface says"},
		{"input band", func(p *lower.Program) { p.Inputs[0] = ioSpec("x_in", []int{2, 2, 32}) }, ErrInvalid, "do not lie in surface"},
		{"device shape", func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{2, 32} }, ErrInvalid, "is not [1, C, 1, S]"},
		{"duplicate input", func(p *lower.Program) {
			*p = *program([]port{in("x", 2, 32), in("y", 2, 32)}, stmt("z", []int{2, 32}, "relu", "x = x"), []port{in("z", 2, 32)})
			p.Inputs[1] = p.Inputs[0]
		}, ErrInvalid, `inputs "x_in" and "x_in" both occupy row 0`},
		{"output surface name", func(p *lower.Program) { p.OutputSurfaces[0].Name = "q" }, ErrInvalid, `output surface 0 is "q"`},
		{"output band", func(p *lower.Program) { p.Outputs[0] = ioSpec("z_out", []int{4, 32}) }, ErrInvalid, "do not lie in surface"},
		{"output surface shape", func(p *lower.Program) { p.OutputSurfaces[0].Shape = wider(p.OutputSurfaces[0].Shape) }, ErrInvalid, "the program's surface says"},
		{"fp32 input", func(p *lower.Program) {
			decl := ft(p.InputSurfaces[0].Shape) + " input"
			p.MIL = []byte(strings.Replace(string(p.MIL), decl, strings.Replace(decl, "fp16", "fp32", 1), 1))
		}, shim.ErrUnsupported, "must be fp16"},
		{"opset", func(p *lower.Program) {
			p.MIL = []byte(strings.Replace(string(p.MIL), "main<ios18>", "main<ios17>", 1))
		},
			shim.ErrUnsupported, "opset ios17"},
		{"function name", func(p *lower.Program) {
			p.MIL = []byte(strings.Replace(string(p.MIL), "main<ios18>", "other<ios18>", 1))
		},
			ErrInvalid, "exactly one function, main"},
		{"channel limit", func(p *lower.Program) {
			*p = *program([]port{in("x", 70000, 32)}, stmt("z", []int{70000, 32}, "relu", "x = x"), []port{in("z", 70000, 32)})
		}, shim.ErrUnsupported, "exceeds the target's limit of 65536"},
		{"input device limit", func(p *lower.Program) {
			*p = *program([]port{in("x", 1, 16416)}, stmt("z", []int{1, 16416}, "relu", "x = x"), []port{in("z", 1, 16416)})
		}, shim.ErrUnsupported, "exceeds the target's spatial limit of 16384"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := good()
			c.edit(p)
			err := compileErr(t, p)
			require.ErrorIs(t, err, c.sentinel, "%v", err)
			require.Contains(t, err.Error(), c.msg)
		})
	}
}

func TestCompileRejectsBlob(t *testing.T) {
	w := mil.NewBlobWriter()
	off := w.Add(mil.BlobFP16, mil.FP16Data(make([]float64, 64)))
	offI8 := w.Add(mil.BlobInt8, make([]byte, 64))
	blob := w.Bytes()
	weight := func(path string, offset uint64, shape ...int) string {
		return fmt.Sprintf("        %s c = const()[name = string(\"c\"), val = %s(BLOBFILE(path = string(%q), offset = uint64(%d)))];\n",
			ft(shape), ft(shape), path, offset)
	}
	cases := []struct {
		name string
		body string
		blob []byte
		msg  string
	}{
		{"good", weight(lower.WeightPath, off, 2, 32), blob, ""},
		{"offset not a record", weight(lower.WeightPath, off+64, 2, 32), blob, "no blob metadata record at offset 128"},
		{"dtype", weight(lower.WeightPath, offI8, 2, 32), blob, "holds int8 data, want fp16"},
		{"size", weight(lower.WeightPath, off, 2, 16), blob, "holds 128 bytes, its type tensor<fp16, [2, 16]> needs 64"},
		{"path", weight("@model_path/weights/other.bin", off, 2, 32), blob, "weight path"},
		{"no blob", weight(lower.WeightPath, off, 2, 32), nil, "the program has none"},
		{"malformed blob", weight(lower.WeightPath, off, 2, 32), blob[:100], "weight blob"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body + stmt("z", []int{2, 32}, "add", "x = x", "y = c")
			p := program([]port{in("x", 2, 32)}, body, []port{in("z", 2, 32)})
			p.Blob = c.blob
			_, err := New(Wide).Compile(p)
			if c.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), c.msg)
			if c.name != "malformed blob" {
				require.Contains(t, err.Error(), posOf(t, p.MIL, "c = const()"))
			}
		})
	}
}

func TestSyntaxErrorPassesThrough(t *testing.T) {
	p := program([]port{in("x", 2, 32)}, "        tensor<fp16, [2, 32]> z = relu(x = x[name = string(\"z\")];\n", []port{in("z", 2, 32)})
	err := compileErr(t, p)
	var se *mil.SyntaxError
	require.True(t, errors.As(err, &se), "%v", err)
	require.ErrorIs(t, err, ErrInvalid)
	require.Equal(t, posOf(t, p.MIL, "relu(")[:2], se.Pos.String()[:2], "the syntax error is on the relu line")
	require.Contains(t, err.Error(), "sim: mil: "+se.Pos.String())
}

func TestRunRejects(t *testing.T) {
	body := stmt("z", []int{2, 3}, "add", "x = x", "y = y")
	p := program([]port{in("x", 2, 3), in("y", 2, 3)}, body, []port{in("z", 2, 3)})
	dev := New(Wide)
	exe, err := dev.Compile(p)
	require.NoError(t, err)
	ok := []float32{1, 2, 3, 4, 5, 6}

	_, err = exe.Run([][]float32{ok})
	require.ErrorIs(t, err, shim.ErrShape)
	require.EqualError(t, err, "sim: got 1 inputs, program takes 2")

	_, err = exe.Run([][]float32{ok, ok[:5]})
	require.ErrorIs(t, err, shim.ErrShape)
	require.Contains(t, err.Error(), `input "y_in" has 5 values`)

	big := append([]float32{}, ok...)
	big[4] = 1e6
	_, err = exe.Run([][]float32{ok, big})
	require.ErrorIs(t, err, shim.ErrRange)
	require.Contains(t, err.Error(), `input "y_in" element 4`)

	nan := append([]float32{}, ok...)
	nan[0] = float32(zeroNaN())
	_, err = exe.Run([][]float32{nan, ok})
	require.ErrorIs(t, err, shim.ErrRange)

	// 65519 rounds to 65504, finite: accepted.
	edge := append([]float32{}, ok...)
	edge[0] = 65519
	outs, err := exe.Run([][]float32{edge, make([]float32, 6)})
	require.NoError(t, err)
	require.Equal(t, float32(65504), outs[0][0])

	require.NoError(t, exe.Close())
	_, err = exe.Run([][]float32{ok, ok})
	require.ErrorIs(t, err, shim.ErrClosed)

	exe2, err := dev.Compile(p)
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	_, err = exe2.Run([][]float32{ok, ok})
	require.ErrorIs(t, err, shim.ErrClosed)
	_, err = dev.Compile(p)
	require.ErrorIs(t, err, shim.ErrClosed)
}

func zeroNaN() float64 {
	z := 0.0
	return z / z
}

// rawSurface is the shape of every surface of the hand-written programs:
// two rows, as wide as the simulator's minimum surface size needs.
var rawSurface = func() []int {
	rows, stride := lower.SurfaceShape(lower.TargetSim, 2, 32)
	return []int{1, rows, 1, stride}
}()

// rawProgram is a hand-written program: MIL text of main with the given
// input and output surfaces of shape rawSurface, each holding one logical
// tensor of its rows.
func rawProgram(src string, ins, outs []string) *lower.Program {
	p := &lower.Program{MIL: []byte(src), Target: "sim"}
	logical := []int{rawSurface[1], rawSurface[3]}
	for i, n := range ins {
		p.InputSurfaces = append(p.InputSurfaces, lower.Surface{Name: n, Shape: rawSurface})
		p.Inputs = append(p.Inputs, lower.IOSpec{Name: n + "_t", Shape: logical, DeviceShape: rawSurface, Surface: i})
	}
	for i, n := range outs {
		p.OutputSurfaces = append(p.OutputSurfaces, lower.Surface{Name: n, Shape: rawSurface})
		p.Outputs = append(p.Outputs, lower.IOSpec{Name: n + "_t", Shape: logical, DeviceShape: rawSurface, Surface: i})
	}
	return p
}

// mainOf writes a program whose main takes the named inputs of shape
// rawSurface, runs body and returns the named values.
func mainOf(ins []string, body string, outs []string) string {
	decl := make([]string, len(ins))
	for i, n := range ins {
		decl[i] = ft(rawSurface) + " " + n
	}
	return "program(1.3)\n[buildInfo = dict<string, string>({{\"coremlc-version\", \"3505.4.1\"}})]\n{\n" +
		"    func main<ios18>(" + strings.Join(decl, ", ") + ") {\n" + body +
		"    } -> (" + strings.Join(outs, ", ") + ");\n}\n"
}

// The rules that keep the simulator from accepting programs the engine is
// reported to reject, in both variants; each names the op and line:col.
func TestStrictRules(t *testing.T) {
	v := []int{2, 32}
	one := []port{in("x", v...)}
	out := []port{in("z", v...)}
	surf := rawSurface
	cases := []struct {
		name   string
		p      *lower.Program
		msg    string // substring of the error; "" for a program that compiles
		marker string // the statement the error points at; "=name" for a returned value
	}{
		// concat takes two inputs.
		{"concat of three", program(one, cInt("ax", 1)+cBool("il", false)+
			stmt("w", []int{2, 96}, "concat", "axis = ax", "interleave = il", "values = (x, x, x)")+
			stmt("z", v, "relu", "x = x"), out), "concat of 3 inputs", "w = concat("},
		{"concat of two", program(one, cInt("ax", 1)+cBool("il", false)+
			stmt("w", []int{2, 64}, "concat", "axis = ax", "interleave = il", "values = (x, x)")+
			cInts("b", 0, 0)+cInts("s", 2, 32)+stmt("z", v, "slice_by_size", "begin = b", "size = s", "x = w"), out), "", ""},

		// Tensor constants come from the blob; scalars and parameters stay inline.
		{"inline fp16 tensor", programInline(one, cHalfs("c", []int{32}, ones64(32))+stmt("z", v, "add", "x = x", "y = c"), out),
			`const "c" is an inline fp16 tensor literal of shape [32]`, "c = const()"},
		{"blob fp16 tensor", program(one, cHalfs("c", []int{32}, ones64(32))+stmt("z", v, "add", "x = x", "y = c"), out), "", ""},
		{"inline fp16 scalar", programInline(one, cHalf("c", 0.5)+stmt("z", v, "add", "x = x", "y = c"), out), "", ""},
		{"inline int32 tensor", programInline(one, cInts("p", 1, 0)+stmt("z", []int{32, 2}, "transpose", "perm = p", "x = x"), []port{in("z", 32, 2)}), "", ""},

		// No subnormal constants, inline or in the blob, and none that round to zero.
		{"subnormal scalar", program(one, cHalf("c", 0x1p-20)+stmt("z", v, "add", "x = x", "y = c"), out),
			`const "c" element 0 is 9.536743e-07, an fp16 subnormal`, "c = const()"},
		{"subnormal in the blob", program(one, cHalfs("c", []int{3}, []float64{1, -0x1p-15, 2})+
			cInts("b", 0, 0)+cInts("s", 2, 3)+stmt("x3", []int{2, 3}, "slice_by_size", "begin = b", "size = s", "x = x")+
			stmt("y", []int{2, 3}, "add", "x = x3", "y = c")+cInts("p", 0, 29)+stmt("z", v, "pad", "pad = p", "x = y"), out),
			`const "c" element 1 is -3.0517578e-05, an fp16 subnormal`, "c = const()"},
		{"scalar rounding to zero", program(one, cHalf("c", 0x1p-26)+stmt("z", v, "add", "x = x", "y = c"), out),
			`which rounds to zero in fp16`, "c = const()"},
		{"smallest normal", program(one, cHalf("c", -0x1p-14)+stmt("z", v, "add", "x = x", "y = c"), out), "", ""},

		// No multiplication by a constant zero.
		{"mul by scalar zero", program(one, cHalf("c", 0)+stmt("z", v, "mul", "x = x", "y = c"), out),
			`mul: "c" is a constant zero`, "z = mul("},
		{"mul by a zero tensor", program(one, cHalfs("c", []int{32}, make([]float64, 32))+stmt("z", v, "mul", "x = c", "y = x"), out),
			`mul: "c" is a constant zero`, "z = mul("},
		{"mul of a reduction by zero", program(one, cInts("ax", -1)+cBool("kd", true)+
			stmt("r", []int{2, 1}, "reduce_sum", "axes = ax", "keep_dims = kd", "x = x")+cHalf("c", 0)+
			stmt("m", []int{2, 1}, "mul", "x = r", "y = c")+stmt("z", v, "add", "x = x", "y = m"), out),
			`mul: "c" is a constant zero`, "m = mul("},
		{"mul by a reshaped zero", program(one, cHalfs("c", []int{32}, make([]float64, 32))+cInts("sh", 1, 32)+
			stmt("c2", []int{1, 32}, "reshape", "shape = sh", "x = c")+stmt("z", v, "mul", "x = x", "y = c2"), out),
			`mul: "c2" is a constant zero`, "z = mul("},
		{"mul by a tensor with one nonzero", program(one, cHalfs("c", []int{3}, []float64{0, 0, 1})+
			cInts("b", 0, 0)+cInts("s", 2, 3)+stmt("x3", []int{2, 3}, "slice_by_size", "begin = b", "size = s", "x = x")+
			stmt("y", []int{2, 3}, "mul", "x = x3", "y = c")+cInts("p", 0, 29)+stmt("z", v, "pad", "pad = p", "x = y"), out), "", ""},
		{"add of zero", program(one, cHalf("c", 0)+stmt("z", v, "add", "x = x", "y = c"), out), "", ""},

		// No empty programs.
		{"no compute op", rawProgram(mainOf([]string{"input"}, cInts("sh", surf...)+
			stmt("output", surf, "reshape", "shape = sh", "x = input"), []string{"output"}), []string{"input"}, []string{"output"}),
			"function main has no compute op", "func main"},
		{"output is the input", rawProgram(mainOf([]string{"input"}, stmt("r", surf, "relu", "x = input"), []string{"input"}),
			[]string{"input"}, []string{"input"}),
			`output "input" is the input "input", unchanged`, "=input);"},
		{"output is a reshaped input", rawProgram(mainOf([]string{"input"}, stmt("r", surf, "relu", "x = input")+cInts("sh", surf...)+
			stmt("output", surf, "reshape", "shape = sh", "x = input"), []string{"output"}), []string{"input"}, []string{"output"}),
			`output "output" is the input "input", unchanged`, "=output);"},
		{"output is a const", func() *lower.Program {
			p := rawProgram(mainOf([]string{"input"}, cHalfs("output", surf, ones64(surf[1]*surf[3]))+stmt("r", surf, "relu", "x = input"), []string{"output"}),
				[]string{"input"}, []string{"output"})
			p.MIL, p.Blob = blobify(p.MIL)
			return p
		}(), `output "output" is a const`, "=output);"},

		// One input and one output surface on a PackedIO target.
		{"two input surfaces", rawProgram(mainOf([]string{"a", "b"}, stmt("output", surf, "add", "x = a", "y = b"), []string{"output"}),
			[]string{"a", "b"}, []string{"output"}), "function main binds 2 input surfaces", "func main"},
		{"two output surfaces", rawProgram(mainOf([]string{"input"}, stmt("o1", surf, "relu", "x = input")+stmt("o2", surf, "abs", "x = input"), []string{"o1", "o2"}),
			[]string{"input"}, []string{"o1", "o2"}), "function main returns 2 output surfaces", "func main"},
		{"one surface each way", rawProgram(mainOf([]string{"input"}, stmt("output", surf, "relu", "x = input"), []string{"output"}),
			[]string{"input"}, []string{"output"}), "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, num := range []Numerics{Wide, Narrow} {
				_, err := New(num).Compile(c.p)
				if c.msg == "" {
					require.NoError(t, err, "%v; program:\n%s", num, c.p.MIL)
					continue
				}
				require.ErrorIs(t, err, shim.ErrUnsupported, "%v: %v", num, err)
				require.Contains(t, err.Error(), c.msg)
				pos := ""
				if m, ok := strings.CutPrefix(c.marker, "="); ok { // a returned value: its exact position
					pos = posExact(t, c.p.MIL, m)
				} else {
					pos = posOf(t, c.p.MIL, c.marker)
				}
				require.Contains(t, err.Error(), "sim: "+pos+": ", "the error names the statement")
			}
		})
	}
}

// posExact returns the line:col of the first character of marker.
func posExact(t *testing.T, src []byte, marker string) string {
	t.Helper()
	i := strings.Index(string(src), marker)
	require.GreaterOrEqual(t, i, 0, "marker %q not in program", marker)
	start := strings.LastIndexByte(string(src[:i]), '\n') + 1
	return mil.Pos{Line: strings.Count(string(src[:start]), "\n") + 1, Col: i - start + 1}.String()
}
