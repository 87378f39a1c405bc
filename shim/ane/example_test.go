package ane_test

import (
	"fmt"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim/ane"
)

// ExampleParseLayout shows the pure-Go half of a dispatch: the layout a
// compiled model reports (written here by hand, in the shape of the
// dictionaries logged on real Macs), bound to a program with packed I/O,
// sized as surfaces, and two logical inputs packed into the one input
// surface at the reported strides.
func ExampleParseLayout() {
	entry := func(name string, channels int) map[string]any {
		return map[string]any{
			"Name": name, "Symbol": name, "Type": "Float16",
			"Batches": 1, "Depth": 1, "Interleave": 1, "PlaneCount": channels,
			"Channels": channels, "Height": 1, "Width": 32,
			"RowStride": 64, "PlaneStride": 64, "BatchStride": channels * 64,
		}
	}
	attrs := map[string]any{
		"NetworkStatusList": []any{map[string]any{
			"LiveInputList":  []any{entry("input", 3)},
			"LiveOutputList": []any{entry("output@output", 1)},
		}},
		"ANEFModelDescription": map[string]any{
			"kANEFModelInputSymbolsArrayKey":  []any{"input"},
			"kANEFModelOutputSymbolsArrayKey": []any{"output@output"},
			"ANEFModelProcedures": []any{map[string]any{
				"ANEFModelProcedureID":            0,
				"ANEFModelInputSymbolIndexArray":  []any{0},
				"ANEFModelOutputSymbolIndexArray": []any{0},
			}},
		},
	}
	prog := &lower.Program{
		Inputs: []lower.IOSpec{
			{Name: "a", Shape: []int{2, 3}, DeviceShape: []int{1, 2, 1, 32}, Channel: 0},
			{Name: "b", Shape: []int{3}, DeviceShape: []int{1, 1, 1, 32}, Channel: 2},
		},
		Outputs:        []lower.IOSpec{{Name: "y", Shape: []int{3}, DeviceShape: []int{1, 1, 1, 32}}},
		InputSurfaces:  []lower.Surface{{Name: "input", Shape: []int{1, 3, 1, 32}}},
		OutputSurfaces: []lower.Surface{{Name: "output", Shape: []int{1, 1, 1, 32}}},
	}
	layout, err := ane.ParseLayout(attrs)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := ane.Bind(layout, prog)
	if err != nil {
		fmt.Println(err)
		return
	}
	in, out := b.Inputs, b.Outputs
	inS, outS := ane.PlanSurfaces(ane.PortTensors(in), ane.PortTensors(out), ane.SurfaceOptions{PadToLargest: true})
	for _, m := range in[0].Members {
		fmt.Printf("input %s: rows %d.. of surface %q\n", m.Spec.Name, m.Row, in[0].Name)
	}
	fmt.Printf("surface %q (%s): index %d, %+v\n", in[0].Name, in[0].Tensor.Name, in[0].Tensor.Index, inS[0])
	fmt.Printf("surface %q (%s): index %d, %+v\n", out[0].Name, out[0].Tensor.Name, out[0].Tensor.Index, outS[0])

	buf := make([]byte, inS[0].AllocSize)
	if err := in[0].Pack(buf, [][]float32{{1, 2, 3, 4, 5, 6}, {7, 8, 70000}}); err != nil {
		fmt.Println(err)
	}
	// Output:
	// input a: rows 0.. of surface "input"
	// input b: rows 2.. of surface "input"
	// surface "input" (input): index 0, {Width:32 Height:3 BytesPerElement:2 BytesPerRow:64 AllocSize:192 PixelFormat:0}
	// surface "output" (output@output): index 0, {Width:32 Height:1 BytesPerElement:2 BytesPerRow:64 AllocSize:192 PixelFormat:0}
	// ane: input "b" element 2 = 70000 does not fit fp16 (|x| rounds past 65504, or NaN): shim: value out of fp16 range
}
