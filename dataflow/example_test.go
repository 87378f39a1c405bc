package dataflow_test

import (
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
)

// Example builds y = relu(W·x + b) for a 2×3 weight and evaluates it.
func Example() {
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{3, 1})
	w := g.Const("W", dataflow.Shape{2, 3}, []float64{
		1, 2, 3,
		-1, -2, -3,
	})
	b := g.Const("b", dataflow.Shape{2, 1}, []float64{0.5, 1})
	y := g.Relu(g.Add(g.MatMul(w, x, false, false), b))
	g.Output("y", y)
	if err := dataflow.Verify(g); err != nil {
		fmt.Println(err)
		return
	}

	out, err := dataflow.Eval(g, map[string][]float64{"x": {1, 1, 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(y.Shape(), out["y"])
	// Output: [2 1] [6.5 0]
}

// Example_stickyError shows that the first mistake is kept and later calls
// do nothing.
func Example_stickyError() {
	g := dataflow.New()
	a := g.Input("a", dataflow.Shape{2, 3})
	c := g.Input("c", dataflow.Shape{4, 3})
	s := g.Add(a, c)           // shapes do not broadcast: recorded
	t := g.Mul(s, g.Scalar(2)) // a no-op returning the zero Value
	g.Output("t", t)
	fmt.Println(t.Valid())
	fmt.Println(g.Err())
	// Output:
	// false
	// dataflow: add: shapes [2 3] and [4 3] do not broadcast: dataflow: shape mismatch
}
