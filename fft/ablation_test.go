package fft

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// faultyDevice wraps a device and spoils every output its programs return.
type faultyDevice struct {
	shim.Device
	spoil func(out []float32, seed uint64)
}

func (d faultyDevice) Compile(p *lower.Program) (shim.Executable, error) {
	exe, err := d.Device.Compile(p)
	if err != nil {
		return nil, err
	}
	return faultyExe{exe, d.spoil}, nil
}

type faultyExe struct {
	shim.Executable
	spoil func(out []float32, seed uint64)
}

func (e faultyExe) Run(in [][]float32) ([][]float32, error) {
	outs, err := e.Executable.Run(in)
	for i, o := range outs {
		e.spoil(o, uint64(i))
	}
	return outs, err
}

// TestFaultyDevice: the transform's result comes from the device. A device
// whose outputs are replaced by noise of the same norm, or by zeros, or
// whose results are off by a factor, makes every transform fail with
// ErrDevice instead of returning a wrong number.
func TestFaultyDevice(t *testing.T) {
	spoils := map[string]func([]float32, uint64){
		"noise of the same norm": func(o []float32, seed uint64) {
			rng := newRNG(seed, 99)
			var norm, nn float64
			noise := make([]float64, len(o))
			for i, v := range o {
				norm += float64(v) * float64(v)
				noise[i] = rng.NormFloat64()
				nn += noise[i] * noise[i]
			}
			for i := range o {
				o[i] = float32(noise[i] * math.Sqrt(norm/nn))
			}
		},
		"zeros": func(o []float32, _ uint64) { clear(o) },
		"scaled by 1.5": func(o []float32, _ uint64) {
			for i := range o {
				o[i] *= 1.5
			}
		},
	}
	base := openDevice(t, "sim")
	for name, spoil := range spoils {
		dev := faultyDevice{base, spoil}
		for _, mode := range modes {
			for _, n := range []int{256, 1024} {
				x := signals[0].gen(n, newRNG(5, uint64(n)))
				_, err := Forward(x, &Settings{Device: dev, Precision: mode})
				require.Error(t, err, "%s %v n=%d", name, mode, n)
				require.True(t, errors.Is(err, ErrDevice), "%s %v n=%d: %v", name, mode, n, err)
			}
		}
	}
	// The same device unspoiled passes the check.
	_, err := Forward(signals[0].gen(1024, newRNG(5, 1024)), &Settings{Device: base, Precision: precision.Compensated})
	require.NoError(t, err)
}
