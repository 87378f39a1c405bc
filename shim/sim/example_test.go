package sim_test

import (
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/sim"
)

// Example compiles a program that adds and subtracts two vectors of three
// elements and runs it. The engine binds one input surface, [1, C, 1, S],
// of at least 49152 bytes: the two vectors are its rows 0 and 1, each
// padded to the 12288 elements that size needs, so the program slices them
// apart at channel offsets, drops the padding, computes, and pads the
// sum and the difference back into the rows of the one output surface.
// 0.1 and 0.2 are rounded to fp16 on the way in, and their sum is rounded
// to fp16 again (a tie, to even).
func Example() {
	src := `program(1.3)
[buildInfo = dict<string, string>({{"coremlc-version", "3505.4.1"}})]
{
    func main<ios18>(tensor<fp16, [1, 2, 1, 12288]> input) {
        tensor<int32, [4]> ba = const()[name = string("ba"), val = tensor<int32, [4]>([0, 0, 0, 0])];
        tensor<int32, [4]> bb = const()[name = string("bb"), val = tensor<int32, [4]>([0, 1, 0, 0])];
        tensor<int32, [4]> size = const()[name = string("size"), val = tensor<int32, [4]>([1, 1, 1, 3])];
        tensor<fp16, [1, 1, 1, 3]> a = slice_by_size(begin = ba, size = size, x = input)[name = string("a")];
        tensor<fp16, [1, 1, 1, 3]> b = slice_by_size(begin = bb, size = size, x = input)[name = string("b")];
        tensor<fp16, [1, 1, 1, 3]> s = add(x = a, y = b)[name = string("s")];
        tensor<fp16, [1, 1, 1, 3]> d = sub(x = a, y = b)[name = string("d")];
        tensor<int32, [8]> pad = const()[name = string("pad"), val = tensor<int32, [8]>([0, 0, 0, 0, 0, 0, 0, 12285])];
        tensor<fp16, [1, 1, 1, 12288]> sp = pad(pad = pad, x = s)[name = string("sp")];
        tensor<fp16, [1, 1, 1, 12288]> dp = pad(pad = pad, x = d)[name = string("dp")];
        int32 axis = const()[name = string("axis"), val = int32(1)];
        bool interleave = const()[name = string("interleave"), val = bool(false)];
        tensor<fp16, [1, 2, 1, 12288]> output = concat(axis = axis, interleave = interleave, values = (sp, dp))[name = string("output")];
    } -> (output);
}
`
	spec := func(name string, row int) lower.IOSpec {
		return lower.IOSpec{Name: name, Shape: []int{3}, DeviceShape: []int{1, 1, 1, 12288}, Channel: row}
	}
	p := &lower.Program{
		MIL:            []byte(src),
		Inputs:         []lower.IOSpec{spec("a", 0), spec("b", 1)},
		Outputs:        []lower.IOSpec{spec("sum", 0), spec("difference", 1)},
		InputSurfaces:  []lower.Surface{{Name: "input", Shape: []int{1, 2, 1, 12288}}},
		OutputSurfaces: []lower.Surface{{Name: "output", Shape: []int{1, 2, 1, 12288}}},
		Target:         "sim",
	}
	dev := sim.New(sim.Wide)
	defer dev.Close()
	exe, err := dev.Compile(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := exe.Run([][]float32{{1, 2, 0.1}, {10, 0.5, 0.2}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out[0], out[1])
	// Output: [11 2.5 0.2998047] [-9 1.5 -0.099975586]
}

// ExampleDevice_Headroom asks how close a run came to the engine's
// cliffs: a dot product of 32 values of 1000 is 32000, within 2.3 % of
// the 32752 at which a matmul output becomes Inf on the engine.
func ExampleDevice_Headroom() {
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, 32})
	ones := make([]float64, 32)
	for i := range ones {
		ones[i] = 1
	}
	g.Output("dot", g.MatMul(x, g.Const("ones", dataflow.Shape{32, 1}, ones), false, false))
	p, err := lower.Lower(g, lower.TargetSim)
	if err != nil {
		fmt.Println(err)
		return
	}
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	d, _ := sim.Backend(dev) // shim.Open wraps the simulator in a cache
	d.RecordHeadroom(true)
	exe, err := dev.Compile(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	xs := make([]float32, 32)
	for i := range xs {
		xs[i] = 1000
	}
	out, err := exe.Run([][]float32{xs})
	if err != nil {
		fmt.Println(err)
		return
	}
	w := d.Headroom().Worst()
	fmt.Printf("dot = %g; worst op %s: max |output| %g of %g (ratio %.3f)\n", out[0][0], w.Op, w.Max, w.Cliff, w.Ratio())
	// Output: dot = 32000; worst op conv: max |output| 32000 of 32752 (ratio 0.977)
}
