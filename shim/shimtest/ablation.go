package shimtest

import (
	"github.com/anemone-go/anemone/engine"
	"math"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// DoNothing wraps dev in the do-nothing ablation device: every program
// compiles on dev, but a run computes nothing — each output is the
// program's inputs, concatenated and repeated to the output's length,
// scaled by Scale (1 when zero). A solver that converges as fast with it
// as with the real device is not using the device's work; the ablation
// tests of every solver hold it to needing at least twice the dispatches,
// or failing.
func DoNothing(dev shim.Device, scale float64) shim.Device {
	if scale == 0 {
		scale = 1
	}
	return doNothing{dev, scale}
}

type doNothing struct {
	shim.Device
	scale float64
}

func (d doNothing) Compile(p *lower.Program) (shim.Executable, error) {
	exe, err := d.Device.Compile(p)
	if err != nil {
		return nil, err
	}
	return doNothingExe{exe, d.scale}, nil
}

type doNothingExe struct {
	shim.Executable
	scale float64
}

// Run returns the inputs as outputs, scaled; values past fp16's range
// saturate at ±65504, as a device's would not be allowed to exceed it.
func (e doNothingExe) Run(in [][]float32) ([][]float32, error) {
	if err := shim.CheckInputs(e.Program(), in); err != nil {
		return nil, err
	}
	var all []float32
	for _, x := range in {
		all = append(all, x...)
	}
	outs := make([][]float32, len(e.Program().Outputs))
	for i, spec := range e.Program().Outputs {
		o := make([]float32, spec.Size())
		for j := range o {
			if len(all) > 0 {
				o[j] = float32(math.Max(-engine.MaxValue, math.Min(engine.MaxValue, e.scale*float64(all[j%len(all)]))))
			}
		}
		outs[i] = o
	}
	return outs, nil
}
