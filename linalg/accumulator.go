package linalg

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/shim"
)

// The accumulator probe. Compensated products are exact only if the
// device's matmul keeps integer partial sums up to 2²⁴ exactly (a float32
// accumulator, as docs/ENGINE.md states for the ANE). A device that rounds
// every partial sum to fp16 (the simulator's "sim-narrow" model) keeps
// integers exact only up to 2¹¹, so this package measures, once per device,
// which one it has: one dispatch of the dot product
//
//	(2⁷, 2⁻⁵, −2⁷) · (2⁶, 2⁻⁵, 2⁶) = 2¹³ + 2⁻¹⁰ − 2¹³ = 2⁻¹⁰,
//
// whose products are exact fp16 values and whose first partial sum,
// 2¹³ + 2⁻¹⁰, needs 24 significant bits. A float32 accumulator returns 2⁻¹⁰
// exactly; an fp16 one rounds the partial sum to 2¹³ and returns 0. Every
// value stays below 2¹⁴, far from the output cliff. The probe assumes
// the contraction is summed in order (the simulator's documented order);
// any result other than exactly 2⁻¹⁰ counts as narrow, the safe side.

var (
	probeMu    sync.Mutex
	probeCache = map[shim.Device]bool{} // device → wide accumulator
)

// maxProbeCache bounds the devices remembered; the map is cleared when
// full (a process rarely opens more than a handful).
const maxProbeCache = 64

// wideAccumulator reports whether dev's matmul accumulates in float32
// (see above). The result is cached per device when the device's type is
// comparable.
func wideAccumulator(dev shim.Device) (bool, error) {
	cacheable := reflect.TypeOf(dev).Comparable()
	if cacheable {
		probeMu.Lock()
		wide, ok := probeCache[dev]
		probeMu.Unlock()
		if ok {
			return wide, nil
		}
	}
	wide, err := probeAccumulator(dev)
	if err != nil {
		return false, err
	}
	if cacheable {
		probeMu.Lock()
		if len(probeCache) >= maxProbeCache {
			clear(probeCache)
		}
		probeCache[dev] = wide
		probeMu.Unlock()
	}
	return wide, nil
}

func probeAccumulator(dev shim.Device) (bool, error) {
	g := dataflow.New()
	a := g.Const("probe_a", dataflow.Shape{1, 3}, []float64{0x1p7, 0x1p-5, -0x1p7})
	x := g.Input("probe_x", dataflow.Shape{1, 3})
	g.Output("probe_y", g.MatMul(x, a, false, true))
	exe, err := shim.Build(dev, g)
	if err != nil {
		return false, fmt.Errorf("building the accumulator probe: %w", err)
	}
	defer exe.Close()
	out, err := exe.Run([][]float32{{0x1p6, 0x1p-5, 0x1p6}})
	if err != nil {
		return false, fmt.Errorf("running the accumulator probe: %w", err)
	}
	return len(out) == 1 && len(out[0]) == 1 && out[0][0] == 0x1p-10, nil
}
