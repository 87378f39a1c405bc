package dataflow_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/dataflow"
)

// TestShapeSizeSaturates: an element count past math.MaxInt saturates
// instead of wrapping (65536⁴ = 2⁶⁴ wrapped to 0).
func TestShapeSizeSaturates(t *testing.T) {
	for _, c := range []struct {
		s    dataflow.Shape
		want int
	}{
		{sh(65536, 65536, 65536, 65536), math.MaxInt},
		{sh(1<<62, 4), math.MaxInt},
		{sh(1<<32, 1<<32), math.MaxInt},
		{sh(math.MaxInt, 1), math.MaxInt},
		{sh(1<<31, 1<<31), 1 << 62},
		{sh(1<<40, 1<<40, 0), 0},
		{sh(), 1},
		{sh(2, 3, 4), 24},
	} {
		if got := c.s.Size(); got != c.want {
			t.Errorf("Size(%v) = %d, want %d", c.s, got, c.want)
		}
	}
}

// TestOverflowingShapesRefused: Input and Const refuse a shape whose
// element count overflows int (Const accepted [65536 65536 65536 65536]
// with no data, its Size having wrapped to 0), and every op refuses a
// result that would: Slice's bound check (begin + size wrapped and passed),
// Reshape's −1 (the known dims' product wrapped to 0: a division by zero),
// Pad, Concat, broadcasting and Conv2D's padding.
func TestOverflowingShapesRefused(t *testing.T) {
	big := sh(65536, 65536, 65536, 65536)
	cases := []struct {
		name  string
		build func(g *dataflow.Graph)
		msg   string
	}{
		{"input", func(g *dataflow.Graph) { g.Input("x", big) }, "more elements than an int counts"},
		{"const", func(g *dataflow.Graph) { g.Const("c", big, nil) }, "more elements than an int counts"},
		{"slice", func(g *dataflow.Graph) { g.Slice(g.Input("x", sh(4)), []int{1}, []int{math.MaxInt}) }, "out of bounds"},
		{"reshape -1", func(g *dataflow.Graph) { g.Reshape(g.Input("x", sh(4)), sh(-1, 1<<32, 1<<32)) }, "multiply past"},
		{"reshape", func(g *dataflow.Graph) { g.Reshape(g.Input("x", sh(1)), sh(1<<32, 1<<32, 1)) }, "multiply past"},
		{"pad", func(g *dataflow.Graph) { g.Pad(g.Input("x", sh(2)), []int{math.MaxInt, 5}, 0) }, "longer than an int counts"},
		{"pad result", func(g *dataflow.Graph) {
			g.Pad(g.Input("x", sh(2, 2, 2)), []int{1 << 30, 0, 1 << 30, 0, 1 << 30, 0}, 0)
		}, "more elements than an int counts"},
		{"concat", func(g *dataflow.Graph) { x := g.Input("x", sh(math.MaxInt)); g.Concat(0, x, x) }, "longer than an int counts"},
		{"broadcast", func(g *dataflow.Graph) { g.Add(g.Input("x", sh(1<<32, 1)), g.Input("y", sh(1, 1<<32))) }, "more elements than an int counts"},
		{"conv pads", func(g *dataflow.Graph) {
			g.Conv2D(g.Input("x", sh(1, 1, 2, 2)), g.Input("w", sh(1, 1, 1, 1)), dataflow.Conv2DOptions{Pads: [4]int{math.MaxInt, 1, 0, 0}})
		}, "longer than an int counts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := dataflow.New()
			c.build(g)
			err := g.Err()
			if !errors.Is(err, dataflow.ErrShape) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want ErrShape saying %q", err, c.msg)
			}
		})
	}
}

// TestVerifyRefusesOverflowingShape: an input node edited to a shape whose
// element count overflows int is caught by Verify (and so by Eval).
func TestVerifyRefusesOverflowingShape(t *testing.T) {
	g := dataflow.New()
	x := g.Input("x", sh(2))
	g.Output("y", g.Neg(x))
	g.Node(x).Shape = sh(1<<32, 1<<32)
	if err := dataflow.Verify(g); !errors.Is(err, dataflow.ErrShape) || !strings.Contains(err.Error(), "more elements than an int counts") {
		t.Fatalf("Verify: %v, want ErrShape about the element count", err)
	}
}

// TestEvalRefusesHugeNode: a legal graph whose live node has 2⁶⁰ elements
// is an error, not a makeslice panic.
func TestEvalRefusesHugeNode(t *testing.T) {
	g := dataflow.New()
	x := g.Input("x", sh(2, 2, 2))
	y := g.Pad(x, []int{1 << 20, 0, 1 << 20, 0, 1 << 20, 0}, 0)
	g.Output("s", g.ReduceSum(y, nil, false))
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	_, err := dataflow.Eval(g, map[string][]float64{"x": make([]float64, 8)})
	if !errors.Is(err, dataflow.ErrShape) || !strings.Contains(err.Error(), "node 1 (pad)") {
		t.Fatalf("Eval: %v, want ErrShape naming node 1 (pad)", err)
	}
}

// TestConcatRankZero: concatenating scalars said "axis 0 out of range for
// shape []" (ErrInvalid); the rule is that Concat needs rank ≥ 1.
func TestConcatRankZero(t *testing.T) {
	g := dataflow.New()
	s := g.Scalar(1)
	g.Concat(0, s, s)
	if err := g.Err(); !errors.Is(err, dataflow.ErrShape) || !strings.Contains(err.Error(), "cannot concatenate rank-0 values") {
		t.Fatalf("err = %v, want ErrShape about rank-0 values", err)
	}
}
