package reference

import (
	"math"
	"math/cmplx"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// fftTol bounds the normwise relative difference between FFT and the naive
// DFT. The FFT's error is O(u·log₂n) (Higham 2002, §24.1) and the naive sum's
// at most about n·u·‖x‖₁/‖X‖₂ ≈ √n·u for random data; for n ≤ 1024 that
// is ≤ 32·1.1e-16 ≈ 4e-15, so 1e-12 (the brief's bound) is safe.
const fftTol = 1e-12

var fftSizes = []int{1, 2, 3, 5, 7, 8, 16, 100, 1024}

func TestFFTvsDFT(t *testing.T) {
	rng := newRNG(51)
	for _, n := range fftSizes {
		x := randComplex(rng, n)
		xc := slices.Clone(x)
		got := FFT(x)
		require.Equal(t, xc, x, "input modified")
		require.LessOrEqual(t, RelErrComplex(got, DFT(x)), fftTol, "n = %d", n)
		back := IFFT(got)
		require.LessOrEqual(t, RelErrComplex(back, x), fftTol, "round trip n = %d", n)
	}
}

func TestFFTConventions(t *testing.T) {
	// Exact small case: FFT(1, 2, 3, 4) = (10, −2+2i, −2, −2−2i).
	got := FFT([]complex128{1, 2, 3, 4})
	require.LessOrEqual(t, RelErrComplex(got, []complex128{10, -2 + 2i, -2, -2 - 2i}), 4*u64)
	// Sign of the exponent: x_j = exp(+2πi·j/n) lands in bin 1, not n−1.
	const n = 12
	x := make([]complex128, n)
	for j := range x {
		x[j] = cmplx.Exp(complex(0, 2*math.Pi*float64(j)/n))
	}
	X := FFT(x)
	require.InDelta(t, n, real(X[1]), 1e-13)
	require.InDelta(t, 0, cmplx.Abs(X[n-1]), 1e-13)
	// The inverse carries 1/n: IFFT of all ones is the unit impulse.
	ones := make([]complex128, n)
	for i := range ones {
		ones[i] = 1
	}
	imp := make([]complex128, n)
	imp[0] = 1
	require.LessOrEqual(t, RelErrComplex(IFFT(ones), imp), 8*u64)
	require.LessOrEqual(t, RelErrComplex(FFT(imp), ones), 8*u64)
	require.Empty(t, FFT(nil))
	require.Empty(t, IFFT(nil))
	require.Empty(t, RFFT(nil))
	require.Empty(t, DFT(nil))
}

func TestRFFT(t *testing.T) {
	rng := newRNG(52)
	for _, n := range fftSizes {
		x := randVec(rng, n)
		xc := make([]complex128, n)
		for i, v := range x {
			xc[i] = complex(v, 0)
		}
		got := RFFT(x)
		require.Len(t, got, n/2+1)
		require.LessOrEqual(t, RelErrComplex(got, FFT(xc)[:n/2+1]), fftTol, "n = %d", n)
		require.LessOrEqual(t, RelErr(must(IRFFT(got, n)).get(t), x), fftTol, "round trip n = %d", n)
	}
}

func TestFFT2(t *testing.T) {
	rng := newRNG(53)
	for _, sz := range [][2]int{{1, 1}, {1, 5}, {5, 1}, {4, 3}, {8, 16}, {6, 10}} {
		rows, cols := sz[0], sz[1]
		x := randComplex(rng, rows*cols)
		// Separable reference: DFT along rows, then along columns.
		want := slices.Clone(x)
		for r := range rows {
			copy(want[r*cols:], DFT(want[r*cols:(r+1)*cols]))
		}
		col := make([]complex128, rows)
		for c := range cols {
			for r := range rows {
				col[r] = want[r*cols+c]
			}
			d := DFT(col)
			for r := range rows {
				want[r*cols+c] = d[r]
			}
		}
		require.LessOrEqual(t, RelErrComplex(must(FFT2(x, rows, cols)).get(t), want), fftTol, "%d×%d", rows, cols)
	}
	// And the defining double sum for one small case, independent of
	// separability.
	const rows, cols = 3, 4
	x := randComplex(rng, rows*cols)
	want := make([]complex128, rows*cols)
	for k := range rows {
		for l := range cols {
			var s complex128
			for j := range rows {
				for m := range cols {
					ph := -2 * math.Pi * (float64(j*k)/rows + float64(m*l)/cols)
					s += x[j*cols+m] * cmplx.Exp(complex(0, ph))
				}
			}
			want[k*cols+l] = s
		}
	}
	require.LessOrEqual(t, RelErrComplex(must(FFT2(x, rows, cols)).get(t), want), fftTol)
}
