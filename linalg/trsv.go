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
// x in place, op(T)·y = x, by blocks of trsvBlock: each block subtracts the
// product of the part of op(T) left of its diagonal block with the part of
// y already solved, then solves its diagonal block.
func triSolve(lu []float64, n int, x []float64, uplo blas.Uplo, tr blas.Transpose) {
	diag := blas.NonUnit
	if uplo == blas.Lower {
		diag = blas.Unit
	}
	// op(T) is lower triangular (solved forward) for L and for Uᵀ.
	forward := (uplo == blas.Lower) == (tr == blas.NoTrans)
	vec := func(lo, hi int) blas64.Vector { return blas64.Vector{N: hi - lo, Inc: 1, Data: x[lo:hi]} }
	block := func(i0, i1 int) {
		k := i1 - i0
		blas64.Trsv(tr, blas64.Triangular{Uplo: uplo, Diag: diag, N: k, Stride: n, Data: lu[i0*n+i0:]}, vec(i0, i1))
	}
	// rect is the part of T that couples block [i0, i1) of y with the
	// solved range [j0, j1): rows [i0,i1)×cols [j0,j1) of T, or its
	// transpose's counterpart, rows [j0,j1)×cols [i0,i1).
	rect := func(i0, i1, j0, j1 int) {
		if j1 <= j0 {
			return
		}
		if tr == blas.NoTrans {
			a := blas64.General{Rows: i1 - i0, Cols: j1 - j0, Stride: n, Data: lu[i0*n+j0:]}
			blas64.Gemv(blas.NoTrans, -1, a, vec(j0, j1), 1, vec(i0, i1))
			return
		}
		a := blas64.General{Rows: j1 - j0, Cols: i1 - i0, Stride: n, Data: lu[j0*n+i0:]}
		blas64.Gemv(blas.Trans, -1, a, vec(j0, j1), 1, vec(i0, i1))
	}
	if forward {
		for i0 := 0; i0 < n; i0 += trsvBlock {
			i1 := min(i0+trsvBlock, n)
			rect(i0, i1, 0, i0)
			block(i0, i1)
		}
		return
	}
	for i1 := n; i1 > 0; i1 -= trsvBlock {
		i0 := max(i1-trsvBlock, 0)
		rect(i0, i1, i1, n)
		block(i0, i1)
	}
}
