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
//
// Where the constants' truncation is the whole error it is bounded
// tightly. A constant kept to a remainder below 2^−c (uniform, RMS
// 2^−c/√3) puts a block of f points off by 2^−c·√(2/3) relative (2f
// remainders against the block's singular value √f), so a layout of m
// blocks and m − 1 twiddle stages is off by 2^−c·√(2/3)·√(2m − 1):
//   - one block under sim-narrow, FP16 (5 levels of 3 bits, c = 15):
//     2.5e-5, measured 1.9e-5 … 2.7e-5 (n = 15, 16, 32); bound 2.5×
//     (6.2e-5): the input's 7 data levels (21 bits) add 2⁻²¹ beside it;
//   - Compensated, c = 30 (5 levels of 6 bits under sim, 10 of 3 under
//     sim-narrow): one block 7.6e-10, measured 8.0e-10 … 9.3e-10 under sim
//     (n = 15 … 64) and 9.8e-10 … 1.2e-9 under sim-narrow (n = 15 … 32);
//     bound 3× the model, 2.3e-9.
//
// Not tightened: with two or more stages the data digits' truncation, not
// the constants', is the error, and it depends on how far below the
// stage's worst-case grid 2¹³ each signal sits after the stages so far (up
// to Π f for the impulse), so it varies with the signal: Compensated under
// sim measures 1.5e-9 … 2.1e-9 on the table's five signals at two stages
// of ≤ 32 points (the constants' model is 1.3e-9) but 5e-9 per transform
// on the spectra InverseMany reads back at n = 1024, and 4.5e-9 (2048) …
// 1.3e-7 (65536) past that; sim-narrow 4.4e-9 … 2.7e-7. Those keep 1e-6.
// FP16 under sim-narrow with two or more stages (3.5e-5 … 1.2e-4) keeps
// 2⁻¹²·√m, 3–10× above, for the same reason.
func tolerance(variant string, mode precision.Mode, dims []int) float64 {
	l := newLayout(dims, 1, blockFor(mode, variant))
	m := len(l.stages)
	constants := func(c int) float64 {
		return math.Ldexp(math.Sqrt(2.0/3*float64(2*m-1)), -c)
	}
	if variant == "sim-narrow" {
		if mode == precision.Compensated {
			if m == 1 {
				return 3 * constants(30)
			}
			return 1e-6
		}
		if m == 1 {
			return 2.5 * constants(15)
		}
		return 0x1p-12 * math.Sqrt(float64(m))
	}
	if mode == precision.Compensated {
		if m == 1 {
			return 3 * constants(30)
		}
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
