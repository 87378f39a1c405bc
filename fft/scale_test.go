package fft

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/dsp/fourier"
)

// relErrScaled is relErr(a, b) computed on a·2^−e and b·2^−e, 2^e the
// power of two above b's largest part, so that the squares neither
// overflow (|b| ≳ 1e154) nor underflow (subnormal b); the ratio is the
// same.
func relErrScaled(a, b []complex128) float64 {
	m := 0.0
	for _, v := range b {
		m = max(m, math.Abs(real(v)), math.Abs(imag(v)))
	}
	_, e := math.Frexp(m)
	sc := func(x []complex128) []complex128 {
		y := make([]complex128, len(x))
		for i, v := range x {
			y[i] = complex(math.Ldexp(real(v), -e), math.Ldexp(imag(v), -e))
		}
		return y
	}
	return relErr(sc(a), sc(b))
}

// scaleSignal returns x·c, rounded in float64 (subnormal for c = 1e-310).
func scaleSignal(x []complex128, c float64) []complex128 {
	y := make([]complex128, len(x))
	for i, v := range x {
		y[i] = complex(real(v)*c, imag(v)*c)
	}
	return y
}

// gonum2D is the 2-D DFT of row-major x by gonum's CmplxFFT on the rows
// and then on the columns.
func gonum2D(x []complex128, rows, cols int) []complex128 {
	y := make([]complex128, len(x))
	fr := fourier.NewCmplxFFT(cols)
	for r := range rows {
		fr.Coefficients(y[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols])
	}
	fc := fourier.NewCmplxFFT(rows)
	col := make([]complex128, rows)
	for c := range cols {
		for r := range rows {
			col[r] = y[r*cols+c]
		}
		fc.Coefficients(col, col)
		for r := range rows {
			y[r*cols+c] = col[r]
		}
	}
	return y
}

// TestExtremeScales: Forward, Inverse, RealForward, Forward2D and
// Compensated mode on signals scaled by 1e300 (|x| far above 1e152, whose
// squares overflow) and 1e-310 (subnormal), and a one-point 1e300, agree
// with gonum's dsp/fourier within the mode's documented relative L2 bound
// (tolerance; the round trip twice it, two transforms). The device sees
// the signal after the host's power-of-two scaling, the same fp16 data
// at every scale, so the bound does not depend on the scale; the subnormal
// inputs carry only about 44 bits, and gonum and the device transform the
// same stored values, whose float64 rounding of the subnormal output
// (2⁻¹⁰⁷⁴ against |X| ≈ 1e-309) is 1e-14 relative, far below either bound.
func TestExtremeScales(t *testing.T) {
	const n, rows, cols = 1024, 16, 32
	for _, variant := range []string{"sim", "sim-narrow"} {
		dev := openDevice(t, variant)
		for _, mode := range modes {
			s := &Settings{Device: dev, Precision: mode}
			tol := tolerance(variant, mode, []int{n})
			tol2D := tolerance(variant, mode, []int{rows, cols})
			for _, c := range []float64{1e300, 1e-310} {
				name := fmt.Sprintf("%s/%v/%g", variant, mode, c)
				t.Run(name, func(t *testing.T) {
					x := scaleSignal(signals[0].gen(n, newRNG(11, n)), c)
					want := fourier.NewCmplxFFT(n).Coefficients(nil, x)

					y, err := Forward(x, s)
					require.NoError(t, err, "Forward")
					e := relErrScaled(y, want)
					require.LessOrEqual(t, e, tol, "Forward: relative L2 error")

					back, err := Inverse(y, s)
					require.NoError(t, err, "Inverse")
					eb := relErrScaled(back, x)
					require.LessOrEqual(t, eb, 2*tol, "Inverse(Forward(x))")

					// Inverse of gonum's exact coefficients: one transform.
					xi, err := Inverse(want, s)
					require.NoError(t, err, "Inverse")
					require.LessOrEqual(t, relErrScaled(xi, x), tol, "Inverse")

					xr := make([]float64, n)
					for i, v := range x {
						xr[i] = real(v)
					}
					yr, err := RealForward(xr, s)
					require.NoError(t, err, "RealForward")
					require.LessOrEqual(t, relErrScaled(yr, fourier.NewFFT(n).Coefficients(nil, xr)), tol, "RealForward")

					x2 := scaleSignal(signals[0].gen(rows*cols, newRNG(12, rows*cols)), c)
					y2, err := Forward2D(x2, rows, cols, s)
					require.NoError(t, err, "Forward2D")
					require.LessOrEqual(t, relErrScaled(y2, gonum2D(x2, rows, cols)), tol2D, "Forward2D")
					t.Logf("Forward %.2e, round trip %.2e", e, eb)
				})
			}
			t.Run(fmt.Sprintf("%s/%v/one point", variant, mode), func(t *testing.T) {
				y, err := Forward([]complex128{1e300}, s)
				require.NoError(t, err)
				// The DFT of one point is the point, to the mode's rounding.
				require.Len(t, y, 1)
				require.LessOrEqual(t, relErrScaled(y, []complex128{1e300}), tolerance(variant, mode, []int{1}))
			})
		}
	}
}

// TestCheckScaleFree: the host's consistency check passes a correct
// transform and fails a wrong one at every scale (1e-320 … 1e300), so a
// scale never hides a broken device (squares that underflow to 0 used to
// pass anything) nor fails a correct one (squares that overflow).
func TestCheckScaleFree(t *testing.T) {
	const n = 1024
	l := newLayout([]int{n}, 1, MaxBlock)
	base := signals[0].gen(n, newRNG(13, n))
	rms := 0.0 // of base's bins: √(Σ|x|²)
	for _, v := range base {
		rms += real(v)*real(v) + imag(v)*imag(v)
	}
	rms = math.Sqrt(rms)
	for _, c := range []float64{1e-320, 1e-310, 1e-200, 1, 1e152, 1e200, 1e300} {
		x := scaleSignal(base, c)
		y := fourier.NewCmplxFFT(n).Coefficients(nil, x)
		e, ok, err := l.inputScale(x, 0)
		require.True(t, ok && err == nil, "c = %g: %v", c, err)
		require.NoError(t, l.check(x, y, e), "c = %g: a correct transform", c)
		zero := make([]complex128, n)
		require.ErrorIs(t, l.check(x, zero, e), ErrDevice, "c = %g: zeros", c)
		half := scaleSignal(y, 0.5)
		require.ErrorIs(t, l.check(x, half, e), ErrDevice, "c = %g: a result off by a factor 2", c)
		// One recomputed bin off by three RMS bins: Parseval moves by
		// 9/n and passes, the bin fails.
		for _, k := range l.checkBins() {
			wrong := slices.Clone(y)
			wrong[k] += complex(3*c*rms, 0)
			require.ErrorIs(t, l.check(x, wrong, e), ErrDevice, "c = %g: bin %d wrong", c, k)
		}
	}
}
