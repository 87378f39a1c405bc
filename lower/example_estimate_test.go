package lower_test

import (
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
)

// Estimate prices a lowered program per ANE family: here a 3×3 stencil
// (one conv) over a 64×64 grid, as the lowering emits it for the
// simulator, I/O slices and pads included.
func ExampleEstimate() {
	g := dataflow.New()
	grid := g.Input("u", dataflow.Shape{1, 1, 64, 64})
	k := g.Const("k", dataflow.Shape{1, 1, 3, 3}, []float64{0, -1, 0, -1, 4, -1, 0, -1, 0})
	g.Output("v", g.Conv2D(grid, k, dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}}))
	p, err := lower.Lower(g, lower.TargetSim)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, target := range []string{"ane-m1", "ane-m5"} {
		c, err := lower.Estimate(p, target)
		if err != nil {
			fmt.Println(err)
			return
		}
		var conv lower.NodeCost
		for _, n := range c.PerNode {
			if n.Op == "conv" {
				conv = n
			}
		}
		fmt.Printf("%s: conv %d bytes, %d flops; program %d nodes, %d bytes, %v\n",
			c.Target, conv.Bytes, conv.Flops, c.Nodes, c.Bytes, c.Time)
	}
	// The conv reads 4096 + 9 values and writes 4096, 2 bytes each, and
	// does 2·9 flops per output; the lowering's two reshapes move 4096 in
	// and 4096 out each. Bandwidth-bound: M1 adds 49170 B / 9 GB/s to its
	// 220 µs floor; M5 keeps the two values between the reshapes and the
	// conv on chip, and adds the 16402 B of input, output and weight /
	// 57 GB/s to its 110 µs.

	// Output:
	// ane-m1: conv 16402 bytes, 73728 flops; program 3 nodes, 49170 bytes, 225.463µs
	// ane-m5: conv 16402 bytes, 73728 flops; program 3 nodes, 49170 bytes, 110.288µs
}
