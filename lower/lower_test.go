package lower

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower/mil"
)

// everyOp builds a graph that uses every dataflow op at least once.
func everyOp(t testing.TB) *dataflow.Graph {
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{3, 40})
	y := g.Input("y", dataflow.Shape{1, 40})
	img := g.Input("img", dataflow.Shape{1, 4, 9, 11})
	w := g.Const("w", dataflow.Shape{6, 2, 3, 3}, ramp(6*2*3*3))
	wm := g.Const("wm", dataflow.Shape{40, 24}, ramp(40*24))
	gamma := g.Const("gamma", dataflow.Shape{40}, ramp(40))

	a := g.Add(x, y)
	a = g.Sub(a, g.Mul(a, y))
	a = g.Div(a, g.Add(g.Abs(y), g.Scalar(1)))
	a = g.Maximum(a, g.Minimum(a, g.Neg(a)))
	p := g.Pow(g.Add(g.Square(a), g.Scalar(1)), g.Scalar(0.5))
	p = g.Add(g.Sqrt(p), g.Rsqrt(p))
	p = g.Add(g.Exp(g.Tanh(p)), g.Log(p))
	p = g.Add(g.Sigmoid(p), g.Relu(p))
	p = g.Gelu(p, dataflow.GeluTanh)
	m := g.MatMul(p, wm, false, false)                           // const right operand: conv
	m2 := g.MatMul(p, g.Transpose(p, []int{1, 0}), false, false) // [3, 3]
	s := g.ReduceSum(m, []int{-1}, true)                         // last axis: matmul with ones
	s2 := g.ReduceMean(m, []int{0}, false)
	s3 := g.ReduceMax(m2, []int{1}, true)
	sm := g.Softmax(m, -1)
	ln := g.LayerNorm(p, []int{-1}, gamma, dataflow.Value{}, 1e-4)
	c := g.Conv2D(img, w, dataflow.Conv2DOptions{Strides: [2]int{1, 2}, Pads: [4]int{1, 1, 0, 2}, Groups: 2})
	r := g.Reshape(c, dataflow.Shape{6, -1})
	cat := g.Concat(1, sm, g.Mul(s, s3))
	sl := g.Slice(ln, []int{0, 2}, []int{2, -1})
	pd := g.Pad(sl, []int{1, 0, 0, 3}, 0.25)
	g.Output("cat", cat)
	g.Output("mean", s2)
	g.Output("conv", r)
	g.Output("pad", pd)
	require.NoError(t, g.Err())
	return g
}

func ramp(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i%17-8) / 16
	}
	return out
}

func TestLowerEveryOpRoundTrips(t *testing.T) {
	p, err := Lower(everyOp(t), TargetSim)
	require.NoError(t, err)
	parsed, err := mil.Parse(p.MIL)
	require.NoError(t, err, "%s", p.MIL)
	require.NoError(t, parsed.Check())
	again := mil.Print(parsed)
	require.Equal(t, string(p.MIL), string(again), "emit → parse → print must be byte-identical")

	text := string(p.MIL)
	for _, bad := range []string{"rsqrt(", "square(", " neg("} {
		require.NotContains(t, text, bad, "op %s must be legalized away", bad)
	}
	for _, want := range []string{"conv(", "pow(", "matmul(", "layer_norm(", "pad(", "slice_by_size(", "func main<ios18>", "program(1.3)"} {
		require.Contains(t, text, want)
	}
	// I/O signature: the packed target stacks the inputs as bands of one
	// surface whose stride fits the longest padded row (64), widened until
	// its 40 rows reach the 49152-byte minimum: ⌈49152/(2·40)⌉ = 615
	// elements, 640 at the 32-element row alignment. The outputs likewise.
	require.Equal(t, []IOSpec{
		{Name: "x", Shape: []int{3, 40}, DeviceShape: []int{1, 3, 1, 640}, Channel: 0},
		{Name: "y", Shape: []int{1, 40}, DeviceShape: []int{1, 1, 1, 640}, Channel: 3},
		{Name: "img", Shape: []int{1, 4, 9, 11}, DeviceShape: []int{1, 36, 1, 640}, Channel: 4},
	}, p.Inputs)
	require.Equal(t, []Surface{{Name: "input", Shape: []int{1, 40, 1, 640}}}, p.InputSurfaces)
	require.Len(t, p.OutputSurfaces, 1)
	require.Equal(t, "mean", p.Outputs[1].Name)
	fn := parsed.Functions[0]
	require.Len(t, fn.Inputs, 1)
	require.Equal(t, []string{p.OutputSurfaces[0].Name}, fn.Outputs)
	require.Equal(t, mil.TensorType("fp16", p.InputSurfaces[0].Shape...), fn.Inputs[0].Type)
	rows := 0
	for i, o := range p.Outputs {
		require.Equal(t, rows, o.Channel, "output %d", i)
		require.Equal(t, p.OutputSurfaces[0].Stride(), o.Stride())
		rows += o.Rows()
	}
	require.Equal(t, rows, p.OutputSurfaces[0].Rows())
	require.NotContains(t, text, "interleave = cat_interleave, values = (cat_l", "no concat of more than two")

	// Unpacked (a target without PackedIO): a surface per tensor, each
	// padded to its own row length and sized to the minimum (the lint in
	// Lower checks it); without a minimum, no wider.
	loose := TargetSim
	loose.PackedIO = false
	p, err = Lower(everyOp(t), loose)
	require.NoError(t, err)
	for _, s := range append(append([]Surface{}, p.InputSurfaces...), p.OutputSurfaces...) {
		require.GreaterOrEqual(t, 2*s.Size(), loose.MinSurfaceBytes, "%v", s.Shape)
	}
	loose.MinSurfaceBytes = 0
	p, err = Lower(everyOp(t), loose)
	require.NoError(t, err)
	require.Equal(t, []IOSpec{
		{Name: "x", Shape: []int{3, 40}, DeviceShape: []int{1, 3, 1, 64}},
		{Name: "y", Shape: []int{1, 40}, DeviceShape: []int{1, 1, 1, 64}, Surface: 1},
		{Name: "img", Shape: []int{1, 4, 9, 11}, DeviceShape: []int{1, 36, 1, 32}, Surface: 2},
	}, p.Inputs)
	require.Equal(t, []int{1, 1, 1, 32}, p.Outputs[1].DeviceShape)
	parsed, err = mil.Parse(p.MIL)
	require.NoError(t, err)
	fn = parsed.Functions[0]
	require.Equal(t, []string{"cat", "mean", "conv", "pad"}, fn.Outputs)
	for i, in := range fn.Inputs {
		require.Equal(t, p.Inputs[i].Name, in.Name)
		require.Equal(t, mil.TensorType("fp16", p.Inputs[i].DeviceShape...), in.Type)
	}
}

func TestLowerIsDeterministic(t *testing.T) {
	p1, err := Lower(everyOp(t), TargetSim)
	require.NoError(t, err)
	p2, err := Lower(everyOp(t), TargetSim)
	require.NoError(t, err)
	require.True(t, bytes.Equal(p1.MIL, p2.MIL))
	require.True(t, bytes.Equal(p1.Blob, p2.Blob))
	require.Equal(t, p1.Hash, p2.Hash)
	require.Len(t, p1.Hash, 64)
}

// TestBlobOffsetsPointAtMetadata checks that every BLOBFILE offset in the
// MIL names a metadata record whose data is the constant, in fp16.
func TestBlobOffsetsPointAtMetadata(t *testing.T) {
	p, err := Lower(everyOp(t), TargetSim)
	require.NoError(t, err)
	blob, err := mil.ReadBlob(p.Blob)
	require.NoError(t, err)
	parsed, err := mil.Parse(p.MIL)
	require.NoError(t, err)
	seen := 0
	for _, op := range parsed.Functions[0].Ops {
		if op.Kind != "const" {
			continue
		}
		lit := op.Attr("val").(*mil.Literal)
		if lit.Blob == nil {
			require.False(t, lit.Type.DType == "fp16" && len(lit.Type.Shape) > 0, "fp16 tensor %s is inline; tensors go to the blob", op.Name())
			continue
		}
		seen++
		require.Equal(t, WeightPath, lit.Blob.Path)
		require.Zero(t, lit.Blob.Offset%64)
		e, err := blob.At(lit.Blob.Offset)
		require.NoError(t, err, "offset %d of %s", lit.Blob.Offset, op.Name())
		require.Equal(t, mil.BlobFP16, e.DType)
		require.Len(t, e.Data, 2*lit.Type.Elements())
	}
	require.Equal(t, len(blob.Entries), seen)
	require.GreaterOrEqual(t, seen, 4)
	require.Equal(t, uint64(64), blob.Entries[0].Offset, "first metadata record at 64, data at 128")
}

// TestPassesPreserveMeaning evaluates the graph before and after
// legalization in float64: every rewrite is exact in real arithmetic.
func TestPassesPreserveMeaning(t *testing.T) {
	g := everyOp(t)
	legal, err := Legalize(g)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 7))
	inputs := map[string][]float64{}
	for _, id := range g.Inputs() {
		n := g.Nodes()[id]
		xs := make([]float64, dataflow.Shape(n.Shape).Size())
		for i := range xs {
			xs[i] = rng.Float64()*2 - 1
		}
		inputs[n.Name] = xs
	}
	want, err := dataflow.Eval(g, inputs)
	require.NoError(t, err)
	got, err := dataflow.Eval(legal, inputs)
	require.NoError(t, err)
	for name, w := range want {
		require.Len(t, got[name], len(w))
		for i := range w {
			require.InDelta(t, w[i], got[name][i], 1e-12*math.Max(1, math.Abs(w[i])), "%s[%d]", name, i)
		}
	}
	ops := map[dataflow.Op]int{}
	for _, n := range legal.Nodes() {
		ops[n.Op]++
	}
	require.Zero(t, ops[dataflow.OpRsqrt])
	require.Zero(t, ops[dataflow.OpNeg])
	require.Zero(t, ops[dataflow.OpSquare])
	// The user's conv, the constant matmul, and the ones-vector matmul that
	// the last-axis reduce_sum became.
	require.Equal(t, 3, ops[dataflow.OpConv2D])
}

func TestPassesOneByOne(t *testing.T) {
	count := func(g *dataflow.Graph, op dataflow.Op) int {
		n := 0
		for _, nd := range g.Nodes() {
			if nd.Op == op {
				n++
			}
		}
		return n
	}
	t.Run("reduce-sum-to-matmul", func(t *testing.T) {
		g := dataflow.New()
		v := g.Input("v", dataflow.Shape{100})
		m := g.Input("m", dataflow.Shape{2, 3, 5})
		g.Output("a", g.ReduceSum(v, []int{0}, false)) // rank 1: reshape, matmul, reshape
		g.Output("b", g.ReduceSum(m, []int{2}, true))  // last axis, keep dims
		g.Output("c", g.ReduceSum(m, []int{1}, false)) // not the last axis: stays
		out, err := reduceSumToMatMul(g)
		require.NoError(t, err)
		require.Equal(t, 2, count(out, dataflow.OpMatMul))
		require.Equal(t, 1, count(out, dataflow.OpReduceSum))
		require.Equal(t, dataflow.Shape{}, out.Nodes()[out.Outputs()[0].Node].Shape)
	})
	t.Run("const-matmul-to-conv", func(t *testing.T) {
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, 8})
		g.Output("y", g.MatMul(x, g.Const("A", dataflow.Shape{5, 8}, ramp(40)), false, true))
		out, err := constMatMulToConv(g)
		require.NoError(t, err)
		require.Equal(t, 1, count(out, dataflow.OpConv2D))
		require.Zero(t, count(out, dataflow.OpMatMul))
		out, err = unitTransposeToReshape(out)
		require.NoError(t, err)
		require.Zero(t, count(out, dataflow.OpTranspose), "a row vector's transposes only move unit dims")
	})
	t.Run("rsqrt-to-pow", func(t *testing.T) {
		g := dataflow.New()
		g.Output("y", g.Rsqrt(g.Input("x", dataflow.Shape{4})))
		out, err := rsqrtToPow(g)
		require.NoError(t, err)
		require.Equal(t, 1, count(out, dataflow.OpPow))
		require.Zero(t, count(out, dataflow.OpRsqrt))
	})
	t.Run("fresh names avoid user names", func(t *testing.T) {
		g := dataflow.New()
		x := g.Input("ones_1", dataflow.Shape{1, 4})
		g.Output("s", g.ReduceSum(x, []int{1}, true))
		out, err := reduceSumToMatMul(g)
		require.NoError(t, err)
		names := map[string]int{}
		for _, n := range out.Nodes() {
			if n.Name != "" {
				names[n.Name]++
			}
		}
		for n, c := range names {
			require.Equal(t, 1, c, "name %s", n)
		}
	})
}

func TestLowerErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func() *dataflow.Graph
		is    error
		msg   []string
	}{
		{"shape mismatch", func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("z", g.Add(g.Input("a", dataflow.Shape{2, 3}), g.Input("b", dataflow.Shape{4, 3})))
			return g
		}, dataflow.ErrShape, []string{"add", "[2 3]", "[4 3]"}},
		{"rank 6", func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("z", g.Input("a", dataflow.Shape{1, 1, 1, 1, 1, 2}))
			return g
		}, nil, []string{"rank"}},
		{"spatial limit", func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("z", g.Relu(g.Input("a", dataflow.Shape{1, 20000})))
			return g
		}, ErrUnsupported, []string{"20000", "16384"}},
		{"contraction limit", func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("z", g.MatMul(g.Input("a", dataflow.Shape{20000, 2}), g.Input("b", dataflow.Shape{20000, 2}), true, false))
			return g
		}, ErrUnsupported, []string{"contraction", "16384"}},
		{"kernel limit", func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("z", g.Conv2D(g.Input("a", dataflow.Shape{1, 1, 20, 20}), g.Input("w", dataflow.Shape{1, 1, 1, 14}), dataflow.Conv2DOptions{}))
			return g
		}, ErrUnsupported, []string{"kernel", "13"}},
		{"no outputs", func() *dataflow.Graph {
			g := dataflow.New()
			g.Relu(g.Input("a", dataflow.Shape{2}))
			return g
		}, dataflow.ErrInvalid, []string{"output"}},
		{"duplicate names", func() *dataflow.Graph {
			g := dataflow.New()
			a := g.Input("a", dataflow.Shape{2})
			g.Input("a", dataflow.Shape{2})
			g.Output("z", a)
			return g
		}, dataflow.ErrInvalid, []string{"a"}},
		{"constant beyond fp16", func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("z", g.Mul(g.Input("a", dataflow.Shape{2}), g.Scalar(1e6)))
			return g
		}, ErrRange, []string{"1e+06", "65504"}},
		{"MIL keyword as a name", func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("tensor", g.Relu(g.Input("fp16", dataflow.Shape{2})))
			return g
		}, ErrUnsupported, []string{"keyword"}},
		{"non-constant layer norm gamma", func() *dataflow.Graph {
			g := dataflow.New()
			x := g.Input("a", dataflow.Shape{2, 4})
			g.Output("z", g.LayerNorm(x, []int{1}, g.Input("gamma", dataflow.Shape{4}), dataflow.Value{}, 1e-5))
			return g
		}, ErrUnsupported, []string{"gamma"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Lower(tt.build(), TargetSim)
			require.Error(t, err)
			if tt.is != nil {
				require.True(t, errors.Is(err, tt.is), "error %v should wrap %v", err, tt.is)
			}
			for _, m := range tt.msg {
				require.Contains(t, err.Error(), m)
			}
		})
	}
	_, err := Lower(nil, TargetSim)
	require.Error(t, err)
	_, err = TargetByName("ane-m9")
	require.ErrorIs(t, err, ErrUnsupported)
	// A target with the A16+ spatial limit takes what the simulator refuses.
	g := dataflow.New()
	g.Output("z", g.Relu(g.Input("a", dataflow.Shape{1, 20000})))
	_, err = Lower(g, TargetM4)
	require.NoError(t, err)
}

func TestIOSpecPackUnpack(t *testing.T) {
	spec, err := ioSpec(TargetSim, "x", dataflow.Shape{2, 3, 5})
	require.NoError(t, err)
	require.Equal(t, []int{1, 6, 1, 32}, spec.DeviceShape)
	src := make([]float32, spec.Size())
	for i := range src {
		src[i] = float32(i + 1)
	}
	dev := make([]float32, spec.DeviceSize())
	for i := range dev {
		dev[i] = -1 // padding must be overwritten with zeros
	}
	spec.Pack(dev, src)
	require.Equal(t, float32(6), dev[32], "row 1 starts at the stride")
	require.Equal(t, float32(0), dev[5])
	back := make([]float32, spec.Size())
	spec.Unpack(back, dev)
	require.Equal(t, src, back)
	scalar, err := ioSpec(TargetSim, "s", dataflow.Shape{})
	require.NoError(t, err)
	require.Equal(t, []int{1, 1, 1, 32}, scalar.DeviceShape)
	require.Equal(t, 1, scalar.Size())
}

// chain builds a graph of about n nodes: a long elementwise chain with a
// matmul every 50 ops.
func chain(n int) *dataflow.Graph {
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{8, 64})
	w := g.Const("w", dataflow.Shape{64, 64}, ramp(64*64))
	v := x
	for i := 0; g.NumNodes() < n; i++ {
		switch i % 50 {
		case 49:
			v = g.MatMul(v, w, false, false)
		default:
			v = g.Add(g.Mul(v, g.Scalar(0.5)), x)
		}
	}
	g.Output("y", v)
	return g
}

func benchmarkLower(b *testing.B, n int) {
	g := chain(n)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Lower(g, TargetSim); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(g.NumNodes()), "ns/node")
}

func BenchmarkLower1k(b *testing.B)  { benchmarkLower(b, 1000) }
func BenchmarkLower10k(b *testing.B) { benchmarkLower(b, 10000) }

func Example() {
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, 40})
	g.Output("y", g.Relu(x))
	p, err := Lower(g, TargetSim)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The 40-element row is padded to the spatial limit, 16384, and the
	// surface given a second row of zeros, so that it reaches the
	// engine's 49152-byte minimum.
	fmt.Println(p.Inputs[0].DeviceShape, p.InputSurfaces[0].Shape, p.OutputSurfaces[0].Shape)
	for _, line := range strings.Split(string(p.MIL), "\n") {
		if strings.Contains(line, "relu(") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	// Output:
	// [1 1 1 16384] [1 2 1 16384] [1 2 1 16384]
	// tensor<fp16, [1, 40]> v1 = relu(x = x)[name = string("v1")];
}
