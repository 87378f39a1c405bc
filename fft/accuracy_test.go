package fft

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
)

// tableSizes are the lengths of the accuracy table: every power of two from
// 16 to 65536 and three sizes with factors 3 and 5 (dense, 240 = 2⁴·3·5;
// staged, 15360 = 2¹⁰·3·5 = 160·96). -short keeps a few; Compensated
// transforms of 16384 points and more (seconds each on the simulator) run
// only in the full sweep.
func tableSizes(short bool) []int {
	if short {
		return []int{16, 15, 256, 4096, 65536}
	}
	return []int{16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 15, 240, 15360}
}

// TestAccuracyTable is the README's table of error against n: the relative
// L2 error against gonum's dsp/fourier (reference.FFT) of the worst of the
// five test signals (random complex data, an impulse, a chirp, an
// off-grid tone and a mixture spanning ten orders of magnitude), per mode
// and simulator variant (under sim-narrow both modes run the exact digit
// programs of 3-bit digits and blocks of at most 32 points). Every figure
// is asserted against signalTolerance (the derivations are there) and the
// table is printed with -v, each figure beside its bound.
func TestAccuracyTable(t *testing.T) {
	short := testing.Short()
	variants := []string{"sim", "sim-narrow"}
	modes := []precision.Mode{precision.FP16, precision.Compensated}
	type cell struct {
		err, tol float64
		ran      bool
	}
	sizes := tableSizes(short)
	table := map[string]*cell{}
	key := func(n int, mode precision.Mode, variant string) string {
		return fmt.Sprint(n, mode, variant)
	}
	for _, variant := range variants {
		dev := openDevice(t, variant)
		for _, mode := range modes {
			for _, n := range sizes {
				if mode == precision.Compensated && n >= 16384 && short {
					continue
				}
				p, err := NewPlan(n, &Settings{Device: dev, Precision: mode})
				require.NoError(t, err)
				c := &cell{tol: signalTolerance(variant, mode, []int{n}), ran: true}
				for si, sg := range signals {
					if short && variant == "sim-narrow" && n >= 16384 && sg.name != "impulse" {
						// The digit programs take seconds a signal here;
						// -short keeps the impulse, the hardest for their
						// digits (see tolerance).
						continue
					}
					x := sg.gen(n, newRNG(uint64(si), uint64(n)))
					y, err := p.Forward(x)
					require.NoError(t, err, "%s %v n=%d %s", variant, mode, n, sg.name)
					e := requireAccurate(t, y, reference.FFT(x), c.tol, fmt.Sprintf("%s %v n=%d %s", variant, mode, n, sg.name))
					c.err = max(c.err, e)
				}
				require.NoError(t, p.Close())
				table[key(n, mode, variant)] = c
			}
		}
	}
	var b strings.Builder
	b.WriteString("\n| n | stages FP16 / Compensated / sim-narrow | FP16 sim | FP16 sim-narrow | Compensated sim | Compensated sim-narrow |\n|---|---|---|---|---|---|\n")
	for _, n := range sizes {
		fmt.Fprintf(&b, "| %d | %s / %s / %s |", n, stagesString(factorize(n, MaxBlock)),
			stagesString(factorize(n, MaxCompensatedBlock)), stagesString(factorize(n, narrowBlock)))
		for _, mode := range modes {
			for _, variant := range variants {
				if c := table[key(n, mode, variant)]; c != nil {
					fmt.Fprintf(&b, " %.1e (≤ %.1e) |", c.err, c.tol)
				} else {
					b.WriteString(" – |")
				}
			}
		}
		b.WriteString("\n")
	}
	t.Log(b.String())
}

func stagesString(fs []int) string {
	st := fmt.Sprint(fs[0])
	for _, f := range fs[1:] {
		st += fmt.Sprintf("·%d", f)
	}
	return st
}
