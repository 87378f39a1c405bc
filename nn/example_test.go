package nn_test

import (
	"bytes"
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// Build a linear layer from a safetensors file and run it on the
// simulator.
func Example() {
	var file bytes.Buffer
	err := nn.WriteSafetensors(&file, nn.Weights{
		"fc.weight": {Name: "fc.weight", DType: nn.F16, Shape: []int{2, 3}, Data: []float64{1, 2, 3, -1, 0, 1}},
		"fc.bias":   {Name: "fc.bias", DType: nn.F16, Shape: []int{2}, Data: []float64{0.5, -0.5}},
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ws, err := nn.ReadSafetensors(&file)
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := ws.Get("fc.weight", 2, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := ws.Get("fc.bias", 2)
	if _, err := ws.Get("fc2.weight"); err != nil {
		fmt.Println(err)
	}

	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, 3}) // one row of 3 features
	g.Output("y", nn.ReLU(g, nn.Linear(g, x, w, b)))
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	exe, err := shim.Build(dev, g)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := exe.Run([][]float32{{1, 1, 1}})
	fmt.Println(out[0], err)
	// Output:
	// nn: weight "fc2.weight" is missing (the file holds 2 tensors): nn: bad weight
	// [6.5 0] <nil>
}

// Softmax keeps logits far beyond exp's fp16 range finite.
func ExampleSoftmax() {
	g := dataflow.New()
	x := g.Input("logits", dataflow.Shape{1, 3})
	g.Output("p", nn.Softmax(g, x, -1))
	dev, _ := shim.Open("sim")
	defer dev.Close()
	exe, err := shim.Build(dev, g)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := exe.Run([][]float32{{16000, 16000, 15992}})
	fmt.Printf("%.4f %.4f %.6f %v %v\n", out[0][0], out[0][1], out[0][2], math.IsNaN(float64(out[0][2])), err)
	// Output: 0.5000 0.5000 0.000168 false <nil>
}
