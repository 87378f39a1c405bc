package mil

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// everyKind is a program in the printer's canonical form that uses every
// literal kind, tuples (nested and empty), both output arities, BLOBFILE,
// rank-0 tensors and several ops and functions.
const everyKind = `program(1.3)
[buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"}, {"coremltools-component-milinternal", ""}, {"esc", "q\"b\\n\nt\t"}})]
{
    func main<ios18>(tensor<fp16, [1, 64, 1, 64]> x, tensor<fp32, [2, 3]> z, int32 k) {
        string pt = const()[name = string("pt"), val = string("valid")];
        bool kd = const()[name = string("kd"), val = bool(true)];
        bool nf = const()[name = string("nf"), val = bool(false)];
        int32 ax = const()[name = string("ax"), val = int32(-1)];
        uint64 big = const()[name = string("big"), val = uint64(18446744073709551615)];
        int64 i64 = const()[name = string("i64"), val = int64(-9223372036854775808)];
        fp16 h = const()[name = string("h"), val = fp16(0x1p-3)];
        fp32 f = const()[name = string("f"), val = fp32(0x1.5798eep-27)];
        fp64 d = const()[name = string("d"), val = fp64(-0x1.921fb54442d18p+1)];
        bf16 bf = const()[name = string("bf"), val = bf16(0x1.8p+1)];
        fp8e4m3fn f8 = const()[name = string("f8"), val = fp8e4m3fn(0x1p-6)];
        tensor<fp16, []> r0 = const()[name = tensor<string, []>("r0"), val = tensor<fp16, []>(0x1p-24)];
        tensor<uint64, []> r1 = const()[name = string("r1"), val = tensor<uint64, []>(64)];
        tensor<bool, []> r2 = const()[name = string("r2"), val = tensor<bool, []>(false)];
        tensor<int32, [4]> pm = const()[name = string("pm"), val = tensor<int32, [4]>([0, 1, 3, 2])];
        tensor<fp16, [6]> fv = const()[name = string("fv"), val = tensor<fp16, [6]>([0x1p+0, -0x1.8p+1, 0x0p+0, -0x0p+0, inf, -inf])];
        tensor<fp32, [1]> nn = const()[name = string("nn"), val = tensor<fp32, [1]>([nan])];
        tensor<int8, [2, 2]> i8 = const()[name = string("i8"), val = tensor<int8, [2, 2]>([-128, 127, 0, 1])];
        tensor<uint8, [3]> u8 = const()[name = string("u8"), val = tensor<uint8, [3]>([0, 128, 255])];
        tensor<int4, [2]> i4 = const()[name = string("i4"), val = tensor<int4, [2]>([-8, 7])];
        tensor<uint1, [3]> u1 = const()[name = string("u1"), val = tensor<uint1, [3]>([1, 0, 1])];
        tensor<bool, [2]> bv = const()[name = string("bv"), val = tensor<bool, [2]>([true, false])];
        tensor<string, [2]> sv = const()[name = string("sv"), val = tensor<string, [2]>(["a", ""])];
        tensor<int32, [0]> ev = const()[name = string("ev"), val = tensor<int32, [0]>([])];
        tensor<fp16, [128, 64, 1, 1]> W = const()[name = string("W"), val = tensor<fp16, [128, 64, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
        tensor<uint1, [32, 32]> M = const()[name = string("M"), val = tensor<uint1, [32, 32]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(8320)))];
        tensor<int32, [2]> st = const()[name = string("st"), val = tensor<int32, [2]>([1, 1])];
        tensor<fp16, [1, 128, 1, 64]> y = conv(groups = int32(1), pad_type = pt, strides = st, weight = W, x = x)[name = string("y")];
        tensor<fp16, [1, 64, 1, 64]> a, tensor<fp16, [1, 64, 1, 64]> b = split(axis = int32(1), num_splits = int32(2), x = y)[name = string("sp")];
        tensor<fp16, [1, 128, 1, 64]> c = concat(axis = ax, interleave = kd, values = (b, a))[name = string("c")];
        tensor<fp16, [1, 128, 64, 1]> t = transpose(perm = pm, x = c)[name = string("t")];
        tensor<fp16, [1, 128, 64, 1]> n = custom(empty = (), nest = ((a, b), fp16(0x1p+0)), x = t);
        tensor<fp16, [1, 128, 64, 1]> o = mul(x = n, y = h)[name = string("o"), extra = (kd, nf)];
    } -> (o, a);
    func second<ios15>() {
        tensor<fp16, [1]> u = const()[name = string("u"), val = tensor<fp16, [1]>([0x1p-14])];
    } -> ();
}
`

func TestPrintParsePrintFixedPoint(t *testing.T) {
	p, err := Parse([]byte(everyKind))
	require.NoError(t, err)
	out := Print(p)
	require.Equal(t, everyKind, string(out), "canonical text prints back unchanged")
	p2, err := Parse(out)
	require.NoError(t, err)
	require.Equal(t, string(out), string(Print(p2)))
	require.NoError(t, p.Check())

	// Spot-check the AST.
	require.Equal(t, "1.3", p.Version)
	require.Len(t, p.BuildInfo, 4)
	require.Equal(t, KV{Key: "esc", Value: "q\"b\\n\nt\t"}, p.BuildInfo[3])
	require.Len(t, p.Functions, 2)
	f := p.Functions[0]
	require.Equal(t, "ios18", f.Opset)
	require.Equal(t, []string{"o", "a"}, f.Outputs)
	require.Equal(t, Scalar("int32"), f.Inputs[2].Type)
	byName := map[string]*Op{}
	for _, op := range f.Ops {
		byName[op.Outputs[0].Name] = op
	}
	lit := func(name string) *Literal { return byName[name].Attr("val").(*Literal) }
	require.Equal(t, []int64{-1}, lit("big").Ints, "uint64 max is kept as its bit pattern")
	require.Equal(t, []int64{math.MinInt64}, lit("i64").Ints)
	require.Equal(t, []float64{0.125}, lit("h").Floats)
	require.Equal(t, float64(float32(0x1.5798eep-27)), lit("f").Floats[0])
	require.Equal(t, TensorType("fp16"), lit("r0").Type, "rank-0 tensor stays a tensor")
	require.Equal(t, "r0", byName["r0"].Name())
	fv := lit("fv").Floats
	require.True(t, math.Signbit(fv[3]) && fv[3] == 0, "negative zero survives")
	require.True(t, math.IsInf(fv[4], 1) && math.IsInf(fv[5], -1))
	require.True(t, math.IsNaN(lit("nn").Floats[0]))
	require.Equal(t, []bool{true, false}, lit("bv").Bools)
	require.Equal(t, []string{"a", ""}, lit("sv").Strings)
	require.Equal(t, &BlobRef{Path: "@model_path/weights/weight.bin", Offset: 8320}, lit("M").Blob)
	split := byName["a"]
	require.Equal(t, "split", split.Kind)
	require.Equal(t, []string{"a", "b"}, []string{split.Outputs[0].Name, split.Outputs[1].Name})
	tup := byName["c"].Arg("values").(*Tuple)
	require.Len(t, tup.Elems, 2)
	require.Equal(t, "b", tup.Elems[0].(*Ref).Name)
	nest := byName["n"].Arg("nest").(*Tuple)
	require.Len(t, nest.Elems[0].(*Tuple).Elems, 2)
	require.Empty(t, byName["n"].Arg("empty").(*Tuple).Elems)
	require.Nil(t, byName["n"].Attrs)
	require.Empty(t, p.Functions[1].Inputs)
	require.Empty(t, p.Functions[1].Outputs)
}

// maderixStyle is a hand-written program in the style of the public
// generators (docs/ENGINE.md §1): the program(1.3) header, consts for every
// non-tensor parameter, a 1x1 conv whose weight is in the blob, and a
// concat of a tuple, with the compact spacing generators use.
const maderixStyle = `program(1.3)
[buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, {"coremlc-version", "3505.4.1"}, {"coremltools-component-milinternal", ""}, {"coremltools-version", "9.0"}})]
{
    func main<ios18>(tensor<fp16, [1, 64, 1, 64]> x) {
        string pt = const()[name = string("pt"), val = string("valid")];
        tensor<int32, [2]> st = const()[name = string("st"), val = tensor<int32, [2]>([1,1])];
        tensor<int32, [4]> pd = const()[name = string("pd"), val = tensor<int32, [4]>([0,0,0,0])];
        tensor<int32, [2]> dl = const()[name = string("dl"), val = tensor<int32, [2]>([1,1])];
        int32 gr = const()[name = string("gr"), val = int32(1)];
        tensor<fp16, [128, 64, 1, 1]> W = const()[name = string("W"), val = tensor<fp16, [128, 64, 1, 1]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
        tensor<fp16, [1, 128, 1, 64]> y = conv(dilations=dl, groups=gr, pad=pd, pad_type=pt, strides=st, weight=W, x=x)[name = string("conv0")];
        fp16 sc = const()[name = string("sc"), val = fp16(0x1p-3)];
        tensor<fp16, [1, 128, 1, 64]> ys = mul(x=y, y=sc)[name = string("ys")];
        int32 cax = const()[name = string("cax"), val = int32(1)];
        bool cid = const()[name = string("cid"), val = bool(false)];
        tensor<fp16, [1, 256, 1, 64]> out = concat(axis=cax, interleave=cid, values=(y,ys))[name = string("cat")];
    } -> (out);
}
`

func TestParseMaderixStyle(t *testing.T) {
	p, err := Parse([]byte(maderixStyle))
	require.NoError(t, err)
	require.NoError(t, p.Check())
	require.Equal(t, []KV{
		{Key: "coremlc-component-MIL", Value: "3510.2.1"},
		{Key: "coremlc-version", Value: "3505.4.1"},
		{Key: "coremltools-component-milinternal", Value: ""},
		{Key: "coremltools-version", Value: "9.0"},
	}, p.BuildInfo)
	f := p.Functions[0]
	require.Equal(t, "main", f.Name)
	require.Equal(t, "ios18", f.Opset)
	require.Len(t, f.Ops, 12)
	conv := f.Ops[6]
	require.Equal(t, "conv", conv.Kind)
	require.Equal(t, "conv0", conv.Name())
	var argNames []string
	for _, a := range conv.Args {
		argNames = append(argNames, a.Name)
	}
	require.Equal(t, []string{"dilations", "groups", "pad", "pad_type", "strides", "weight", "x"}, argNames)
	require.Equal(t, "W", conv.Arg("weight").(*Ref).Name)
	w := f.Ops[5].Attr("val").(*Literal)
	require.Equal(t, TensorType("fp16", 128, 64, 1, 1), w.Type)
	require.Equal(t, uint64(64), w.Blob.Offset)
	require.Equal(t, []int64{0, 0, 0, 0}, f.Ops[2].Attr("val").(*Literal).Ints)
	cat := f.Ops[11]
	vals := cat.Arg("values").(*Tuple)
	require.Equal(t, "y", vals.Elems[0].(*Ref).Name)
	require.Equal(t, "ys", vals.Elems[1].(*Ref).Name)

	// Formatting normalizes spacing and is then a fixed point.
	out, err := Format([]byte(maderixStyle))
	require.NoError(t, err)
	require.Contains(t, string(out), "concat(axis = cax, interleave = cid, values = (y, ys))")
	again, err := Format(out)
	require.NoError(t, err)
	require.Equal(t, string(out), string(again))
}

// oldStyle is the coremlc output for an iOS16 model (docs/ENGINE.md §1), with an
// old-style BLOBFILE and scalars added.
const oldStyle = `program(1.0)
[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{"coremlc-component-MIL", "5.33.5"}, {"coremlc-version", "1877.40.3"}, {"coremltools-version", "7.0"}})]
{
    func main<ios16>(tensor<fp16, [1, 10]> x, tensor<fp16, [1, 10]> y) {
        tensor<fp16, [1, 10]> var_3 = mul(x = x, y = y)[name = tensor<string, []>("op_3_cast_fp16")];
        tensor<fp32, [500]> w = const()[name = tensor<string, []>("w"), val = tensor<fp32, [500]>(BLOBFILE(path = tensor<string, []>("@model_path/weights/weight.bin"), offset = tensor<uint64, []>(64)))];
        tensor<int32, []> ax = const()[name = tensor<string, []>("ax"), val = tensor<int32, []>(-1)];
        tensor<bool, []> kd = const()[name = tensor<string, []>("kd"), val = tensor<bool, []>(false)];
        tensor<fp16, []> eps = const()[name = tensor<string, []>("eps"), val = tensor<fp16, []>(0x1p-24)];
    } -> (var_3);
}
`

func TestParseOldStyle(t *testing.T) {
	p, err := Parse([]byte(oldStyle))
	require.NoError(t, err)
	require.NoError(t, p.Check())
	require.Equal(t, "1.0", p.Version)
	require.Equal(t, KV{Key: "coremltools-version", Value: "7.0"}, p.BuildInfo[2])
	f := p.Functions[0]
	require.Equal(t, "ios16", f.Opset)
	require.Equal(t, "op_3_cast_fp16", f.Ops[0].Name())
	require.Equal(t, &BlobRef{Path: "@model_path/weights/weight.bin", Offset: 64}, f.Ops[1].Attr("val").(*Literal).Blob)
	require.Equal(t, []int64{-1}, f.Ops[2].Attr("val").(*Literal).Ints)
	require.Equal(t, []bool{false}, f.Ops[3].Attr("val").(*Literal).Bools)
	require.Equal(t, []float64{0x1p-24}, f.Ops[4].Attr("val").(*Literal).Floats)

	out := p.String()
	require.Contains(t, out, "[buildInfo = dict<string, string>({{\"coremlc-component-MIL\", \"5.33.5\"}")
	require.Contains(t, out, `BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64))`)
	require.Contains(t, out, `name = tensor<string, []>("op_3_cast_fp16")`, "rank-0 tensor literals keep their spelling")
	again, err := Format([]byte(out))
	require.NoError(t, err)
	require.Equal(t, out, string(again))
}

func TestParseLooseForms(t *testing.T) {
	src := `// a comment before the header
program ( 1.3 )   // no buildInfo
{
  func main<ios17>(tensor<fp32, [2]> x,
                   tensor<fp32, [2]> y) {
    // multi-output, parenthesized
    (tensor<fp32, [1]> a, tensor<fp32, [1]> b) = split(x=x,num_splits=int32(2))[name=string("s")];
    tensor<fp32, [3]> c = const()[val = tensor<fp32, [3]>([1, -2e-3, 1.5])];
    tensor<fp16, [2, 2]> m = const()[val = tensor<fp16, [2, 2]>([[1, 2], [3, 4]])];
    fp16 e = const()[val = fp16(.5)];
    tensor<fp32, [2]> z = add(x=x,y=y);
  } -> (z, a)
  func aux<ios15>() { } -> ();
}
`
	p, err := Parse([]byte(src))
	require.NoError(t, err)
	require.NoError(t, p.Check())
	require.Nil(t, p.BuildInfo)
	require.Len(t, p.Functions, 2)
	f := p.Functions[0]
	require.Equal(t, "ios17", f.Opset)
	require.Len(t, f.Ops[0].Outputs, 2)
	require.Equal(t, []float64{1, -2e-3, 1.5}, f.Ops[1].Attr("val").(*Literal).Floats)
	require.Equal(t, []float64{1, 2, 3, 4}, f.Ops[2].Attr("val").(*Literal).Floats, "nested lists are flattened")
	require.Equal(t, []float64{0.5}, f.Ops[3].Attr("val").(*Literal).Floats)
	out := p.String()
	require.Contains(t, out, "tensor<fp32, [1]> a, tensor<fp32, [1]> b = split(x = x, num_splits = int32(2))[name = string(\"s\")];")
	require.Contains(t, out, "tensor<fp32, [2]> z = add(x = x, y = y);\n")
	require.Contains(t, out, "    func aux<ios15>() {\n    } -> ();\n")
	again, err := Format([]byte(out))
	require.NoError(t, err)
	require.Equal(t, out, string(again))
}

func TestParsePositions(t *testing.T) {
	p, err := Parse([]byte(briefProgram))
	require.NoError(t, err)
	f := p.Functions[0]
	require.Equal(t, Pos{4, 5}, f.Pos)
	require.Equal(t, Pos{4, 51}, f.Inputs[0].Pos)
	require.Equal(t, Pos{5, 9}, f.Ops[0].Pos)
	require.Equal(t, Pos{5, 28}, f.Ops[0].Outputs[0].Pos)
	require.Equal(t, Pos{5, 68}, f.Ops[0].Attr("val").(*Literal).Pos)
	add := f.Ops[2]
	require.Equal(t, Pos{7, 9}, add.Pos)
	require.Equal(t, Pos{7, 50}, add.Arg("x").(*Ref).Pos)
	require.Equal(t, []Pos{{8, 11}}, f.OutputPos)

	q, err := Parse([]byte(maderixStyle))
	require.NoError(t, err)
	require.Equal(t, Pos{16, 85}, q.Functions[0].Ops[11].Arg("values").(*Tuple).Pos)
}

// body wraps statements in a function on lines 4 onwards, indented 8.
func body(stmts ...string) string {
	return "program(1.3)\n{\n    func main<ios18>(tensor<fp16, [2]> x) {\n        " +
		strings.Join(stmts, "\n        ") + "\n    } -> (y);\n}\n"
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		pos  Pos
		msg  string
	}{
		{"missing ')'", body(`tensor<fp16, [2]> y = add(x = x, y = x;`), Pos{4, 47}, "expected ')' after arguments, found ';'"},
		{"missing ';'", body(`tensor<fp16, [2]> y = add(x = x, y = x)[name = string("y")]`), Pos{5, 5}, "expected ';' after statement, found '}'"},
		{"unknown dtype", body(`tensor<fp17, [2]> y = add(x = x, y = x);`), Pos{4, 16}, `unknown dtype "fp17"`},
		{"element count", body(`tensor<int32, [4]> p = const()[val = tensor<int32, [4]>([0, 1, 2])];`), Pos{4, 65}, "tensor<int32, [4]> literal has 3 elements, want 4"},
		{"int range", body(`int8 k = const()[val = int8(300)];`), Pos{4, 37}, "value 300 out of range for int8"},
		{"bool", body(`bool k = const()[val = bool(1)];`), Pos{4, 37}, "expected true or false, found number 1"},
		{"float for int", body(`int32 k = const()[val = int32(1.5)];`), Pos{4, 39}, "expected int32 value, found number 1.5"},
		{"unterminated string", body(`string s = const()[val = string("abc)];`), Pos{4, 41}, "unterminated string"},
		{"bad character", body(`tensor<fp16, [2]> y = add(x = $x);`), Pos{4, 39}, "unexpected character '$'"},
		{"hex float without exponent", body(`fp16 h = const()[val = fp16(0x1.8)];`), Pos{4, 37}, "needs a 'p' exponent"},
		{"negative dimension", body(`tensor<fp16, [-1]> y = add(x = x);`), Pos{4, 23}, "dimension -1 out of range"},
		{"unknown escape", body(`string s = const()[val = string("a\q")];`), Pos{4, 43}, `unknown escape \q`},
		{"blobfile without offset", body(`tensor<fp16, [2]> w = const()[val = tensor<fp16, [2]>(BLOBFILE(path = string("w.bin")))];`), Pos{4, 63}, "BLOBFILE needs both path and offset"},
		{"blobfile offset type", body(`tensor<fp16, [2]> w = const()[val = tensor<fp16, [2]>(BLOBFILE(path = string("w.bin"), offset = int32(64)))];`), Pos{4, 105}, "BLOBFILE offset must be a uint64 literal"},
		{"bad header", "prog(1.3)\n{\n}\n", Pos{1, 1}, "expected program at start of program, found identifier prog"},
		{"bad version", "program(-1)\n{\n}\n", Pos{1, 9}, "expected version number, found number -1"},
		{"buildInfo types", "program(1.3)\n[buildInfo = dict<int32, string>({})]\n{\n}\n", Pos{2, 19}, "buildInfo keys and values must be strings"},
		{"missing arrow", "program(1.3)\n{\n    func main<ios18>() {\n    } (y);\n}\n", Pos{4, 7}, "expected '->' after function body, found '('"},
		{"end of input in function", "program(1.3)\n{\n    func main<ios18>() {\n", Pos{4, 1}, "closing function main, found end of input"},
		{"trailing tokens", "program(1.3)\n{\n}\n}\n", Pos{4, 1}, "expected end of input after program, found '}'"},
		{"value expected", body(`tensor<fp16, [2]> y = add(x = , y = x);`), Pos{4, 39}, "expected value (variable, literal or tuple), found ','"},
		{"empty input", "", Pos{1, 1}, "expected program at start of program, found end of input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.src))
			require.Nil(t, p)
			var se *SyntaxError
			require.ErrorAs(t, err, &se)
			require.ErrorIs(t, err, ErrSyntax)
			require.Equal(t, tt.pos, se.Pos, "error: %v", err)
			require.Contains(t, se.Msg, tt.msg)
			require.True(t, strings.HasPrefix(err.Error(), "mil: "+tt.pos.String()+": "), err.Error())
			_, ferr := Format([]byte(tt.src))
			require.Equal(t, err.Error(), ferr.Error())
		})
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	err := error(&SyntaxError{Pos: Pos{5, 31}, Msg: "expected ')' after arguments, found ';'"})
	require.Equal(t, "mil: 5:31: expected ')' after arguments, found ';'", err.Error())
	require.True(t, errors.Is(err, ErrSyntax))
}

func TestParseDeepNestingFails(t *testing.T) {
	deep := strings.Repeat("(", 1000) + "x" + strings.Repeat(")", 1000)
	_, err := Parse([]byte(body(`tensor<fp16, [2]> y = f(v = ` + deep + `);`)))
	require.ErrorIs(t, err, ErrSyntax)
	require.Contains(t, err.Error(), "nested too deeply")
}
