package ane_test

import (
	"fmt"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim/ane"
)

// ExampleParseLayout shows the pure-Go half of a dispatch: the layout a
// compiled model reports (here written by hand), bound to the program's
// input, sized as a surface, and an input packed at the reported strides.
func ExampleParseLayout() {
	attrs := map[string]any{
		"NetworkStatusList": []any{map[string]any{
			"LiveInputList": []any{map[string]any{
				"Name": "x", "Symbol": "x", "Type": "Float16",
				"Channels": 2, "Height": 1, "Width": 32, "RowStride": 128, "PlaneStride": 128,
			}},
			"LiveOutputList": []any{map[string]any{
				"Name": "y", "Symbol": "y", "Type": "Float16",
				"Channels": 1, "Height": 1, "Width": 32, "RowStride": 64, "PlaneStride": 64,
			}},
		}},
		"ANEFModelDescription": map[string]any{
			"kANEFModelInputSymbolsArrayKey":  []any{"x"},
			"kANEFModelOutputSymbolsArrayKey": []any{"y"},
		},
	}
	prog := &lower.Program{
		Inputs:  []lower.IOSpec{{Name: "x", Shape: []int{2, 3}, DeviceShape: []int{1, 2, 1, 32}}},
		Outputs: []lower.IOSpec{{Name: "y", Shape: []int{3}, DeviceShape: []int{1, 1, 1, 32}}},
	}
	layout, err := ane.ParseLayout(attrs)
	if err != nil {
		fmt.Println(err)
		return
	}
	in, out, err := ane.Bind(layout, prog)
	if err != nil {
		fmt.Println(err)
		return
	}
	inS, outS := ane.PlanSurfaces(ane.PortTensors(in), ane.PortTensors(out), ane.SurfaceOptions{PadToLargest: true})
	fmt.Printf("input %s: index %d, surface %+v\n", in[0].Spec.Name, in[0].Tensor.Index, inS[0])
	fmt.Printf("output %s: index %d, surface %+v\n", out[0].Spec.Name, out[0].Tensor.Index, outS[0])

	buf := make([]byte, inS[0].AllocSize)
	if err := in[0].Pack(buf, []float32{1, 2, 3, 4, 5, 70000}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// input x: index 0, surface {Width:32 Height:2 BytesPerElement:2 BytesPerRow:128 AllocSize:256 PixelFormat:0}
	// output y: index 0, surface {Width:32 Height:1 BytesPerElement:2 BytesPerRow:64 AllocSize:256 PixelFormat:0}
	// ane: input "x" element 5 = 70000 does not fit fp16 (|x| rounds past 65504, or NaN): shim: value out of fp16 range
}
