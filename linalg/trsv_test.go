package linalg

import (
	"github.com/stretchr/testify/require"
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// The blocked solves must agree with gonum's Dtrsv to rounding (the sums
// are taken in another order), at sizes below, at and between blocks.
func TestSolveLUMatchesTrsv(t *testing.T) {
	rng := newRNG(11)
	for _, n := range []int{1, 2, 63, 64, 65, 130, 300, 2100} { // 2100: the off-diagonal products split across cores
		lu := make([]float64, n*n)
		for i := range lu {
			lu[i] = rng.NormFloat64() / math.Sqrt(float64(n))
		}
		for i := range n {
			lu[i*n+i] = 2 + rng.Float64()
		}
		for _, trans := range []bool{false, true} {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			want := append([]float64(nil), x...)
			lo := blas64.Triangular{Uplo: blas.Lower, Diag: blas.Unit, N: n, Stride: n, Data: lu}
			up := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: n, Stride: n, Data: lu}
			v := blas64.Vector{N: n, Inc: 1, Data: want}
			if trans {
				blas64.Trsv(blas.Trans, up, v)
				blas64.Trsv(blas.Trans, lo, v)
			} else {
				blas64.Trsv(blas.NoTrans, lo, v)
				blas64.Trsv(blas.NoTrans, up, v)
			}
			solveLU(lu, n, x, trans)
			scale := 0.0
			for _, w := range want {
				scale = math.Max(scale, math.Abs(w))
			}
			for i := range x {
				// Both are backward stable solves of a well-conditioned
				// triangle: they differ by a few n·2⁻⁵³ relative.
				if d := math.Abs(x[i] - want[i]); d > 8*float64(n)*0x1p-53*scale {
					t.Fatalf("n = %d, trans %v: x[%d] = %v, Dtrsv gives %v", n, trans, i, x[i], want[i])
				}
			}
		}
	}
}

// gemv splits large products across cores: it must give Dgemv's result
// bit for bit (each element is one Dgemv dot or axpy chain either way).
func TestGemvMatchesDgemv(t *testing.T) {
	rng := newRNG(12)
	m, k := 900, 700 // 630,000 elements: past gemvMin
	a := blas64.General{Rows: m, Cols: k, Stride: k + 3, Data: make([]float64, m*(k+3))}
	for i := range a.Data {
		a.Data[i] = rng.NormFloat64()
	}
	for _, tr := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		nx, ny := k, m
		if tr == blas.Trans {
			nx, ny = m, k
		}
		x, y := make([]float64, nx), make([]float64, ny)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		for i := range y {
			y[i] = rng.NormFloat64()
		}
		want := append([]float64(nil), y...)
		blas64.Gemv(tr, -1.5, a, blas64.Vector{N: nx, Inc: 1, Data: x}, 0.5, blas64.Vector{N: ny, Inc: 1, Data: want})
		gemv(tr, -1.5, a, x, 0.5, y)
		if tr == blas.NoTrans {
			require.Equal(t, want, y, "NoTrans")
			continue
		}
		for i := range y { // the column split may group the axpys differently
			require.InDelta(t, want[i], y[i], 1e-12*float64(m), "Trans, y[%d]", i)
		}
	}
}
