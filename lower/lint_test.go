package lower

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower/mil"
)

// lintProgram wraps hand-written MIL statements in a main with the given
// inputs and outputs, as a Program whose surfaces match them.
func lintProgram(t *testing.T, inputs []string, body string, outputs []string, blob []byte) *Program {
	t.Helper()
	src := "program(1.3)\n{\n    func main<ios18>("
	p := &Program{Blob: blob}
	for i, in := range inputs {
		if i > 0 {
			src += ", "
		}
		src += "tensor<fp16, [1, 1, 1, 32]> " + in
		p.InputSurfaces = append(p.InputSurfaces, Surface{Name: in, Shape: []int{1, 1, 1, 32}})
	}
	src += ") {\n" + body + "    } -> ("
	for i, out := range outputs {
		if i > 0 {
			src += ", "
		}
		src += out
		p.OutputSurfaces = append(p.OutputSurfaces, Surface{Name: out, Shape: []int{1, 1, 1, 32}})
	}
	src += ");\n}\n"
	p.MIL = []byte(src)
	_, err := mil.Parse(p.MIL)
	require.NoError(t, err, "%s", src)
	return p
}

func TestLintRules(t *testing.T) {
	const relu = "        tensor<fp16, [1, 1, 1, 32]> y = relu(x = x)[name = string(\"y\")];\n"
	w := mil.NewBlobWriter()
	off := w.Add(mil.BlobFP16, mil.FP16Data([]float64{0x1p-20, 1}))
	subBlob := w.Bytes()
	z := mil.NewBlobWriter()
	z.Add(mil.BlobFP16, mil.FP16Data(make([]float64, 32)))
	zeroBlob := z.Bytes()
	cases := []struct {
		name    string
		inputs  []string
		body    string
		outputs []string
		blob    []byte
		want    string // substring of the error; "" for a clean program
	}{
		{"clean", []string{"x"}, relu, []string{"y"}, nil, ""},
		{"two_inputs", []string{"x", "x2"}, relu +
			"        tensor<fp16, [1, 1, 1, 32]> y2 = relu(x = x2)[name = string(\"y2\")];\n", []string{"y"}, nil, "2 input and 1 output surfaces"},
		{"two_outputs", []string{"x"}, relu +
			"        tensor<fp16, [1, 1, 1, 32]> y2 = relu(x = x)[name = string(\"y2\")];\n", []string{"y", "y2"}, nil, "1 input and 2 output surfaces"},
		{"concat3", []string{"x"},
			"        int32 ax = const()[name = string(\"ax\"), val = int32(1)];\n" +
				"        bool il = const()[name = string(\"il\"), val = bool(false)];\n" +
				"        tensor<fp16, [1, 3, 1, 32]> c = concat(axis = ax, interleave = il, values = (x, x, x))[name = string(\"c\")];\n",
			[]string{"c"}, nil, "concat of 3 values"},
		{"inline_tensor", []string{"x"},
			"        tensor<fp16, [2]> k = const()[name = string(\"k\"), val = tensor<fp16, [2]>([1, 2])];\n" + relu,
			[]string{"y"}, nil, "inline fp16 tensor literal"},
		{"subnormal_scalar", []string{"x"},
			"        fp16 k = const()[name = string(\"k\"), val = fp16(0x1p-24)];\n" +
				"        tensor<fp16, [1, 1, 1, 32]> y = mul(x = x, y = k)[name = string(\"y\")];\n",
			[]string{"y"}, nil, "subnormal"},
		{"subnormal_blob", []string{"x"},
			"        tensor<fp16, [2]> k = const()[name = string(\"k\"), val = tensor<fp16, [2]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(" + itoa(off) + ")))];\n" + relu,
			[]string{"y"}, subBlob, "subnormal"},
		{"mul_zero_scalar", []string{"x"},
			"        fp16 k = const()[name = string(\"k\"), val = fp16(0)];\n" +
				"        tensor<fp16, [1, 1, 1, 32]> y = mul(x = x, y = k)[name = string(\"y\")];\n",
			[]string{"y"}, nil, "mul by the constant zero"},
		{"mul_zero_tensor", []string{"x"},
			"        tensor<fp16, [1, 1, 1, 32]> k = const()[name = string(\"k\"), val = tensor<fp16, [1, 1, 1, 32]>(BLOBFILE(path = string(\"@model_path/weights/weight.bin\"), offset = uint64(64)))];\n" +
				"        tensor<fp16, [1, 1, 1, 32]> y = mul(x = k, y = x)[name = string(\"y\")];\n",
			[]string{"y"}, zeroBlob, "mul by the constant zero"},
		{"empty", []string{"x"}, "", []string{"x"}, nil, "no compute op"},
		{"output_is_input", []string{"x"}, relu, []string{"x"}, nil, "is an input"},
	}
	// The cases' one-row surfaces are far below the simulator's minimum
	// size, checked last; the other rules are checked without it.
	rules := TargetSim
	rules.MinSurfaceBytes = 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := lintProgram(t, c.inputs, c.body, c.outputs, c.blob)
			err := Lint(p, rules)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrLint), "%v", err)
			require.Contains(t, err.Error(), c.want)
		})
	}
	err := Lint(lintProgram(t, []string{"x"}, relu, []string{"y"}, nil), TargetSim)
	require.ErrorIs(t, err, ErrLint)
	require.ErrorContains(t, err, `surface "x" of shape [1 1 1 32] holds 64 bytes; target sim's surfaces need at least 49152`)
	// Several surfaces are fine where the target does not pack.
	loose := rules
	loose.PackedIO = false
	p := lintProgram(t, []string{"x", "x2"}, relu, []string{"y"}, nil)
	require.NoError(t, Lint(p, loose))
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

// TestLoweringKeepsTheRules: graphs with many inputs and outputs, wide
// concats, small tensor constants and tiny weight entries lower to
// programs that pass the lint on every target.
func TestLoweringKeepsTheRules(t *testing.T) {
	g := dataflow.New()
	var xs []dataflow.Value
	for i := range 5 {
		xs = append(xs, g.Input("x"+string(rune('a'+i)), dataflow.Shape{2, 7 + 13*i}))
	}
	wide := g.Concat(1, xs...)                                              // one concat of five
	k := g.Const("k", dataflow.Shape{3}, []float64{1, 2, 3})                // small tensor: blob
	w := g.Const("w", dataflow.Shape{3, 1}, []float64{0.5, 0x1p-20, -0.25}) // a subnormal entry: flushed
	g.Output("cat", wide)
	g.Output("scaled", g.Mul(g.Slice(xs[0], []int{0, 0}, []int{1, 3}), k)) // slice at width offset 0
	g.Output("mv", g.MatMul(g.Slice(xs[0], []int{0, 0}, []int{2, 3}), w, false, false))
	for _, tg := range []Target{TargetSim, TargetM1, TargetM5} {
		p, err := Lower(g, tg)
		require.NoError(t, err, tg.Name)
		require.NoError(t, Lint(p, tg))
		require.Len(t, p.InputSurfaces, 1)
		require.Len(t, p.OutputSurfaces, 1)
	}
	// A tensor that is tiny as a whole is a scaling mistake, not noise.
	g = dataflow.New()
	x := g.Input("x", dataflow.Shape{1, 3})
	g.Output("y", g.Mul(x, g.Const("tiny", dataflow.Shape{3}, []float64{0x1p-20, 0x1p-16, 0x1p-15})))
	_, err := Lower(g, TargetSim)
	require.ErrorIs(t, err, ErrRange)
	require.Contains(t, err.Error(), "below fp16's normal range")
}
