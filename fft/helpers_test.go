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
//     result (2⁻¹⁶ beside it): expected u16/√3; the bound 4e-4 leaves a
//     factor 1.4 for the spread of a 16-point sample.
//   - m stages: the input, and per stage the entries, the products and the
//     result, and per twiddle its entries, two products and a sum: about
//     1 + 3m + 2(m − 1) independent roundings of RMS u16/√3 each, so
//     u16·√((5m − 1)/3): 8.5e-4 for m = 2, under the bound 1e-3.
//
// Under "sim-narrow" (every conv adds its products in an fp16 running sum)
// both modes run exact digit programs: every product, partial sum and
// elementwise result is an integer the fp16 format holds, so no operation
// rounds (TestNarrowDigitsExact checks it bit for bit) and the error is
// truncation alone. FP16: the constants keep 5 levels of 3-bit digits, a
// remainder ≤ 2⁻¹⁵ per part, so each DFT block or twiddle is off by about
// 2⁻¹⁵·√(2/3) relative (2f remainders of RMS 2⁻¹⁵/√3 against the block's
// singular value √f); the data digits are as deep as the impulse, the
// signal with the least energy for its largest modulus and so the one
// their truncation costs most, needs to keep 12 bits after every stage
// (forLayout). m stages of at most 2⁻¹² each in quadrature: 2⁻¹²·√m, so
// 2.4e-4 for one block (n ≤ 32) and 3.5e-4 for two (up to 256 = 16·16,
// the sizes one dense DFT serves on "sim"), 4.9e-4 for four (65536): the
// bounds 4e-4 and 1e-3. Compensated: constants of 10 levels (2⁻³⁰) and data three
// digit levels deeper again: a few 2⁻²² as on "sim", the bound 1e-6.
func tolerance(variant string, mode precision.Mode, dims []int) float64 {
	l := newLayout(dims, 1, blockFor(mode, variant))
	m := len(l.stages)
	if variant == "sim-narrow" {
		if mode == precision.Compensated {
			return 1e-6
		}
		return 0x1p-12 * math.Sqrt(float64(m))
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

// blockFor is the largest block of mode's programs under the named
// simulator variant.
func blockFor(mode precision.Mode, variant ...string) int {
	if len(variant) > 0 && variant[0] == "sim-narrow" {
		return narrowBlock
	}
	if mode == precision.Compensated {
		return MaxCompensatedBlock
	}
	return MaxBlock
}
