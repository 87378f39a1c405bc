package linalg

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// panelLeaf is the width below which recursiveLU hands a panel to
// LAPACK's dgetrf (unblocked at such widths).
const panelLeaf = 16

// recursiveLU factors the m×k row-major a (m ≥ k) with partial pivoting
// in place, as LAPACK's dgetrf does, and records in ipiv[j] the row
// swapped with row j. It splits the columns in halves (Toledo, SIAM J.
// Matrix Anal. Appl. 18(4), 1997): the left half recursively, then
// A₁₂ ← L₁₁⁻¹·A₁₂ and A₂₂ ← A₂₂ − L₂₁·A₁₂ as level-3 products, then the
// right half recursively, so that almost all of its 2·m·k² flops are
// matrix products rather than the rank-one updates dgetrf spends a
// quarter of them in on a tall panel. ok is false when a pivot is exactly
// zero (the factorization still completes, as dgetrf's does).
func recursiveLU(a blas64.General, ipiv []int) (ok bool) {
	m, k := a.Rows, a.Cols
	if k <= panelLeaf {
		return lapack64.Getrf(a, ipiv[:k])
	}
	k1 := k / 2
	left := blas64.General{Rows: m, Cols: k1, Stride: a.Stride, Data: a.Data}
	right := blas64.General{Rows: m, Cols: k - k1, Stride: a.Stride, Data: a.Data[k1:]}
	ok = recursiveLU(left, ipiv[:k1])
	swapRows(right, ipiv[:k1], 0)
	a11 := blas64.Triangular{Uplo: blas.Lower, Diag: blas.Unit, N: k1, Stride: a.Stride, Data: a.Data}
	a12 := blas64.General{Rows: k1, Cols: k - k1, Stride: a.Stride, Data: a.Data[k1:]}
	blas64.Trsm(blas.Left, blas.NoTrans, 1, a11, a12)
	a21 := blas64.General{Rows: m - k1, Cols: k1, Stride: a.Stride, Data: a.Data[k1*a.Stride:]}
	a22 := blas64.General{Rows: m - k1, Cols: k - k1, Stride: a.Stride, Data: a.Data[k1*a.Stride+k1:]}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, a21, a12, 1, a22)
	ok = recursiveLU(a22, ipiv[k1:]) && ok
	// The right half's swaps are relative to row k1: make them absolute
	// and apply them to the left half's rows below k1.
	for j := k1; j < k; j++ {
		ipiv[j] += k1
	}
	swapRows(left, ipiv[k1:k], k1)
	return ok
}

// swapRows swaps row j+off with row ipiv[j] of a, in order, for every j.
func swapRows(a blas64.General, ipiv []int, off int) {
	for j, p := range ipiv {
		if r := j + off; p != r {
			x := a.Data[r*a.Stride : r*a.Stride+a.Cols]
			y := a.Data[p*a.Stride : p*a.Stride+a.Cols]
			for t := range x {
				x[t], y[t] = y[t], x[t]
			}
		}
	}
}
