package sim_test

import (
	"fmt"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim/sim"
)

// Example compiles a program that adds two vectors of three elements and
// runs it. The inputs arrive in the device layout [1, C, 1, S] (one row of
// three values padded to 32), so the program slices the padding off, adds,
// and pads the result back. 0.1 and 0.2 are rounded to fp16 on the way in,
// and their sum is rounded to fp16 again.
func Example() {
	src := `program(1.3)
[buildInfo = dict<string, string>({{"coremlc-version", "3505.4.1"}})]
{
    func main<ios18>(tensor<fp16, [1, 1, 1, 32]> a, tensor<fp16, [1, 1, 1, 32]> b) {
        tensor<int32, [4]> begin = const()[name = string("begin"), val = tensor<int32, [4]>([0, 0, 0, 0])];
        tensor<int32, [4]> size = const()[name = string("size"), val = tensor<int32, [4]>([1, 1, 1, 3])];
        tensor<fp16, [1, 1, 1, 3]> a3 = slice_by_size(begin = begin, size = size, x = a)[name = string("a3")];
        tensor<fp16, [1, 1, 1, 3]> b3 = slice_by_size(begin = begin, size = size, x = b)[name = string("b3")];
        tensor<fp16, [1, 1, 1, 3]> s = add(x = a3, y = b3)[name = string("s")];
        tensor<int32, [8]> pad = const()[name = string("pad"), val = tensor<int32, [8]>([0, 0, 0, 0, 0, 0, 0, 29])];
        tensor<fp16, [1, 1, 1, 32]> sum = pad(pad = pad, x = s)[name = string("sum")];
    } -> (sum);
}
`
	spec := func(name string) lower.IOSpec {
		return lower.IOSpec{Name: name, Shape: []int{3}, DeviceShape: []int{1, 1, 1, 32}}
	}
	p := &lower.Program{
		MIL:     []byte(src),
		Inputs:  []lower.IOSpec{spec("a"), spec("b")},
		Outputs: []lower.IOSpec{spec("sum")},
		Target:  "sim",
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
	fmt.Println(out[0])
	// Output: [11 2.5 0.2998047]
}
