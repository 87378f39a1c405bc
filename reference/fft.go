package reference

import (
	"fmt"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
)

// FFT returns the unnormalized forward discrete Fourier transform
//
//	X_k = Σ_{j=0}^{n−1} x_j·exp(−2πi·jk/n),  k = 0, …, n−1,
//
// computed by gonum's mixed-radix FFT (dsp/fourier.CmplxFFT, a port of
// FFTPACK; Swarztrauber 1982). Any n ≥ 1 is allowed; n = 0 returns an empty
// slice. x is not modified.
func FFT(x []complex128) []complex128 {
	if len(x) == 0 {
		return []complex128{}
	}
	return fourier.NewCmplxFFT(len(x)).Coefficients(nil, x)
}

// IFFT returns the inverse DFT x_j = (1/n)·Σ_k X_k·exp(+2πi·jk/n), so
// IFFT(FFT(x)) = x up to rounding. n = 0 returns an empty slice.
func IFFT(c []complex128) []complex128 {
	n := len(c)
	if n == 0 {
		return []complex128{}
	}
	x := fourier.NewCmplxFFT(n).Sequence(nil, c)
	inv := complex(1/float64(n), 0)
	for i := range x {
		x[i] *= inv
	}
	return x
}

// RFFT returns the first n/2+1 coefficients X_0 … X_{⌊n/2⌋} of the forward
// DFT of the real sequence x (the rest follow from X_{n−k} = conj(X_k)),
// computed by gonum's real FFT (dsp/fourier.FFT). n = 0 returns an empty
// slice.
func RFFT(x []float64) []complex128 {
	if len(x) == 0 {
		return []complex128{}
	}
	return fourier.NewFFT(len(x)).Coefficients(nil, x)
}

// IRFFT inverts RFFT: given the n/2+1 coefficients c of a real sequence of
// length n it returns that sequence, normalized by 1/n, so
// IRFFT(RFFT(x), len(x)) = x up to rounding. The imaginary parts of c[0]
// and, for even n, c[n/2] are ignored (they are zero for a real sequence).
// n is needed because lengths 2k and 2k+1 share the coefficient count k+1.
// It fails with ErrInput if n < 1 and with ErrShape unless
// len(c) == n/2+1.
func IRFFT(c []complex128, n int) ([]float64, error) {
	if n < 1 {
		return nil, fmt.Errorf("reference: IRFFT: n = %d, want ≥ 1: %w", n, ErrInput)
	}
	if len(c) != n/2+1 {
		return nil, fmt.Errorf("reference: IRFFT: %d coefficients for n = %d, want %d: %w", len(c), n, n/2+1, ErrShape)
	}
	x := fourier.NewFFT(n).Sequence(nil, c)
	inv := 1 / float64(n)
	for i := range x {
		x[i] *= inv
	}
	return x, nil
}

// FFT2 returns the unnormalized 2-D forward DFT of the row-major rows×cols
// array x,
//
//	X[k, l] = Σ_j Σ_m x[j, m]·exp(−2πi·(jk/rows + ml/cols)),
//
// as 1-D FFTs along the rows and then along the columns (the transform is
// separable). The result is row-major too. It fails with ErrInput unless
// rows, cols ≥ 1 and with ErrShape unless len(x) == rows·cols.
func FFT2(x []complex128, rows, cols int) ([]complex128, error) {
	if rows < 1 || cols < 1 {
		return nil, fmt.Errorf("reference: FFT2: %d×%d array, want rows, cols ≥ 1: %w", rows, cols, ErrInput)
	}
	// len(x)/cols == rows without forming rows·cols, which could overflow.
	if len(x)%cols != 0 || len(x)/cols != rows {
		return nil, fmt.Errorf("reference: FFT2: %d values for a %d×%d array: %w", len(x), rows, cols, ErrShape)
	}
	out := make([]complex128, len(x))
	rowFFT := fourier.NewCmplxFFT(cols)
	for r := range rows {
		rowFFT.Coefficients(out[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols])
	}
	colFFT := fourier.NewCmplxFFT(rows)
	col := make([]complex128, rows)
	for c := range cols {
		for r := range rows {
			col[r] = out[r*cols+c]
		}
		colFFT.Coefficients(col, col)
		for r := range rows {
			out[r*cols+c] = col[r]
		}
	}
	return out, nil
}

// DFT returns the forward DFT of x by the defining O(n²) sum, with the same
// convention as FFT. The twiddle factors are exp(−2πi·(jk mod n)/n), the
// argument reduced exactly in integers, so each one is accurate to a few ulps
// and the error of X_k is about n·ε·Σ|x_j| at most; use it as the check for
// FFT in tests.
func DFT(x []complex128) []complex128 {
	n := len(x)
	w := make([]complex128, n) // w[m] = exp(−2πi·m/n)
	for m := range n {
		w[m] = cmplx.Exp(complex(0, -2*math.Pi*float64(m)/float64(n)))
	}
	out := make([]complex128, n)
	for k := range n {
		var s complex128
		for j := range n {
			s += x[j] * w[(j*k)%n]
		}
		out[k] = s
	}
	return out
}
