package lower_test

import (
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
)

// Estimate prices a lowered program per ANE family: here a 3×3 stencil
// (one conv) over a 128×192 grid (its surface just meets the engine's
// 49152-byte minimum, so the lowering pads nothing), as the lowering emits
// it for the simulator.
func ExampleEstimate() {
	g := dataflow.New()
	grid := g.Input("u", dataflow.Shape{1, 1, 128, 192})
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
	// The conv reads 24576 + 9 values and writes 24576, 2 bytes each, and
	// does 2·9 flops per output; the lowering's two reshapes move 24576 in
	// and 24576 out each. Bandwidth-bound: M1 adds 294930 B / 9 GB/s to
	// its 220 µs floor; M5 keeps the two values between the reshapes and
	// the conv on chip, and adds the 98322 B of input, output and weight /
	// 57 GB/s to its 110 µs.

	// Output:
	// ane-m1: conv 98322 bytes, 442368 flops; program 3 nodes, 294930 bytes, 252.77µs
	// ane-m5: conv 98322 bytes, 442368 flops; program 3 nodes, 294930 bytes, 111.725µs
}
