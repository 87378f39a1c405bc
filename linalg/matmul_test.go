package linalg

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// frobRelErr is ‖c − ref‖_F/‖ref‖_F (gonum's mat.Norm(·, 2) of a matrix
// is the Frobenius norm).
func frobRelErr(c, ref mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(c, ref)
	return mat.Norm(&d, 2) / mat.Norm(ref, 2)
}

// matMulTol is what each mode promises (MatMul's documentation), for a
// contraction of length k:
//
//   - FP16: each operand is rounded to fp16 once (relative error uniform
//     in ±u16/2·2, RMS u16/√3 per factor) and the float32 sum once more to
//     fp16 (RMS u16/√3): RMS about u16 in all, below the issue's
//     u16·√(log₂ k) for every k ≥ 2 (the √(log₂ k) allows for the
//     accumulation order of long sums).
//   - Compensated: 5 limbs of 6 bits, digits exact to 2^(1−30) of each
//     row's and column's largest entry; for normal data the largest entry
//     is ≤ 5 standard deviations, so each digit error is at most
//     5·2⁻²⁹ standard deviations of each factor, and the product's
//     Frobenius relative error below 25·2⁻²⁹ ≈ 4.7e-8 (the issue asks
//     ≤ 1e-6).
//   - Float64: 9 limbs, 2^(1−54) per digit: 25·2⁻⁵³ ≈ 3e-15 ≤ 1e-14.
func matMulTol(mode precision.Mode, k int) float64 {
	switch mode {
	case precision.FP16:
		return u16 * math.Sqrt(math.Log2(float64(k)))
	case precision.Compensated:
		return 25 * 0x1p-29
	}
	return 1e-14
}

// TestMatMulTable is the README's MatMul table: Frobenius relative error
// against gonum for each mode and shape (run with -v to print the rows;
// 256 to 1024 without -short).
func TestMatMulTable(t *testing.T) {
	dev := openDevice(t, "sim")
	type shape struct{ m, k, n int }
	shapes := []shape{{64, 64, 64}, {128, 128, 128}, {64, 200, 96}, {160, 64, 33}}
	if !testing.Short() {
		shapes = append(shapes, shape{256, 256, 256}, shape{512, 512, 512}, shape{300, 1024, 200}, shape{1024, 1024, 1024})
	}
	modes := []precision.Mode{precision.FP16, precision.Compensated, precision.Float64}
	t.Logf("| m×k×n | mode | rel. Frobenius error | bound | dispatches | device flops |")
	for si, sh := range shapes {
		rng := newRNG(uint64(100 + si))
		a := randn(rng, sh.m, sh.k)
		b := randn(rng, sh.k, sh.n)
		ref, err := reference.MatMul(a, b)
		require.NoError(t, err)
		for _, mode := range modes {
			if mode == precision.Float64 && sh.m*sh.k*sh.n > 512*512*512 {
				continue // 90 limb products per entry: minutes on the simulator
			}
			t.Run(fmt.Sprintf("%dx%dx%d/%v", sh.m, sh.k, sh.n, mode), func(t *testing.T) {
				var st Stats
				c, err := MatMul(a, b, &Settings{Device: dev, Precision: mode, Stats: &st})
				require.NoError(t, err)
				e := frobRelErr(c, ref)
				tol := matMulTol(mode, sh.k)
				t.Logf("| %d×%d×%d | %v | %.2e | %.1e | %d | %.3g |", sh.m, sh.k, sh.n, mode, e, tol, st.Dispatches, float64(st.Flops))
				require.False(t, math.IsNaN(e))
				require.LessOrEqual(t, e, tol)
			})
		}
	}
}

// TestMatMulTiled: products past the simulator's spatial limit of 16384
// (rows of A: bands, one program each; contraction: chunks in one program)
// against gonum. Tolerances as TestMatMulTable.
func TestMatMulTiled(t *testing.T) {
	dev := openDevice(t, "sim")
	cases := []struct{ m, k, n, programs int }{
		{16400, 8, 3, 2},
		{4, 20000, 3, 1},
	}
	for _, tc := range cases {
		for _, mode := range []precision.Mode{precision.FP16, precision.Compensated} {
			t.Run(fmt.Sprintf("%dx%dx%d/%v", tc.m, tc.k, tc.n, mode), func(t *testing.T) {
				rng := newRNG(7)
				a, b := randn(rng, tc.m, tc.k), randn(rng, tc.k, tc.n)
				var st Stats
				c, err := MatMul(a, b, &Settings{Device: dev, Precision: mode, Stats: &st})
				require.NoError(t, err)
				ref, err := reference.MatMul(a, b)
				require.NoError(t, err)
				require.LessOrEqual(t, frobRelErr(c, ref), matMulTol(mode, tc.k))
				require.Equal(t, tc.programs, st.Programs)
				require.Equal(t, tc.programs, st.Dispatches)
			})
		}
	}
}

// TestMatVec against gonum, every mode (tolerances as TestMatMulTable).
func TestMatVec(t *testing.T) {
	dev := openDevice(t, "sim")
	rng := newRNG(11)
	a := randn(rng, 96, 130)
	x := randn(rng, 130, 1).RawMatrix().Data
	want := make([]float64, 96)
	mat.NewVecDense(96, want).MulVec(a, mat.NewVecDense(130, x))
	for _, mode := range []precision.Mode{0, precision.FP16, precision.Compensated, precision.Float64} {
		y, err := MatVec(a, x, &Settings{Device: dev, Precision: mode})
		require.NoError(t, err)
		m := mode
		if m == 0 {
			m = precision.Compensated
		}
		require.LessOrEqual(t, precision.RelErr(y, want), matMulTol(m, 130), "%v", mode)
	}
}

// TestProductBadInput: every bad input is an error wrapping the sentinel,
// never a panic.
func TestProductBadInput(t *testing.T) {
	dev := openDevice(t, "sim")
	s := &Settings{Device: dev}
	good := mat.NewDense(2, 2, []float64{1, 2, 3, 4})
	nan := mat.NewDense(2, 2, []float64{1, math.NaN(), 3, 4})
	inf := mat.NewDense(2, 2, []float64{1, 2, math.Inf(-1), 4})
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"shape", func() error { _, err := MatMul(good, mat.NewDense(3, 2, nil), s); return err }, ErrShape},
		{"nil", func() error { _, err := MatMul(nil, good, s); return err }, ErrShape},
		{"nan", func() error { _, err := MatMul(good, nan, s); return err }, ErrRange},
		{"inf", func() error { _, err := MatMul(inf, good, s); return err }, ErrRange},
		{"vec length", func() error { _, err := MatVec(good, []float64{1}, s); return err }, ErrShape},
		{"vec nan", func() error { _, err := MatVec(good, []float64{1, math.NaN()}, s); return err }, ErrRange},
		{"mode", func() error {
			_, err := MatMul(good, good, &Settings{Device: dev, Precision: 7})
			return err
		}, ErrInvalid},
		{"tol", func() error { _, err := MatMul(good, good, &Settings{Device: dev, Tol: -1}); return err }, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.want), "%v", err)
			require.Contains(t, err.Error(), "linalg: ")
		})
	}
}
