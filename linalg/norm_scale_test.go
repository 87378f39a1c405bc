package linalg

import (
	"fmt"
	"math"
	"testing"

	"github.com/anemone-go/anemone/reference"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// scaled returns c·a entrywise (rounded in float64; subnormal when c·a_ij
// is below 2⁻¹⁰²²).
func scaled(a *mat.Dense, c float64) *mat.Dense {
	var d mat.Dense
	d.Apply(func(_, _ int, v float64) float64 { return v * c }, a)
	return &d
}

// TestNorm2Scale: Norm2 of a 20×20 Gaussian matrix scaled by c from 1e-310
// (subnormal entries) to 1e300 is within 1e-10 relative of gonum's SVD of
// the same stored matrix, on both devices. The bound is the documented
// one and its derivation is TestNorm2's: Norm2 works on 2⁻ᵉ·cA, whose
// largest entry is in [1/2, 1) whatever c is, so the Rayleigh quotient's
// error is u64·√n plus (ε_comp/gap)² ≈ 1e-13 at every scale. At 1e-310 the
// answer σ ≈ 1e-309 is itself subnormal, with spacing 2⁻¹⁰⁷⁴ ≈ 4.9e-324,
// i.e. 5e-15 relative: still far inside 1e-10.
func TestNorm2Scale(t *testing.T) {
	base := randn(newRNG(90), 20, 20)
	scales := []float64{1e-310, 1e-300, 1e-200, 1e-154, 1e-90, 1e-80, 1e-40, 1, 1e40, 1e77, 1e80, 1e154, 1e200, 1e300}
	for _, d := range devices {
		dev := openDevice(t, d.name)
		for _, c := range scales {
			t.Run(fmt.Sprintf("%s/%g", d.name, c), func(t *testing.T) {
				a := scaled(base, c)
				var st Stats
				got, err := Norm2(a, &Settings{Device: dev, Stats: &st})
				require.NoError(t, err)
				want := reference.SingularValues(a)[0]
				require.False(t, want == 0 || math.IsInf(want, 0), "gonum's σ₁ = %v", want)
				t.Logf("σ = %.17g, gonum %.17g, rel %.2e, %d dispatches", got, want, math.Abs(got-want)/want, st.Dispatches)
				require.InDelta(t, want, got, 1e-10*want)
				require.Len(t, st.History, st.Refinements+1)
				require.Equal(t, got, st.History[len(st.History)-1], "History is in the caller's units")
			})
		}
	}
}

// TestNorm2PowerOfTwo: scaling A by 2ᵏ scales Norm2 by exactly 2ᵏ, from
// 2⁻¹⁰⁰⁰ to 2¹⁰⁰⁰: the entries of 2ᵏ·A stay normal, so 2⁻ᵉ·2ᵏ·A is the
// same matrix bit for bit and the iteration repeats itself; the known
// exact answer is 2ᵏ·Norm2(A), tolerance zero.
func TestNorm2PowerOfTwo(t *testing.T) {
	dev := openDevice(t, "sim")
	base := randn(newRNG(91), 20, 12)
	ref, err := Norm2(base, &Settings{Device: dev})
	require.NoError(t, err)
	for _, k := range []int{-1000, -500, -100, -1, 1, 100, 500, 1000} {
		a := scaled(base, math.Ldexp(1, k))
		got, err := Norm2(a, &Settings{Device: dev})
		require.NoError(t, err, "k = %d", k)
		require.Equal(t, math.Ldexp(ref, k), got, "k = %d", k)
	}
}

// TestNorm2OutOfRange: a norm above math.MaxFloat64, or one so deep in the
// subnormal range that float64 cannot carry it to 1e-10, is ErrRange with
// a message that says to scale A, never a silently wrong number.
func TestNorm2OutOfRange(t *testing.T) {
	dev := openDevice(t, "sim")
	// Every entry 1e308: ‖A‖₂ = 20·1e308 overflows, though every entry is
	// finite.
	big := mat.NewDense(20, 20, nil)
	big.Apply(func(_, _ int, _ float64) float64 { return 1e308 }, big)
	_, err := Norm2(big, &Settings{Device: dev})
	require.ErrorIs(t, err, ErrRange)
	require.ErrorContains(t, err, "linalg: Norm2: ")
	require.ErrorContains(t, err, "exceeds math.MaxFloat64")

	// Entries of 2⁻¹⁰⁶⁴ (ten bits above the smallest subnormal): the norm
	// 20·2⁻¹⁰⁶⁴ has ~14 bits, 1e-4 relative.
	tiny := mat.NewDense(20, 20, nil)
	tiny.Apply(func(_, _ int, _ float64) float64 { return 0x1p-1064 }, tiny)
	_, err = Norm2(tiny, &Settings{Device: dev})
	require.ErrorIs(t, err, ErrRange)
	require.ErrorContains(t, err, "scale A up")

	// The edges just inside: 8e306 entries (‖A‖₂ = 1.6e308) and 1e-300.
	for _, c := range []float64{8e306, 1e-300} {
		a := mat.NewDense(20, 20, nil)
		a.Apply(func(_, _ int, _ float64) float64 { return c }, a)
		got, err := Norm2(a, &Settings{Device: dev})
		require.NoError(t, err, "c = %g", c)
		// The rank-one all-c matrix has σ₁ = 20·c exactly (up to the
		// rounding of 20·c, u64 relative).
		require.InDelta(t, 20*c, got, 1e-10*20*c, "c = %g", c)
	}
}
