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
// Any input, two or more stages: the data digits' truncation, not the
// constants', is the error, and it depends on how far below the stage's
// worst-case grid 2¹³ each entry sits after the stages so far. On the five
// test signals the impulse is the worst, and signalTolerance bounds them
// within 3× of the table's figures. An input whose energy is an impulse's
// but whose entries are all nonzero (a spectrum with one dominant bin, as
// the inverse tests read back: the mixture's) has the cut on all n entries
// instead of the impulse's Π f, up to √(n/Π f) times that model: measured
// 1.0e-8 per transform on the spectra InverseMany reads back at n = 1024
// and 2.2e-8 on the mixture's 64×64 spectrum (Inverse2D), 5.6× the
// impulse's model. For any input these keep 1e-6 (Compensated) and
// 2⁻¹²·√m (FP16 under sim-narrow).
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

// signalTolerance is the relative L2 error a transform of the given shape
// may have on the five test signals (signals), the inputs of the figures in
// docs/RESULTS.md: tolerance for FP16 under "sim"; for the digit programs
// (Compensated under both variants, FP16 under "sim-narrow", where every
// conv adds its products in an fp16 running sum) a model of their
// truncation on the impulse, the worst of the five. Their
// products and sums are exact (under sim-narrow no operation rounds at
// all: TestNarrowDigitsExact checks it bit for bit), so their error is
// truncation, of the constants and of the data (digitTruncation):
//
//   - Constants kept to a remainder below 2^−c (c = bits·constLevels: 30
//     for Compensated, 15 for FP16 under sim-narrow; uniform, RMS
//     2^−c/√3) put a block of f points off by 2^−c·√(2/3) relative (2f
//     remainders against the block's singular value √f), so a layout of m
//     blocks and m − 1 twiddle stages is off by 2^−c·√(2/3)·√(2m − 1).
//   - Data: after each stage but the last the result is cut to digits, and
//     the next stage multiplies them down to level min(dataLevels − 1,
//     smax) only, a grid h = 2^(dataExp − bits·that level). Every piece of
//     the stage result leaves a remainder below h/2 there, and the twiddle
//     drops its products past level smax, together about one h per entry.
//     The digit grids are fixed by the stage's worst case 2¹³, and the
//     signal whose entries sit lowest under them is the impulse: its
//     modulus x ≥ 2^inExp, after stages 1 … i its Π f nonzero entries are
//     x·2^−(shift_1 + … + shift_i) each (a stage scales by 2^−shift, and
//     zeros stay exact), so the cut after stage i costs it
//     h·2^(shift_1 + … + shift_i − inExp) relative; every other input of
//     the table has more energy on the same grid. The cuts add in
//     quadrature with the constants' term.
//
// That model is the table's worst signal (the impulse, or where the
// constants dominate, any of the five): the measured worst over the five
// signals is 0.71 … 1.58 times the model for Compensated on both
// variants at every size of the table from 15 to 65536 (one block: 1.05 …
// 1.58, the data term absent; two to four stages: 0.71 … 1.46), and 0.48
// … 1.08 times it for FP16 under sim-narrow; Test2D's shapes 0.51 … 1.08
// (the 2-D figures: 256×256 0.79 … 1.08, 512×128 Compensated on sim
// 0.71). Bounds 2× (Compensated) and 1.5× (FP16) the model: within 3× of
// every figure of the table and of the 2-D figures (FP16 under sim-narrow
// at n = 240, 0.48 of the model, is 3.1×), from 1.5e-9 (one block,
// Compensated) to 4.8e-7 (65536 under sim-narrow: four 16-point stages,
// 12 data levels of 3 bits, h = 2⁻²², and the impulse 2⁻¹² of its 2¹²
// after three stages, so 2⁻²² relative).
func signalTolerance(variant string, mode precision.Mode, dims []int) float64 {
	if variant == "sim-narrow" || mode == precision.Compensated {
		cons, data := digitTruncation(variant, mode, dims)
		if mode == precision.Compensated {
			return 2 * math.Hypot(cons, data)
		}
		return 1.5 * math.Hypot(cons, data)
	}
	return tolerance(variant, mode, dims)
}

// digitTruncation is the truncation model of the digit program of dims in
// mode under the named variant (see signalTolerance): the relative error of the
// constants' digits, and that of the data's digits on an impulse.
func digitTruncation(variant string, mode precision.Mode, dims []int) (cons, data float64) {
	l := newLayout(dims, 1, blockFor(mode, variant))
	sc := &compWide
	switch {
	case variant == "sim-narrow" && mode == precision.Compensated:
		sc = compNarrow.forLayout(l)
	case variant == "sim-narrow":
		sc = fp16Narrow.forLayout(l)
	}
	m := len(l.stages)
	cons = math.Ldexp(math.Sqrt(2.0/3*float64(2*m-1)), -sc.bits*sc.constLevels)
	h := sc.dataExp() - sc.bits*min(sc.dataLevels-1, sc.smax) // log₂ of the grid
	shift, d2 := 0, 0.0
	for _, s := range l.stages[:m-1] {
		shift += s.shift
		r := math.Ldexp(1, h+shift-l.inExp)
		d2 += r * r
	}
	return cons, math.Sqrt(d2)
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
