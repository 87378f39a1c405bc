package linalg

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGetrf32 checks the float32 panel factorization as LAPACK defines
// it: P·A = L·U with |P·A − L·U| ≤ γ·|L|·|U| entrywise, γ = 2n·2⁻²⁴
// (Higham, Accuracy and Stability, Thm. 9.3, with room for the blocked
// order of the sums), on panels whose widths cross the leaf and the
// recursive splits, partial pivoting (|l| ≤ 1), and an exactly zero
// column reported as such.
func TestGetrf32(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, sh := range [][2]int{{1, 1}, {5, 1}, {9, 8}, {40, 9}, {64, 17}, {300, 64}, {513, 100}, {256, 256}} {
		m, n := sh[0], sh[1]
		a := make([]float32, m*n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		lu := append([]float32(nil), a...)
		ipiv := make([]int, n)
		if !getrf32(m, n, lu, n, ipiv) {
			t.Fatalf("%d×%d: zero pivot reported on a random panel", m, n)
		}
		// P·A: apply the swaps in order.
		pa := make([]float64, m*n)
		for i := range pa {
			pa[i] = float64(a[i])
		}
		for j, p := range ipiv {
			if p < j || p >= m {
				t.Fatalf("%d×%d: ipiv[%d] = %d outside [%d, %d)", m, n, j, p, j, m)
			}
			for k := range n {
				pa[j*n+k], pa[p*n+k] = pa[p*n+k], pa[j*n+k]
			}
		}
		gamma := 2 * float64(n) * 0x1p-24
		for i := range m {
			for k := range n {
				s, bound := 0.0, 0.0
				for t2 := 0; t2 <= min(i, k); t2++ {
					l := 1.0
					if t2 < i {
						l = float64(lu[i*n+t2])
					}
					if t2 == i && t2 > k {
						continue
					}
					u := float64(lu[t2*n+k])
					s += l * u
					bound += math.Abs(l) * math.Abs(u)
				}
				if i > k && math.Abs(float64(lu[i*n+k])) > 1 {
					t.Fatalf("%d×%d: multiplier l[%d][%d] = %g exceeds 1: not partial pivoting", m, n, i, k, lu[i*n+k])
				}
				if d := math.Abs(pa[i*n+k] - s); d > gamma*bound+1e-30 {
					t.Fatalf("%d×%d: |(PA − LU)[%d][%d]| = %g > %g = γ·(|L||U|)", m, n, i, k, d, gamma*bound)
				}
			}
		}
	}
	// A zero column below the first: the second pivot is exactly zero.
	a := []float32{2, 0, 1, 0, 4, 0}
	if getrf32(3, 2, a, 2, make([]int, 2)) {
		t.Fatal("a 3×2 panel with a zero second column: no zero pivot reported")
	}
}
