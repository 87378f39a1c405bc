package linalg

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// panelLeaf is the column count below which getrf32 eliminates column by
// column.
const panelLeaf = 16

// getrf32 factors the m×n (m ≥ n) row-major a (stride lda) with partial
// pivoting in float32, recursively (Toledo 1997; LAPACK's dgetrf2): the
// left half, its row swaps applied to the right half, U₁₂ = L₁₁⁻¹·A₁₂,
// A₂₂ −= L₂₁·U₁₂ (blas32.Gemm, where nearly all the flops are), then the
// right half. ipiv[j] is the row swapped with row j at step j, as in
// LAPACK. ok is false at an exactly zero pivot (the factorization stops).
func getrf32(m, n int, a []float32, lda int, ipiv []int) (ok bool) {
	if n <= panelLeaf {
		return getf2_32(m, n, a, lda, ipiv)
	}
	n1 := n / 2
	if n1 > panelLeaf {
		n1 = n1 / panelLeaf * panelLeaf
	}
	n2 := n - n1
	if !getrf32(m, n1, a, lda, ipiv[:n1]) {
		return false
	}
	for j, p := range ipiv[:n1] {
		if p != j {
			swap32(a[j*lda+n1:j*lda+n], a[p*lda+n1:p*lda+n])
		}
	}
	blas32.Trsm(blas.Left, blas.NoTrans, 1,
		blas32.Triangular{Uplo: blas.Lower, Diag: blas.Unit, N: n1, Stride: lda, Data: a},
		blas32.General{Rows: n1, Cols: n2, Stride: lda, Data: a[n1:]})
	if m > n1 {
		blas32.Gemm(blas.NoTrans, blas.NoTrans, -1,
			blas32.General{Rows: m - n1, Cols: n1, Stride: lda, Data: a[n1*lda:]},
			blas32.General{Rows: n1, Cols: n2, Stride: lda, Data: a[n1:]},
			1, blas32.General{Rows: m - n1, Cols: n2, Stride: lda, Data: a[n1*lda+n1:]})
	}
	ip2 := ipiv[n1:]
	if !getrf32(m-n1, n2, a[n1*lda+n1:], lda, ip2) {
		return false
	}
	for j, p := range ip2 {
		if p != j {
			swap32(a[(n1+j)*lda:(n1+j)*lda+n1], a[(n1+p)*lda:(n1+p)*lda+n1])
		}
		ip2[j] = p + n1
	}
	return true
}

// getf2_32 is getrf32's leaf: column by column, the pivot, the row swap,
// the multipliers and the rank-1 update of the leaf's other columns.
func getf2_32(m, n int, a []float32, lda int, ipiv []int) bool {
	for j := range n {
		p, best := j, float32(-1)
		for i := j; i < m; i++ {
			if v := float32(math.Abs(float64(a[i*lda+j]))); v > best {
				p, best = i, v
			}
		}
		ipiv[j] = p
		if best == 0 {
			return false
		}
		if p != j {
			swap32(a[j*lda:j*lda+n], a[p*lda:p*lda+n])
		}
		piv := a[j*lda+j]
		inv := 1 / piv
		urow := a[j*lda+j+1 : j*lda+n]
		for i := j + 1; i < m; i++ {
			row := a[i*lda+j : i*lda+n]
			l := row[0] * inv
			row[0] = l
			for k, u := range urow {
				row[k+1] -= l * u
			}
		}
	}
	return true
}

func swap32(x, y []float32) {
	for i := range x {
		x[i], y[i] = y[i], x[i]
	}
}
