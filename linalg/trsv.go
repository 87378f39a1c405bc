package linalg

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// trsvBlock is the diagonal block of the blocked triangular solves: the
// rest of each solve is matrix–vector products, which gonum's Dgemv runs
// at memory speed, where its Dtrsv on the whole triangle runs at about a
// third of it.
const trsvBlock = 64

// solveLU overwrites x (length n) by U⁻¹·L⁻¹·x for the packed row-major
// factors lu (L unit lower, strictly below the diagonal; U upper), or by
// L⁻ᵀ·U⁻ᵀ·x when trans: blas64.Trsv's results, in blocks.
func solveLU(lu []float64, n int, x []float64, trans bool) {
	if trans {
		triSolve(lu, n, x, blas.Upper, blas.Trans)
		triSolve(lu, n, x, blas.Lower, blas.Trans)
		return
	}
	triSolve(lu, n, x, blas.Lower, blas.NoTrans)
	triSolve(lu, n, x, blas.Upper, blas.NoTrans)
}

// triSolve solves one triangle of lu (the unit lower or the upper one) for
// x in place, op(T)·y = x, by blocks of trsvBlock. For T itself each
// block first subtracts the product of the rows of T beside its diagonal
// block with the part of y already solved (dot products along T's rows),
// then solves its diagonal block; for Tᵀ each block is solved first and
// its rows of T then update the part of x still to solve (axpys along
// T's rows), so that both read T row by row.
func triSolve(lu []float64, n int, x []float64, uplo blas.Uplo, tr blas.Transpose) {
	diag := blas.NonUnit
	if uplo == blas.Lower {
		diag = blas.Unit
	}
	// op(T) is lower triangular (solved forward) for L and for Uᵀ.
	forward := (uplo == blas.Lower) == (tr == blas.NoTrans)
	block := func(i0, i1 int) {
		blas64.Trsv(tr, blas64.Triangular{Uplo: uplo, Diag: diag, N: i1 - i0, Stride: n, Data: lu[i0*n+i0:]},
			blas64.Vector{N: i1 - i0, Inc: 1, Data: x[i0:i1]})
	}
	// rows is the part of T in rows [i0, i1) and columns [j0, j1).
	rows := func(i0, i1, j0, j1 int) blas64.General {
		return blas64.General{Rows: i1 - i0, Cols: j1 - j0, Stride: n, Data: lu[i0*n+j0:]}
	}
	for k := 0; k < n; k += trsvBlock {
		// The block's rows, in the order of the solve.
		i0, i1 := k, min(k+trsvBlock, n)
		if !forward {
			i0, i1 = max(n-k-trsvBlock, 0), n-k
		}
		switch {
		case tr == blas.NoTrans && forward && i0 > 0:
			gemv(blas.NoTrans, -1, rows(i0, i1, 0, i0), x[:i0], 1, x[i0:i1])
		case tr == blas.NoTrans && !forward && i1 < n:
			gemv(blas.NoTrans, -1, rows(i0, i1, i1, n), x[i1:], 1, x[i0:i1])
		}
		block(i0, i1)
		switch {
		case tr == blas.Trans && forward && i1 < n:
			gemv(blas.Trans, -1, rows(i0, i1, i1, n), x[i0:i1], 1, x[i1:])
		case tr == blas.Trans && !forward && i0 > 0:
			gemv(blas.Trans, -1, rows(i0, i1, 0, i0), x[i0:i1], 1, x[:i0])
		}
	}
}
