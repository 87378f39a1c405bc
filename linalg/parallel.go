package linalg

import (
	"github.com/anemone-go/anemone/internal/parallel"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// parallelMin is the fewest matrix elements a pass splits across cores
// for: below it a goroutine costs more than it saves.
const parallelMin = 1 << 16

// gemvMin is parallelMin for gemv, which is called in loops (the
// triangular solves' blocks): waking an idle core costs tens of
// microseconds, more than the product of one block row takes.
const gemvMin = 1 << 19

// parts is how many row ranges a pass over rows×cols elements runs in
// (parallel.Parts, at most one per parallelMin elements). The host's
// O(n²) passes run in them: gonum's LU, which the solves are measured
// against, uses every core too.
func parts(rows, cols int) int { return parallel.Parts(rows, rows*cols, parallelMin) }

// gemv is blas64.Gemv, y = α·op(A)·x + β·y, split across cores by the
// elements of y (rows of A, or its columns for op = Aᵀ) when A is large
// enough: each part is gonum's Dgemv on its own rows or columns.
func gemv(tr blas.Transpose, alpha float64, a blas64.General, x []float64, beta float64, y []float64) {
	vec := func(v []float64) blas64.Vector { return blas64.Vector{N: len(v), Inc: 1, Data: v} }
	if tr == blas.NoTrans {
		parallel.Ranges(a.Rows, parallel.Parts(a.Rows, a.Rows*a.Cols, gemvMin), func(_, lo, hi int) {
			part := blas64.General{Rows: hi - lo, Cols: a.Cols, Stride: a.Stride, Data: a.Data[lo*a.Stride:]}
			blas64.Gemv(tr, alpha, part, vec(x[:a.Cols]), beta, vec(y[lo:hi]))
		})
		return
	}
	parallel.Ranges(a.Cols, parallel.Parts(a.Cols, a.Rows*a.Cols, gemvMin), func(_, lo, hi int) {
		part := blas64.General{Rows: a.Rows, Cols: hi - lo, Stride: a.Stride, Data: a.Data[lo:]}
		blas64.Gemv(tr, alpha, part, vec(x[:a.Rows]), beta, vec(y[lo:hi]))
	})
}
