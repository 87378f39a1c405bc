package fft

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim" // registers "sim" and "sim-narrow"
)

// u16 is fp16's unit roundoff, 2⁻¹¹: every tolerance below derives from it.
const u16 = 0x1p-11

func newRNG(seed, n uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, n^0x9e3779b97f4a7c15)) }

// openDevice opens a simulator variant ("sim" or "sim-narrow").
func openDevice(t testing.TB, name string) shim.Device {
	t.Helper()
	dev, err := shim.Open(name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	return dev
}

// tolerance is the relative L2 error a transform of the given shape may
// have in mode under the named simulator variant.
//
// FP16 under "sim" (products rounded to fp16, summed in float32, the sum
// rounded once). One fp16 rounding has relative error ≤ u16 and, spread
// over a binade, an RMS of about u16/√3 ≈ 2.8e-4.
//   - One dense stage: the split operands leave only the rounding of the
//     result (2⁻¹⁶ beside it): expected u16/√3; the 4e-4 leaves a
//     factor 1.4 for the spread of a 16-point sample.
//   - m stages: the input, and per stage the entries, the products and the
//     result, and per twiddle its entries, two products and a sum: about
//     1 + 3m + 2(m − 1) independent roundings of RMS u16/√3 each, so
//     u16·√((5m − 1)/3): 8.5e-4 for m = 2, under the 1e-3.
//
// FP16 under "sim-narrow" (the running sums of every conv rounded to fp16
// too): a running sum of K terms adds Σ_k δ_k·S_k, |δ_k| ≤ u16, over its
// partial sums S_k: about u16·√(K/6)·|S| for a random walk, and more when
// coherent partial sums make the roundings correlate (a tone, the
// mixture: the sweep's worst cases reach u16·√K). With K = 2·f real terms
// per stage output (f the largest block) and m stages in quadrature, the
// bound is u16·√(2·m·2f), a factor √2 over those worst cases: 1.6e-2 for
// one 256-point stage. This misses the 1e-3; see the package
// documentation.
//
// Compensated under "sim": products and sums are exact; what is dropped is
// the digits past 36 bits of the data and 30 bits of the constants, the lo
// parts of the limb sums s ≥ 3 and the pairs p + m > 5, each about 2⁻³⁰ of
// a stage's bound 2¹³; a signal may sit 2⁹ below that bound after the first
// 256-point stage (an impulse), so the error is a few 2⁻²¹ ≈ 5e-7: the
// issue's 1e-6 holds. Under "sim-narrow" the digit sums (up to 2²²) are
// rounded in the fp16 running sum, so Compensated is no better than FP16
// there: the FP16 narrow bound applies.
func tolerance(variant string, mode precision.Mode, dims []int) float64 {
	l := newLayout(dims, 1, blockFor(mode))
	m := len(l.stages)
	fmax := 0
	for _, s := range l.stages {
		fmax = max(fmax, s.f)
	}
	if variant == "sim-narrow" {
		return u16 * math.Sqrt(float64(2*m*2*fmax))
	}
	if mode == precision.Compensated {
		return 1e-6
	}
	if m == 1 {
		return 4e-4
	}
	return u16 * math.Sqrt(float64(5*m-1)/3)
}

// requireAccurate checks got against want in relative L2 norm, and that
// got holds no NaN.
func requireAccurate(t testing.TB, got, want []complex128, tol float64, msg string) float64 {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i, v := range got {
		require.False(t, math.IsNaN(real(v)) || math.IsNaN(imag(v)), "%s: NaN at %d", msg, i)
	}
	e := relErr(got, want)
	require.LessOrEqual(t, e, tol, "%s: relative L2 error %.3g above %.3g", msg, e, tol)
	return e
}

// relErr is ‖a − b‖₂/‖b‖₂.
func relErr(a, b []complex128) float64 {
	var num, den float64
	for i := range b {
		d := a[i] - b[i]
		num += real(d)*real(d) + imag(d)*imag(d)
		den += real(b[i])*real(b[i]) + imag(b[i])*imag(b[i])
	}
	return math.Sqrt(num / den)
}

func blockFor(mode precision.Mode) int {
	if mode == precision.Compensated {
		return MaxCompensatedBlock
	}
	return MaxBlock
}
