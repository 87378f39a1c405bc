package dataflow

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every elementwise op's facts are its descriptor: each one must give Eval
// a definition and Grad a rule, and the generic builders must build what
// the op's own builder does. (lower and shim/shimtest check that their
// tables cover UnaryOps and BinaryOps.)
func TestElementwiseDescriptors(t *testing.T) {
	un, bin := UnaryOps(), BinaryOps()
	require.NotEmpty(t, un)
	require.NotEmpty(t, bin)
	require.True(t, slices.IsSorted(un))
	require.True(t, slices.IsSorted(bin))
	for _, op := range un {
		require.NotContains(t, bin, op)
	}
	x := []float64{0.25, 0.5, 1, 2, 3, 4}
	sh := Shape{2, 3}
	for _, op := range un {
		d := unaryOps[op]
		require.NotNil(t, d.eval, "%s has no Eval definition", op)
		require.NotNil(t, d.grad, "%s has no gradient rule", op)
		require.Equal(t, 1, arity(op), "%s", op)

		// The generic builder and the shape rule.
		g := New()
		in := g.Input("x", sh)
		y := g.Unary(op, Attrs{Gelu: GeluTanh, Axis: 1, Epsilon: 3}, in)
		require.NoError(t, g.Err(), "%s", op)
		n := g.Node(y)
		require.Equal(t, op, n.Op)
		require.Equal(t, sh, n.Shape)
		want := Attrs{}
		if d.attrs != nil {
			want = d.attrs(Attrs{Gelu: GeluTanh})
		}
		require.Equal(t, want, n.Attrs, "%s keeps only the attributes its builder takes", op)
		g.Output("y", y)
		require.NoError(t, Verify(g))

		// Eval is the descriptor's function, element by element.
		out, err := Eval(g, map[string][]float64{"x": x})
		require.NoError(t, err)
		f := d.eval(&n.Attrs)
		for i, v := range x {
			require.Equal(t, f(v), out["y"][i], "%s(%g)", op, v)
		}

		// Grad has a rule (gelu's in its tanh mode: exact gelu has none).
		gg := New()
		gx := gg.Input("x", sh)
		gy := gg.Unary(op, Attrs{Gelu: GeluTanh}, gx)
		dx := gg.Grad(gg.ReduceSum(gy, nil, false), gx)
		require.NoError(t, gg.Err(), "%s", op)
		require.True(t, dx[0].Valid(), "%s", op)
		require.Equal(t, sh, dx[0].Shape())
	}
	for _, op := range bin {
		d := binaryOps[op]
		require.NotNil(t, d.eval, "%s has no Eval definition", op)
		require.NotNil(t, d.grad, "%s has no gradient rule", op)
		require.Equal(t, 2, arity(op), "%s", op)

		g := New()
		a, b := g.Input("a", sh), g.Input("b", Shape{1, 3})
		y := g.Binary(op, a, b)
		require.NoError(t, g.Err(), "%s", op)
		n := g.Node(y)
		require.Equal(t, op, n.Op)
		require.Equal(t, sh, n.Shape, "%s broadcasts", op)
		require.Equal(t, Attrs{}, n.Attrs)
		g.Output("y", y)
		bv := []float64{0.5, 2, 3}
		out, err := Eval(g, map[string][]float64{"a": x, "b": bv})
		require.NoError(t, err)
		for i, v := range x {
			require.Equal(t, d.eval(v, bv[i%3]), out["y"][i], "%s(%g, %g)", op, v, bv[i%3])
		}

		gg := New()
		ga, gb := gg.Input("a", sh), gg.Input("b", Shape{1, 3})
		ds := gg.Grad(gg.ReduceSum(gg.Binary(op, ga, gb), nil, false), ga, gb)
		require.NoError(t, gg.Err(), "%s", op)
		require.Equal(t, sh, ds[0].Shape())
		require.Equal(t, Shape{1, 3}, ds[1].Shape())

		// A broadcast failure is reported as the builders report it.
		bad := New()
		bad.Binary(op, bad.Input("a", sh), bad.Input("b", Shape{2, 2}))
		require.ErrorIs(t, bad.Err(), ErrShape)
		require.Contains(t, bad.Err().Error(), "dataflow: "+string(op)+": shapes [2 3] and [2 2] do not broadcast")
	}
}

// The generic builders refuse the ops of other families, and do nothing
// after an error, as every builder.
func TestElementwiseGenericBuildersRefuseOtherOps(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{2})
	require.False(t, g.Unary(OpAdd, Attrs{}, x).Valid())
	require.True(t, errors.Is(g.Err(), ErrInvalid))
	require.Contains(t, g.Err().Error(), "add: not an elementwise unary op")

	g = New()
	x = g.Input("x", Shape{2})
	require.False(t, g.Binary(OpSoftmax, x, x).Valid())
	require.ErrorIs(t, g.Err(), ErrInvalid)
	require.Contains(t, g.Err().Error(), "softmax: not an elementwise binary op")
	first := g.Err()
	require.False(t, g.Unary(OpSoftmax, Attrs{}, x).Valid())
	require.False(t, g.Binary(OpAdd, x, x).Valid())
	require.Equal(t, first, g.Err())

	var nilGraph *Graph
	require.False(t, nilGraph.Unary(OpAdd, Attrs{}, Value{}).Valid())
	require.False(t, nilGraph.Binary(OpNeg, Value{}, Value{}).Valid())
}

// Gelu's empty mode is stored as GeluExact, through either builder.
func TestGeluModeNormalizedByDescriptor(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{2})
	a := g.Gelu(x, "")
	b := g.Unary(OpGelu, Attrs{}, x)
	require.NoError(t, g.Err())
	require.Equal(t, GeluExact, g.Node(a).Attrs.Gelu)
	require.Equal(t, GeluExact, g.Node(b).Attrs.Gelu)
	g.Gelu(x, "BOGUS")
	require.ErrorIs(t, g.Err(), ErrInvalid)
	require.Contains(t, g.Err().Error(), `dataflow: gelu: unknown mode "BOGUS"`)
}

func TestElementwiseArity(t *testing.T) {
	for _, op := range UnaryOps() {
		if n := ElementwiseArity(op); n != 1 {
			t.Errorf("ElementwiseArity(%s) = %d, want 1", op, n)
		}
	}
	for _, op := range BinaryOps() {
		if n := ElementwiseArity(op); n != 2 {
			t.Errorf("ElementwiseArity(%s) = %d, want 2", op, n)
		}
	}
	for _, op := range []Op{OpMatMul, OpConv2D, OpReshape, "nonsense"} {
		if n := ElementwiseArity(op); n != 0 {
			t.Errorf("ElementwiseArity(%s) = %d, want 0", op, n)
		}
	}
}
