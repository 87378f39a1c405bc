package krylov

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// lanczosSteps is the number of host Lanczos steps behind a dense
// operator's λ_max bound: 30 products by A, once per operator, against
// the device's Unroll products every dispatch.
const lanczosSteps = 30

// sharpDenseBound turns the Lanczos bound on (tests compare it with the
// Gershgorin bound alone).
var sharpDenseBound = true

// lanczosMargin widens the bound by 5 %: the Chebyshev polynomial is
// bounded by 1 only on its interval, and a little room costs less than an
// eigenvalue left above it.
const lanczosMargin = 0.05

// lanczosInterval returns, from k Lanczos steps on the host with full
// reorthogonalization, the smallest Ritz value lo (at or above the
// smallest eigenvalue: a Chebyshev interval starting there leaves the
// modes below it undamped but never amplified) and an upper bound hi of
// the largest eigenvalue (lambdaMaxBound's). It returns lo = 0, hi = +Inf
// when the iteration fails.
func lanczosInterval(a Operator, k int, margin float64, seed uint64) (lo, hi float64) {
	theta, resid, ok := lanczosExtremes(a, k, seed)
	if !ok {
		return 0, math.Inf(1)
	}
	return theta[0], (theta[1] + resid) * (1 + margin)
}

// lambdaMaxBound returns an upper bound of the largest eigenvalue of the
// symmetric operator a from k Lanczos steps on the host with full
// reorthogonalization (Golub and Van Loan, Matrix Computations, 4th ed.,
// §10.1): the largest Ritz value θ plus its residual norm β_k·|s_k|
// (a Ritz pair with residual r lies within ‖r‖ of an eigenvalue, §8.1),
// times 1 + margin for the rounding of the steps. The Ritz value converges
// to λ_max from below, fast when the top of the spectrum is separated;
// from a random start the bound is safe except when the start misses the
// top eigenvectors entirely, which the margin and the residual term cover
// in practice. The caller takes the smaller of it and a Gershgorin bound,
// which is always safe. It returns +Inf when the iteration fails.
func lambdaMaxBound(a Operator, k int, margin float64, seed uint64) float64 {
	_, hi := lanczosInterval(a, k, margin, seed)
	return hi
}

// lanczosExtremes runs the Lanczos steps and returns the smallest and the
// largest Ritz value and the largest one's residual norm.
func lanczosExtremes(a Operator, k int, seed uint64) (theta [2]float64, resid float64, ok bool) {
	n := a.Dims()
	k = min(k, n)
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	q := make([][]float64, 0, k)
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	scaleVec(v, 1/norm2(v))
	q = append(q, v)
	var alpha, beta []float64
	w := make([]float64, n)
	last := 0.0
	for j := range k {
		a.MulVecTo(w, q[j])
		al := dot(w, q[j])
		alpha = append(alpha, al)
		for range 2 {
			for _, qi := range q {
				c := dot(w, qi)
				for i := range w {
					w[i] -= c * qi[i]
				}
			}
		}
		b := norm2(w)
		last = b
		if j == k-1 || !(b > 1e-14*math.Abs(al)) {
			break
		}
		beta = append(beta, b)
		next := append([]float64(nil), w...)
		scaleVec(next, 1/b)
		q = append(q, next)
	}
	m := len(alpha)
	tri := mat.NewSymDense(m, nil)
	for i, al := range alpha {
		tri.SetSym(i, i, al)
		if i+1 < m {
			tri.SetSym(i, i+1, beta[i])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(tri, true) {
		return theta, 0, false
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	top := m - 1 // EigenSym returns ascending values
	theta = [2]float64{vals[0], vals[top]}
	resid = last * math.Abs(vecs.At(m-1, top))
	if math.IsNaN(theta[0]) || math.IsNaN(theta[1]) || math.IsNaN(resid) {
		return theta, 0, false
	}
	return theta, resid, true
}

func scaleVec(x []float64, s float64) {
	for i := range x {
		x[i] *= s
	}
}
