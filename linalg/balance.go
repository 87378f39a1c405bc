package linalg

import (
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/internal/dense"
)

// balanceSpread is the spread, in binades, of the ratios between A's
// column maxima and B's row maxima past which balance rescales them.
// Products of ordinary data (ratios spanning at most 2¹⁰ over the
// contraction index) are left as they are, bit for bit.
const balanceSpread = 10

// balance returns A·D and D⁻¹·B for a diagonal D of powers of two that
// brings the largest entry of column j of A and of row j of B to within a
// factor 2 of each other (their geometric mean), so that A·B = (A·D)·(D⁻¹·B)
// exactly, or a and b themselves when the ratios of those maxima already
// lie within 2^balanceSpread of each other. The device's products scale
// every row of the left operand and every column of the right one by a
// power of two and keep a fixed number of bits below its largest entry
// (11 in FP16, 30 compensated); A with columns scaled by d_j and B with
// rows scaled by 1/d_j (d_j spanning 1e-150 … 1e150), whose product is of
// ordinary size, would otherwise lose every term. Balanced, no operand
// entry's maximum grows past max(‖A‖_max, ‖B‖_max), and the products'
// error bound max_i max_j |a_ij|·d_j · max_k max_j |b_jk|/d_j stays at
// most ‖A‖_max·‖B‖_max. Entries that the scaling takes into float64's
// subnormal range lose bits below 2⁻¹⁰⁷⁴ of their column's (row's)
// maximum, a term below 2⁻¹⁰⁷⁴·max|a_ij|·max|b_jk| of the product.
func balance(a, b mat.Matrix) (mat.Matrix, mat.Matrix) {
	m, k := a.Dims()
	_, n := b.Dims()
	ca, rb := make([]float64, k), make([]float64, k)
	ar, br := dense.Rows(a), dense.Rows(b)
	for _, row := range ar {
		for j, v := range row {
			if v := math.Abs(v); v > ca[j] {
				ca[j] = v
			}
		}
	}
	for j, row := range br {
		mx := 0.0
		for _, v := range row {
			if v := math.Abs(v); v > mx {
				mx = v
			}
		}
		rb[j] = mx
	}
	h := make([]int, k) // column j of A times 2^−h_j, row j of B times 2^h_j
	lo, hi := math.MaxInt, math.MinInt
	for j := range k {
		if ca[j] == 0 || rb[j] == 0 {
			continue // the term is zero whatever the scale
		}
		_, ea := math.Frexp(ca[j])
		_, eb := math.Frexp(rb[j])
		t := ea - eb
		lo, hi = min(lo, t), max(hi, t)
		h[j] = int(math.Floor(float64(t) / 2))
	}
	if lo > hi || hi-lo <= balanceSpread {
		return a, b
	}
	as, bs := mat.NewDense(m, k, nil), mat.NewDense(k, n, nil)
	for i, row := range ar {
		for j, v := range row {
			as.Set(i, j, math.Ldexp(v, -h[j]))
		}
	}
	for j, row := range br {
		for l, v := range row {
			bs.Set(j, l, math.Ldexp(v, h[j]))
		}
	}
	return as, bs
}
