package dataflow

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestShapeMismatchMessage(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{2, 3})
	y := g.Input("y", Shape{4, 3})
	v := g.Add(x, y)
	require.False(t, v.Valid())
	err := g.Err()
	require.ErrorIs(t, err, ErrShape)
	require.EqualError(t, err, "dataflow: add: shapes [2 3] and [4 3] do not broadcast: dataflow: shape mismatch")
}

// TestBuilderErrors checks that each builder mistake is recorded with the
// op, the shapes involved and the right sentinel, and that nothing panics.
func TestBuilderErrors(t *testing.T) {
	cases := []struct {
		name     string
		build    func(g *Graph)
		sentinel error
		contains []string
	}{
		{"rank6_input", func(g *Graph) { g.Input("x", Shape{1, 1, 1, 1, 1, 1}) },
			ErrShape, []string{"input", "[1 1 1 1 1 1]", "rank 6"}},
		{"rank6_const", func(g *Graph) { g.Const("c", Shape{1, 1, 1, 1, 1, 2}, []float64{1, 2}) },
			ErrShape, []string{"const", "rank 6"}},
		{"rank6_reshape", func(g *Graph) { g.Reshape(g.Input("x", Shape{64}), Shape{2, 2, 2, 2, 2, 2}) },
			ErrShape, []string{"reshape", "[2 2 2 2 2 2]"}},
		{"zero_dim", func(g *Graph) { g.Input("x", Shape{2, 0}) }, ErrShape, []string{"input", "[2 0]"}},
		{"const_length", func(g *Graph) { g.Const("w", Shape{2, 3}, []float64{1, 2}) },
			ErrShape, []string{"const", `"w"`, "2 values", "[2 3]", "6"}},
		{"dup_input_input", func(g *Graph) { g.Input("x", Shape{1}); g.Input("x", Shape{2}) },
			ErrInvalid, []string{"input", `duplicate name "x"`, "an input"}},
		{"dup_const_input", func(g *Graph) { g.Input("x", Shape{1}); g.Const("x", Shape{1}, []float64{1}) },
			ErrInvalid, []string{"const", `duplicate name "x"`}},
		{"dup_output_const", func(g *Graph) { w := g.Const("w", Shape{1}, []float64{1}); g.Output("w", w) },
			ErrInvalid, []string{"output", `duplicate name "w"`, "a const"}},
		{"dup_output_output", func(g *Graph) { x := g.Input("x", Shape{1}); g.Output("y", x); g.Output("y", x) },
			ErrInvalid, []string{"output", `duplicate name "y"`}},
		{"empty_name", func(g *Graph) { g.Input("", Shape{1}) }, ErrInvalid, []string{"input", `invalid name ""`}},
		{"digit_first", func(g *Graph) { g.Input("1x", Shape{1}) }, ErrInvalid, []string{`invalid name "1x"`}},
		{"dash", func(g *Graph) { g.Const("a-b", Shape{1}, []float64{1}) }, ErrInvalid, []string{`invalid name "a-b"`}},
		{"non_ascii", func(g *Graph) { g.Output("ü", g.Input("x", Shape{1})) }, ErrInvalid, []string{"output", `invalid name "ü"`}},
		{"zero_value_operand", func(g *Graph) { g.Add(g.Input("x", Shape{1}), Value{}) },
			ErrInvalid, []string{"add", "y is the zero Value"}},
		{"zero_value_unary", func(g *Graph) { g.Exp(Value{}) }, ErrInvalid, []string{"exp", "x is the zero Value"}},
		{"zero_value_output", func(g *Graph) { g.Output("y", Value{}) }, ErrInvalid, []string{"output", "zero Value"}},
		{"zero_value_concat", func(g *Graph) { g.Concat(0, g.Input("x", Shape{1}), Value{}) },
			ErrInvalid, []string{"concat", "operand 1 is the zero Value"}},
		{"foreign_value", func(g *Graph) { other := New(); g.Neg(other.Input("x", Shape{1})) },
			ErrInvalid, []string{"neg", "another graph"}},
		{"matmul_rank1", func(g *Graph) { g.MatMul(g.Input("x", Shape{3}), g.Input("y", Shape{3, 2}), false, false) },
			ErrShape, []string{"matmul", "[3]", "[3 2]", "rank ≥ 2"}},
		{"matmul_inner", func(g *Graph) { g.MatMul(g.Input("x", Shape{2, 3}), g.Input("y", Shape{2, 3}), false, false) },
			ErrShape, []string{"matmul", "[2 3]", "inner dims 3 and 2"}},
		{"matmul_batch", func(g *Graph) { g.MatMul(g.Input("x", Shape{2, 2, 3}), g.Input("y", Shape{3, 3, 2}), false, false) },
			ErrShape, []string{"matmul", "[2 2 3]", "[3 3 2]", "batch"}},
		{"conv_rank", func(g *Graph) {
			g.Conv2D(g.Input("x", Shape{1, 3, 4}), g.Input("w", Shape{1, 3, 1, 1}), Conv2DOptions{})
		},
			ErrShape, []string{"conv2d", "[1 3 4]", "[1 3 1 1]"}},
		{"conv_channels", func(g *Graph) {
			g.Conv2D(g.Input("x", Shape{1, 4, 4, 4}), g.Input("w", Shape{2, 4, 1, 1}), Conv2DOptions{Groups: 2})
		}, ErrShape, []string{"conv2d", "[1 4 4 4]", "[2 4 1 1]", "4/2"}},
		{"conv_groups_cout", func(g *Graph) {
			g.Conv2D(g.Input("x", Shape{1, 4, 4, 4}), g.Input("w", Shape{3, 2, 1, 1}), Conv2DOptions{Groups: 2})
		}, ErrShape, []string{"conv2d", "divisible by groups 2"}},
		{"conv_too_small", func(g *Graph) {
			g.Conv2D(g.Input("x", Shape{1, 1, 2, 5}), g.Input("w", Shape{1, 1, 2, 2}), Conv2DOptions{Dilations: [2]int{2, 1}})
		}, ErrShape, []string{"conv2d", "[1 1 2 5]", "[1 1 2 2]", "dilated kernel 3"}},
		{"conv_negative_stride", func(g *Graph) {
			g.Conv2D(g.Input("x", Shape{1, 1, 2, 2}), g.Input("w", Shape{1, 1, 1, 1}), Conv2DOptions{Strides: [2]int{-1, 1}})
		}, ErrInvalid, []string{"conv2d", "strides"}},
		{"conv_negative_pad", func(g *Graph) {
			g.Conv2D(g.Input("x", Shape{1, 1, 2, 2}), g.Input("w", Shape{1, 1, 1, 1}), Conv2DOptions{Pads: [4]int{0, -1, 0, 0}})
		}, ErrInvalid, []string{"conv2d", "pads"}},
		{"reduce_axis_range", func(g *Graph) { g.ReduceSum(g.Input("x", Shape{2, 3}), []int{2}, false) },
			ErrInvalid, []string{"reduce_sum", "axis 2", "[2 3]"}},
		{"reduce_axis_negative_range", func(g *Graph) { g.ReduceMean(g.Input("x", Shape{2, 3}), []int{-3}, false) },
			ErrInvalid, []string{"reduce_mean", "axis -3", "[2 3]"}},
		{"reduce_dup_axes", func(g *Graph) { g.ReduceMax(g.Input("x", Shape{2, 3}), []int{0, -2}, false) },
			ErrInvalid, []string{"reduce_max", "twice", "[2 3]"}},
		{"softmax_axis", func(g *Graph) { g.Softmax(g.Input("x", Shape{2, 3}), 2) },
			ErrInvalid, []string{"softmax", "axis 2", "[2 3]"}},
		{"softmax_scalar", func(g *Graph) { g.Softmax(g.Scalar(1), 0) }, ErrInvalid, []string{"softmax", "[]"}},
		{"layer_norm_gamma", func(g *Graph) {
			g.LayerNorm(g.Input("x", Shape{2, 3}), []int{-1}, g.Input("gamma", Shape{2}), Value{}, 1e-5)
		}, ErrShape, []string{"layer_norm", "gamma", "[2]", "[2 3]", "want [3]"}},
		{"layer_norm_beta", func(g *Graph) {
			g.LayerNorm(g.Input("x", Shape{2, 3}), nil, Value{}, g.Input("beta", Shape{3, 2}), 1e-5)
		}, ErrShape, []string{"layer_norm", "beta", "[3 2]", "want [2 3]"}},
		{"layer_norm_axes", func(g *Graph) { g.LayerNorm(g.Input("x", Shape{2, 3}), []int{1, 1}, Value{}, Value{}, 0) },
			ErrInvalid, []string{"layer_norm", "twice"}},
		{"layer_norm_epsilon", func(g *Graph) { g.LayerNorm(g.Input("x", Shape{2, 3}), nil, Value{}, Value{}, -1) },
			ErrInvalid, []string{"layer_norm", "epsilon"}},
		{"reshape_size", func(g *Graph) { g.Reshape(g.Input("x", Shape{2, 3}), Shape{4, 2}) },
			ErrShape, []string{"reshape", "[2 3]", "[4 2]"}},
		{"reshape_infer_indivisible", func(g *Graph) { g.Reshape(g.Input("x", Shape{2, 3}), Shape{4, -1}) },
			ErrShape, []string{"reshape", "[2 3]", "[4 -1]"}},
		{"reshape_two_infer", func(g *Graph) { g.Reshape(g.Input("x", Shape{2, 3}), Shape{-1, -1}) },
			ErrInvalid, []string{"reshape", "more than one -1"}},
		{"reshape_zero", func(g *Graph) { g.Reshape(g.Input("x", Shape{2, 3}), Shape{0, 6}) },
			ErrShape, []string{"reshape", "[0 6]"}},
		{"transpose_not_perm", func(g *Graph) { g.Transpose(g.Input("x", Shape{2, 3}), []int{0, 0}) },
			ErrInvalid, []string{"transpose", "[0 0]", "[2 3]"}},
		{"transpose_short", func(g *Graph) { g.Transpose(g.Input("x", Shape{2, 3, 4}), []int{1, 0}) },
			ErrInvalid, []string{"transpose", "[1 0]", "[2 3 4]"}},
		{"transpose_range", func(g *Graph) { g.Transpose(g.Input("x", Shape{2, 3}), []int{2, 0}) },
			ErrInvalid, []string{"transpose", "axis 2"}},
		{"concat_none", func(g *Graph) { g.Concat(0) }, ErrInvalid, []string{"concat", "no values"}},
		{"concat_off_axis", func(g *Graph) { g.Concat(0, g.Input("a", Shape{1, 2}), g.Input("b", Shape{1, 3})) },
			ErrShape, []string{"concat", "[1 2]", "[1 3]", "axis 0"}},
		{"concat_rank", func(g *Graph) { g.Concat(0, g.Input("a", Shape{1, 2}), g.Input("b", Shape{2})) },
			ErrShape, []string{"concat", "[1 2]", "[2]", "rank"}},
		{"concat_axis", func(g *Graph) { g.Concat(2, g.Input("a", Shape{1, 2})) },
			ErrInvalid, []string{"concat", "axis 2", "[1 2]"}},
		{"slice_bounds", func(g *Graph) { g.Slice(g.Input("x", Shape{3, 4}), []int{1, 1}, []int{3, 1}) },
			ErrShape, []string{"slice", "[3 4]", "axis 0"}},
		{"slice_negative_begin", func(g *Graph) { g.Slice(g.Input("x", Shape{3, 4}), []int{-1, 0}, []int{1, 1}) },
			ErrShape, []string{"slice", "[-1 0]", "[3 4]"}},
		{"slice_zero_size", func(g *Graph) { g.Slice(g.Input("x", Shape{3, 4}), []int{0, 0}, []int{0, 1}) },
			ErrShape, []string{"slice", "[0 1]"}},
		{"slice_len", func(g *Graph) { g.Slice(g.Input("x", Shape{3, 4}), []int{0}, []int{1}) },
			ErrInvalid, []string{"slice", "[3 4]"}},
		{"pad_len", func(g *Graph) { g.Pad(g.Input("x", Shape{3, 4}), []int{1, 1}, 0) },
			ErrInvalid, []string{"pad", "[1 1]", "[3 4]", "needs 4"}},
		{"pad_negative", func(g *Graph) { g.Pad(g.Input("x", Shape{3}), []int{1, -1}, 0) },
			ErrInvalid, []string{"pad", "negative"}},
		{"gelu_mode", func(g *Graph) { g.Gelu(g.Input("x", Shape{3}), "FAST") },
			ErrInvalid, []string{"gelu", `"FAST"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := New()
			require.NotPanics(t, func() { c.build(g) })
			err := g.Err()
			require.Error(t, err)
			require.ErrorIs(t, err, c.sentinel)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "dataflow: "), msg)
			for _, s := range c.contains {
				require.Contains(t, msg, s)
			}
			require.Equal(t, err, Verify(g), "Verify reports the builder's error")
			_, evalErr := Eval(g, nil)
			require.Equal(t, err, evalErr, "Eval reports the builder's error")
		})
	}
}

// TestStickyError: after the first error every builder call is a no-op that
// returns the zero Value, and Err keeps returning the first error.
func TestStickyError(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{2, 3})
	bad := g.MatMul(x, x, false, false) // inner dims 3 and 2
	require.False(t, bad.Valid())
	first := g.Err()
	require.ErrorIs(t, first, ErrShape)
	require.Contains(t, first.Error(), "matmul")
	nodes := g.NumNodes()

	later := []Value{
		g.Input("y", Shape{3}),
		g.Const("w", Shape{1}, []float64{1}),
		g.Scalar(1),
		g.Add(x, x),
		g.Add(x, g.Input("z", Shape{4, 4})), // would be a new error
		g.Reshape(x, Shape{7}),              // would be a new error
		g.ReduceSum(x, nil, false),
		g.Concat(0, x, x),
		g.LayerNorm(x, nil, Value{}, Value{}, 0),
	}
	for i, v := range later {
		require.False(t, v.Valid(), "call %d", i)
	}
	g.Output("out", x)
	require.Equal(t, nodes, g.NumNodes(), "no nodes added after the error")
	require.Empty(t, g.Outputs(), "no outputs added after the error")
	require.Len(t, g.Inputs(), 1)
	require.Same(t, first, g.Err())
	require.Same(t, first, Verify(g))
}

func TestVerify(t *testing.T) {
	build := func() (*Graph, Value) {
		g := New()
		x := g.Input("x", Shape{2, 3})
		w := g.Const("w", Shape{3}, []float64{1, 2, 3})
		y := g.Add(x, w)
		g.Output("y", y)
		require.NoError(t, Verify(g))
		return g, y
	}
	cases := []struct {
		name     string
		tamper   func(g *Graph, y Value)
		sentinel error
		contains string
	}{
		{"no_outputs", func(g *Graph, y Value) { g.outputs = nil }, ErrInvalid, "no outputs"},
		{"dangling_input", func(g *Graph, y Value) { g.Node(y).Inputs[1] = 7 }, ErrInvalid, "does not exist"},
		{"negative_input", func(g *Graph, y Value) { g.Node(y).Inputs[0] = -1 }, ErrInvalid, "does not exist"},
		{"input_not_before", func(g *Graph, y Value) {
			// Swap the add to the front: it now reads nodes after it.
			g.nodes[0], g.nodes[2] = g.nodes[2], g.nodes[0]
			g.nodes[0].ID, g.nodes[2].ID = 0, 2
			g.nodes[0].Inputs = []int{2, 1}
			g.inputs = []int{2}
			g.outputs[0].Node = 0
		}, ErrInvalid, "does not precede"},
		{"self_input", func(g *Graph, y Value) { g.Node(y).Inputs[0] = y.ID() }, ErrInvalid, "does not precede"},
		{"bad_id", func(g *Graph, y Value) { g.Node(y).ID = 9 }, ErrInvalid, "has ID 9"},
		{"duplicate_name", func(g *Graph, y Value) { g.nodes[1].Name = "x" }, ErrInvalid, `duplicate name "x"`},
		{"output_dup_name", func(g *Graph, y Value) { g.outputs = append(g.outputs, Output{Name: "x", Node: 2}) }, ErrInvalid, `duplicate name "x"`},
		{"output_dangling", func(g *Graph, y Value) { g.outputs[0].Node = 3 }, ErrInvalid, "does not exist"},
		{"invalid_name", func(g *Graph, y Value) { g.nodes[0].Name = "x y" }, ErrInvalid, `invalid name "x y"`},
		{"wrong_shape", func(g *Graph, y Value) { g.Node(y).Shape = Shape{3, 2} }, ErrShape, "[3 2]"},
		{"wrong_attrs", func(g *Graph, y Value) { g.Node(y).Op = OpSoftmax }, ErrInvalid, "softmax"},
		{"unknown_op", func(g *Graph, y Value) { g.Node(y).Op = "frobnicate" }, ErrInvalid, "unknown op"},
		{"const_data", func(g *Graph, y Value) { g.nodes[1].Data = g.nodes[1].Data[:2] }, ErrShape, "2 values"},
		{"inputs_list", func(g *Graph, y Value) { g.inputs = nil }, ErrInvalid, "input nodes"},
		{"input_shape", func(g *Graph, y Value) { g.nodes[0].Shape = Shape{2, 0} }, ErrShape, "dim 1 = 0"},
		{"nil_node", func(g *Graph, y Value) { g.nodes[1] = nil }, ErrInvalid, "nil"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, y := build()
			c.tamper(g, y)
			var err error
			require.NotPanics(t, func() { err = Verify(g) })
			require.ErrorIs(t, err, c.sentinel)
			require.ErrorContains(t, err, c.contains)
			_, evalErr := Eval(g, map[string][]float64{"x": make([]float64, 6)})
			require.Error(t, evalErr)
		})
	}
	require.ErrorIs(t, Verify(nil), ErrInvalid)
	require.ErrorIs(t, Verify(New()), ErrInvalid)
}

func TestEvalInputErrors(t *testing.T) {
	g := New()
	a := g.Input("a", Shape{2, 3})
	b := g.Input("b", Shape{})
	g.Output("y", g.Mul(a, b))
	ok := map[string][]float64{"a": make([]float64, 6), "b": {1}}
	_, err := Eval(g, ok)
	require.NoError(t, err)

	cases := []struct {
		name     string
		inputs   map[string][]float64
		sentinel error
		want     string
	}{
		{"missing", map[string][]float64{"a": make([]float64, 6)}, ErrInvalid, `dataflow: eval: missing input "b"`},
		{"nil_map", nil, ErrInvalid, `missing input "a"`},
		{"extra", map[string][]float64{"a": make([]float64, 6), "b": {1}, "c": {1}}, ErrInvalid, `unknown input "c"`},
		{"short", map[string][]float64{"a": make([]float64, 5), "b": {1}}, ErrShape, `input "a" has length 5, want 6 (shape [2 3])`},
		{"long_scalar", map[string][]float64{"a": make([]float64, 6), "b": {1, 2}}, ErrShape, `input "b" has length 2, want 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Eval(g, c.inputs)
			require.Nil(t, res)
			require.ErrorIs(t, err, c.sentinel)
			require.ErrorContains(t, err, c.want)
		})
	}
	_, err = Eval(nil, nil)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestZeroValueAndNilGraph(t *testing.T) {
	var v Value
	require.False(t, v.Valid())
	require.Nil(t, v.Shape())
	require.Equal(t, DType(0), v.DType())

	g := New()
	require.Nil(t, g.Node(v))
	other := New()
	ov := other.Input("x", Shape{2})
	require.Nil(t, g.Node(ov))
	require.Equal(t, Shape{2}, ov.Shape())
	require.Equal(t, Float16, ov.DType())

	s := g.Scalar(3)
	require.Equal(t, Shape{}, s.Shape())
	require.NotNil(t, s.Shape(), "a scalar's shape is empty, not nil")
	require.Empty(t, g.Node(s).Name, "scalars are anonymous")
	require.Equal(t, OpConst, g.Node(s).Op)

	// Shape returns a copy.
	sh := ov.Shape()
	sh[0] = 5
	require.Equal(t, Shape{2}, ov.Shape())

	var ng *Graph
	require.NotPanics(t, func() {
		require.False(t, ng.Input("x", Shape{1}).Valid())
		require.False(t, ng.Add(Value{}, Value{}).Valid())
		ng.Output("y", Value{})
		require.Zero(t, ng.NumNodes())
		require.Nil(t, ng.Nodes())
		require.Nil(t, ng.Node(Value{}))
		require.ErrorIs(t, ng.Err(), ErrInvalid)
		require.NotEmpty(t, ng.String())
	})

	// The zero Graph works like New().
	var zg Graph
	zg.Output("y", zg.Neg(zg.Input("x", Shape{1})))
	require.NoError(t, Verify(&zg))
}

func TestNamesAndScalarsDoNotClash(t *testing.T) {
	g := New()
	x := g.Input("_x9", Shape{2})
	for range 3 {
		x = g.Add(x, g.Scalar(1))
	}
	g.Output("Out_1", x)
	require.NoError(t, Verify(g))
	res, err := Eval(g, map[string][]float64{"_x9": {0, 1}})
	require.NoError(t, err)
	require.Equal(t, []float64{3, 4}, res["Out_1"])

	// One value may be output under several names.
	g.Output("again", x)
	require.NoError(t, g.Err())
	require.Equal(t, []Output{{"Out_1", x.ID()}, {"again", x.ID()}}, g.Outputs())
}

func TestDTypeAndOpStrings(t *testing.T) {
	require.Equal(t, "fp16", Float16.String())
	require.Equal(t, "fp32", Float32.String())
	require.Equal(t, "int32", Int32.String())
	require.Equal(t, "bool", Bool.String())
	require.Equal(t, "DType(9)", DType(9).String())
	require.Equal(t, "[]", Shape{}.String())
	require.Equal(t, "[1 2]", Shape{1, 2}.String())
}

func TestGraphString(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{2, 3})
	w := g.Const("w", Shape{3, 4}, make([]float64, 12))
	y := g.MatMul(x, w, false, false)
	z := g.ReduceSum(g.Add(y, g.Scalar(0.5)), []int{-1}, true)
	g.Output("z", z)
	s := g.String()
	for _, want := range []string{
		"dataflow.Graph: 6 nodes, 1 inputs, 1 outputs",
		"%0 = input x [2 3] fp16",
		"%1 = const w [3 4] fp16",
		"%2 = matmul(%0, %1) [2 4] fp16 {transpose_x=false transpose_y=false}",
		"%3 = const [] fp16 {val=0.5}",
		"%4 = add(%2, %3) [2 4] fp16",
		"%5 = reduce_sum(%4) [2 1] fp16 {axes=[1] keep_dims=true}",
		"output z = %5",
	} {
		require.Contains(t, s, want)
	}
	g.Softmax(x, 5)
	require.Contains(t, g.String(), "error: dataflow: softmax")
}

// buildChain builds a graph of about 3n nodes: n named consts and a chain of
// n adds and n muls.
func buildChain(n int) *Graph {
	g := New()
	v := g.Input("x", Shape{4})
	for i := range n {
		c := g.Const(fmt.Sprintf("c%d", i), Shape{4}, []float64{1, 2, 3, 4})
		v = g.Mul(g.Add(v, c), g.Scalar(0.5))
	}
	g.Output("y", v)
	return g
}

// TestBuildLargeGraph builds, verifies and evaluates a 30 000-node graph. An
// O(n²) step (a name scan per node) would take seconds here; the whole test
// takes milliseconds (logged).
func TestBuildLargeGraph(t *testing.T) {
	start := time.Now()
	g := buildChain(10000)
	require.NoError(t, g.Err())
	require.Equal(t, 1+10000*4, g.NumNodes())
	require.NoError(t, Verify(g))
	res, err := Eval(g, map[string][]float64{"x": {0, 0, 0, 0}})
	require.NoError(t, err)
	// v ← (v + c)/2 converges to c from 0: after 10000 steps v = c(1 − 2⁻¹⁰⁰⁰⁰) = c.
	require.Equal(t, []float64{1, 2, 3, 4}, res["y"])
	// Wall-clock time is logged, not asserted (no test asserts on it).
	t.Logf("built, verified and evaluated %d nodes in %v", g.NumNodes(), time.Since(start))
}

func BenchmarkBuild10k(b *testing.B) {
	for b.Loop() {
		g := buildChain(2500) // 10 001 nodes
		if g.Err() != nil {
			b.Fatal(g.Err())
		}
	}
}

func TestErrorsAreWrapped(t *testing.T) {
	// Errors wrap exactly one sentinel, and errors.Is distinguishes them.
	g := New()
	g.Input("x", Shape{1, 1, 1, 1, 1, 1})
	require.True(t, errors.Is(g.Err(), ErrShape))
	require.False(t, errors.Is(g.Err(), ErrInvalid))
}

func TestLookup(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{2})
	w := g.Const("w", Shape{2}, []float64{1, 2})
	g.Output("y", g.Mul(x, w))
	got, ok := g.Lookup("w")
	require.True(t, ok)
	require.Equal(t, w.ID(), got.ID())
	got, ok = g.Lookup("x")
	require.True(t, ok)
	require.Equal(t, x.ID(), got.ID())
	_, ok = g.Lookup("y")
	require.False(t, ok, "outputs are not values to look up")
	_, ok = (*Graph)(nil).Lookup("w")
	require.False(t, ok)
}

func TestValueOf(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{2})
	y := g.Relu(x)
	v, ok := g.ValueOf(y.ID())
	require.True(t, ok)
	require.Equal(t, y.Shape(), v.Shape())
	_, ok = g.ValueOf(99)
	require.False(t, ok)
}
