package shim_test

import (
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// Build a graph, lower and compile it on the simulator, and run it. The
// second run overflows fp16 inside the program, and Run says so.
func Example() {
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, 3})
	g.Output("y", g.Mul(x, g.Scalar(3)))
	exe, err := shim.Build(dev, g)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := exe.Run([][]float32{{1, 0.1, -2}})
	fmt.Println(out[0], err)
	_, err = exe.Run([][]float32{{1, 30000, -2}})
	fmt.Println(err)
	// Output:
	// [3 0.2998047 -6] <nil>
	// sim: output "y" element 1 is +Inf: fp16 overflow
}
