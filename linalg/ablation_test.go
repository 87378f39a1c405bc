package linalg

import (
	"math"
	"math/rand/v2"
	"sync"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// noiseDevice is the ablation device of docs/ARCHITECTURE.md ("The device does the
// work"): it runs every program on the wrapped device and replaces each
// output by Gaussian noise of the same 2-norm. A solver whose answer
// survives it is not using the device's results.
type noiseDevice struct {
	shim.Device
	mu  sync.Mutex
	rng *rand.Rand
}

func newNoiseDevice(d shim.Device, seed uint64) *noiseDevice {
	return &noiseDevice{Device: d, rng: newRNG(seed)}
}

func (d *noiseDevice) Compile(p *lower.Program) (shim.Executable, error) {
	exe, err := d.Device.Compile(p)
	if err != nil {
		return nil, err
	}
	return &noiseExecutable{Executable: exe, d: d}, nil
}

type noiseExecutable struct {
	shim.Executable
	d *noiseDevice
}

func (e *noiseExecutable) Run(inputs [][]float32) ([][]float32, error) {
	outs, err := e.Executable.Run(inputs)
	if err != nil {
		return nil, err
	}
	e.d.mu.Lock()
	defer e.d.mu.Unlock()
	for _, o := range outs {
		norm := 0.0
		for _, v := range o {
			norm += float64(v) * float64(v)
		}
		noise := make([]float64, len(o))
		nn := 0.0
		for i := range noise {
			noise[i] = e.d.rng.NormFloat64()
			nn += noise[i] * noise[i]
		}
		s := 0.0
		if nn > 0 {
			s = math.Sqrt(norm / nn)
		}
		for i := range o {
			// Keep the noise an fp16 value in range, as a device output is.
			o[i] = float32(math.Max(-65504, math.Min(65504, noise[i]*s)))
		}
	}
	return outs, nil
}
