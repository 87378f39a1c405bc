package reference

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// svAbsTol bounds |σ̂_i − σ_i| for RandSVD with σ_1 = 1. Forming U·Σ·Vᵀ
// perturbs A by ‖ΔA‖₂ ≲ n·u·‖A‖₂ and the SVD adds as much again; by Weyl's
// inequality (Golub & Van Loan, 4th ed., §8.6.1) each σ moves by at most
// that: 2·64·1.1e-16 ≈ 1.4e-14 for n ≤ 64. We allow 1e-13.
const svAbsTol = 1e-13

// svRelTol is the brief's elementwise relative tolerance; with σ_n = 1/κ it
// follows from svAbsTol for κ ≤ 1e3 (1e-13·1e3 = 1e-10).
const svRelTol = 1e-10

func TestRandSVD(t *testing.T) {
	rng := newRNG(21)
	for _, n := range []int{1, 2, 7, 40} {
		for mode := 1; mode <= 4; mode++ {
			for _, kappa := range []float64{1, 10, 1e3, 1e8} {
				for _, sym := range []bool{false, true} {
					a := must(RandSVD(n, kappa, mode, sym, rng)).get(t)
					want := must(RandSVDSigma(n, kappa, mode)).get(t)
					got := SingularValues(a)
					// RandSVDSigma is decreasing, as are gonum's values.
					require.Len(t, got, n)
					for i := range want {
						require.LessOrEqual(t, math.Abs(got[i]-want[i]), svAbsTol, "n=%d mode=%d κ=%g sym=%v i=%d", n, mode, kappa, sym, i)
						if kappa <= 1e3 {
							require.LessOrEqual(t, math.Abs(got[i]-want[i]), svRelTol*want[i])
						}
					}
					if n > 1 {
						require.InEpsilon(t, kappa, Cond2(a), 0.01)
					}
					if sym {
						require.True(t, IsSymmetric(a, 0))
						if kappa < 1e8 {
							require.True(t, IsSPD(a), "n=%d mode=%d κ=%g", n, mode, kappa)
						}
					}
				}
			}
		}
	}
}

func TestRandSVDSigma(t *testing.T) {
	require.Equal(t, []float64{1, 0.1, 0.1, 0.1}, must(RandSVDSigma(4, 10, 1)).get(t))
	require.Equal(t, []float64{1, 1, 1, 0.1}, must(RandSVDSigma(4, 10, 2)).get(t))
	require.InDeltaSlice(t, []float64{1, 0.1, 0.01}, must(RandSVDSigma(3, 100, 3)).get(t), 1e-16)
	require.InDeltaSlice(t, []float64{1, 0.55, 0.1}, must(RandSVDSigma(3, 10, 4)).get(t), 1e-16)
	require.Equal(t, []float64{1}, must(RandSVDSigma(1, 1e6, 3)).get(t))
}

func TestRandSVDDeterministic(t *testing.T) {
	a := must(RandSVD(10, 100, 3, false, newRNG(5))).get(t)
	b := must(RandSVD(10, 100, 3, false, newRNG(5))).get(t)
	c := must(RandSVD(10, 100, 3, false, newRNG(6))).get(t)
	require.True(t, mat.Equal(a, b))
	require.False(t, mat.Equal(a, c))
}

func TestHaarOrthogonal(t *testing.T) {
	rng := newRNG(31)
	// Orthogonality: QᵀQ = I to a few n·u.
	for _, n := range []int{1, 3, 30} {
		q := must(HaarOrthogonal(n, rng)).get(t)
		var qtq mat.Dense
		qtq.Mul(q.T(), q)
		var id mat.Dense
		id.Sub(&qtq, eye(n))
		require.LessOrEqual(t, mat.Norm(&id, math.Inf(1)), float64(n)*16*u64)
	}
	// Haar measure makes every entry symmetric about 0, with E[q²] = 1/n.
	// Without the sign fix, Householder QR gives Q_00 = −|g_00|/‖g_0‖ < 0
	// always (mean ≈ −0.6 for n = 3). Over 2000 samples the mean has
	// standard deviation √(1/3/2000) ≈ 0.013, so 0.06 is a 4.6σ bound.
	const samples, n = 2000, 3
	var mean, sq float64
	for range samples {
		q := must(HaarOrthogonal(n, rng)).get(t)
		mean += q.At(0, 0)
		sq += q.At(0, 0) * q.At(0, 0)
	}
	mean /= samples
	sq /= samples
	require.Less(t, math.Abs(mean), 0.06)
	require.InDelta(t, 1.0/n, sq, 0.03)
}

func eye(n int) *mat.Dense {
	d := mat.NewDense(n, n, nil)
	for i := range n {
		d.Set(i, i, 1)
	}
	return d
}

func TestKMS(t *testing.T) {
	for _, rho := range []float64{0.5, -0.9, 0} {
		const n = 12
		a := must(KMS(n, rho)).get(t)
		require.Equal(t, math.Pow(rho, 5), a.At(2, 7))
		require.True(t, IsSymmetric(a, 0))
		require.True(t, IsSPD(a))
		// Tridiagonal inverse (see KMS doc).
		inv := mat.NewDense(n, n, nil)
		d := 1 / (1 - rho*rho)
		for i := range n {
			inv.Set(i, i, (1+rho*rho)*d)
			if i > 0 {
				inv.Set(i, i-1, -rho*d)
				inv.Set(i-1, i, -rho*d)
			}
		}
		inv.Set(0, 0, d)
		inv.Set(n-1, n-1, d)
		var diff mat.Dense
		diff.Sub(must(MatMul(a, inv)).get(t), eye(n))
		// ‖A‖∞·‖A⁻¹‖∞ ≤ (2/(1−|ρ|))·((1+|ρ|)²/(1−ρ²)) ≈ 380 for |ρ| = 0.9;
		// the product rounds to a few u times that.
		require.LessOrEqual(t, mat.Norm(&diff, math.Inf(1)), 1e-12, "ρ = %g", rho)
	}
	require.False(t, IsSPD(must(KMS(4, 1)).get(t)), "all-ones matrix is singular")
}

func TestGrcar(t *testing.T) {
	want := mat.NewDense(5, 5, []float64{
		1, 1, 1, 1, 0,
		-1, 1, 1, 1, 1,
		0, -1, 1, 1, 1,
		0, 0, -1, 1, 1,
		0, 0, 0, -1, 1,
	})
	require.True(t, mat.Equal(want, must(Grcar(5, 3)).get(t)))
	require.False(t, IsSymmetric(must(Grcar(5, 3)).get(t), 0.1))
	bidiag := must(Grcar(3, 0)).get(t)
	require.True(t, mat.Equal(mat.NewDense(3, 3, []float64{1, 0, 0, -1, 1, 0, 0, -1, 1}), bidiag))
	// Grcar matrices are well conditioned (κ₂ < 4 for k = 3).
	require.Less(t, Cond2(must(Grcar(100, 3)).get(t)), 4.0)
}
