package reference

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// HaarOrthogonal returns an n×n orthogonal matrix distributed according to
// Haar measure on O(n): the Q factor of the QR factorization of a matrix of
// independent standard normal entries, with column j multiplied by
// sign(R_jj) so the factorization is unique and the distribution exactly
// Haar (Stewart, SIAM J. Numer. Anal. 17, 1980; Mezzadri, Notices AMS 54,
// 2007). It fails with ErrInput if n < 1 or rng is nil.
func HaarOrthogonal(n int, rng *rand.Rand) (*mat.Dense, error) {
	if err := checkPositive("HaarOrthogonal", "n", n); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("reference: HaarOrthogonal: nil rng: %w", ErrInput)
	}
	return haarOrthogonal(n, rng), nil
}

// haarOrthogonal is HaarOrthogonal for validated arguments.
func haarOrthogonal(n int, rng *rand.Rand) *mat.Dense {
	g := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			g.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q, r mat.Dense
	qr.QTo(&q)
	qr.RTo(&r)
	for j := range n {
		if r.At(j, j) < 0 {
			for i := range n {
				q.Set(i, j, -q.At(i, j))
			}
		}
	}
	return &q
}

// RandSVDSigma returns the singular values σ_1 ≥ … ≥ σ_n that RandSVD
// imposes, following MATLAB's gallery('randsvd', n, κ, mode) (Higham, The
// Test Matrix Toolbox for MATLAB, 1995):
//
//	mode 1: one large:   σ = (1, 1/κ, …, 1/κ)
//	mode 2: one small:   σ = (1, …, 1, 1/κ)
//	mode 3: geometric:   σ_i = κ^(−(i−1)/(n−1))
//	mode 4: arithmetic:  σ_i = 1 − (1 − 1/κ)(i−1)/(n−1)
//
// so σ_1 = 1 and, for n ≥ 2, σ_n = 1/κ and cond₂ = κ. For n = 1 it returns
// (1). It fails with ErrInput if n < 1, κ < 1 or not finite, or mode is
// not 1–4.
func RandSVDSigma(n int, kappa float64, mode int) ([]float64, error) {
	if err := checkRandSVD("RandSVDSigma", n, kappa, mode); err != nil {
		return nil, err
	}
	return randSVDSigma(n, kappa, mode), nil
}

// checkRandSVD validates the arguments of RandSVDSigma.
func checkRandSVD(fn string, n int, kappa float64, mode int) error {
	if err := checkPositive(fn, "n", n); err != nil {
		return err
	}
	if !(kappa >= 1) || math.IsInf(kappa, 0) {
		return fmt.Errorf("reference: %s: κ = %v, want finite and ≥ 1: %w", fn, kappa, ErrInput)
	}
	if mode < 1 || mode > 4 {
		return fmt.Errorf("reference: %s: mode = %d, want 1, 2, 3 or 4: %w", fn, mode, ErrInput)
	}
	return nil
}

// randSVDSigma is RandSVDSigma for validated arguments.
func randSVDSigma(n int, kappa float64, mode int) []float64 {
	s := make([]float64, n)
	s[0] = 1
	if n == 1 {
		return s
	}
	for i := 1; i < n; i++ {
		t := float64(i) / float64(n-1) // (i−1)/(n−1) in 1-based terms
		switch mode {
		case 1:
			s[i] = 1 / kappa
		case 2:
			s[i] = 1
		case 3:
			s[i] = math.Pow(kappa, -t)
		case 4:
			s[i] = 1 - (1-1/kappa)*t
		}
	}
	s[n-1] = 1 / kappa // exact end point for every mode
	return s
}

// RandSVD returns a random n×n matrix with prescribed singular values
// σ = RandSVDSigma(n, κ, mode): A = U·diag(σ)·Vᵀ with U, V independent
// Haar-random orthogonal matrices (HaarOrthogonal). With sym = true it
// returns the symmetric positive definite A = Q·diag(σ)·Qᵀ, whose
// eigenvalues are σ; it is symmetrized, (A + Aᵀ)/2, so that it is exactly
// symmetric. In both cases cond₂(A) = κ up to rounding. It fails with
// ErrInput on the arguments RandSVDSigma rejects or a nil rng.
func RandSVD(n int, kappa float64, mode int, sym bool, rng *rand.Rand) (*mat.Dense, error) {
	if err := checkRandSVD("RandSVD", n, kappa, mode); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("reference: RandSVD: nil rng: %w", ErrInput)
	}
	sigma := randSVDSigma(n, kappa, mode)
	u := haarOrthogonal(n, rng)
	v := u
	if !sym {
		v = haarOrthogonal(n, rng)
	}
	// A = (U·Σ)·Vᵀ.
	us := mat.DenseCopyOf(u)
	for j := range n {
		for i := range n {
			us.Set(i, j, us.At(i, j)*sigma[j])
		}
	}
	var a mat.Dense
	a.Mul(us, v.T())
	if sym {
		for i := range n {
			for j := i + 1; j < n; j++ {
				m := (a.At(i, j) + a.At(j, i)) / 2
				a.Set(i, j, m)
				a.Set(j, i, m)
			}
		}
	}
	return &a, nil
}

// KMS returns the n×n Kac–Murdock–Szegő Toeplitz matrix A_ij = ρ^|i−j|
// (Kac, Murdock & Szegő, J. Rational Mech. Anal. 2, 1953; MATLAB
// gallery('kms')). For |ρ| < 1 it is symmetric positive definite with
// det A = (1 − ρ²)^(n−1) and a tridiagonal inverse:
// A⁻¹ = tridiag(−ρ, 1 + ρ², −ρ)/(1 − ρ²) with the corner diagonal entries
// 1/(1 − ρ²), as multiplying out shows. It fails with ErrInput if n < 1 or
// ρ is NaN or Inf.
func KMS(n int, rho float64) (*mat.Dense, error) {
	if err := checkPositive("KMS", "n", n); err != nil {
		return nil, err
	}
	if math.IsNaN(rho) || math.IsInf(rho, 0) {
		return nil, fmt.Errorf("reference: KMS: ρ = %v, want finite: %w", rho, ErrInput)
	}
	pow := make([]float64, n)
	pow[0] = 1
	for k := 1; k < n; k++ {
		pow[k] = pow[k-1] * rho
	}
	a := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			d := i - j
			if d < 0 {
				d = -d
			}
			a.Set(i, j, pow[d])
		}
	}
	return a, nil
}

// Grcar returns the n×n Grcar matrix with k superdiagonals: the Toeplitz
// matrix with −1 on the subdiagonal and +1 on the main diagonal and the
// first k superdiagonals (Grcar, Sandia report SAND89-8691, 1989; Trefethen
// & Embree, Spectra and Pseudospectra, 2005; MATLAB gallery('grcar', n, k),
// default k = 3).
// It is nonsymmetric and nonnormal, with eigenvalues far more sensitive
// than its singular values, a stress test for GMRES. It fails with ErrInput
// if n < 1 or k < 0.
func Grcar(n, k int) (*mat.Dense, error) {
	if err := checkPositive("Grcar", "n", n); err != nil {
		return nil, err
	}
	if k < 0 {
		return nil, fmt.Errorf("reference: Grcar: k = %d, want ≥ 0: %w", k, ErrInput)
	}
	a := mat.NewDense(n, n, nil)
	for i := range n {
		if i > 0 {
			a.Set(i, i-1, -1)
		}
		for j := i; j <= i+k && j < n; j++ {
			a.Set(i, j, 1)
		}
	}
	return a, nil
}
