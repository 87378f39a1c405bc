package krylov

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/reference"
)

// spreadSPD is Q·diag(λ)·Qᵀ with λ uniform in [0.5, 1.5] and Q Haar
// orthogonal: a well-conditioned SPD matrix whose rows are dense, so that
// its Gershgorin bound ‖A‖∞ is about √n·0.9 times its largest eigenvalue.
func spreadSPD(t testing.TB, n int, seed uint64) (*mat.Dense, float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	q, err := reference.HaarOrthogonal(n, rng)
	require.NoError(t, err)
	lam := make([]float64, n)
	top := 0.0
	for i := range lam {
		lam[i] = 0.5 + rng.Float64()
		top = math.Max(top, lam[i])
	}
	var qd, a mat.Dense
	qd.Scale(1, q)
	for j := range n {
		for i := range n {
			qd.Set(i, j, q.At(i, j)*lam[j])
		}
	}
	a.Mul(&qd, q.T())
	return &a, top
}

// TestLambdaMaxBound: the Lanczos bound is safe (at or above λ_max,
// computed by gonum's eigensolver) and sharp (within its 5 % margin and
// a little more), where the Gershgorin bound is √n times too wide.
func TestLambdaMaxBound(t *testing.T) {
	for _, n := range []int{64, 256} {
		a, top := spreadSPD(t, n, 3)
		var eig mat.EigenSym
		sym := mat.NewSymDense(n, nil)
		for i := range n {
			for j := range n {
				sym.SetSym(i, j, (a.At(i, j)+a.At(j, i))/2)
			}
		}
		require.True(t, eig.Factorize(sym, false))
		vals := eig.Values(nil)
		lmax := vals[n-1]
		require.InDelta(t, top, lmax, 1e-12)
		op := denseOf(t, a)
		bound := lambdaMaxBound(op, lanczosSteps, lanczosMargin, 1)
		t.Logf("n = %d: λ_max %.6f, Lanczos bound %.6f, ‖A‖∞ %.3f", n, lmax, bound, op.NormInf())
		require.GreaterOrEqual(t, bound, lmax, "safe")
		require.LessOrEqual(t, bound, lmax*1.10, "sharp: the 5 % margin and the residual term")
		require.Greater(t, op.NormInf(), 2*lmax, "the Gershgorin bound it replaces is wider, √n·0.25 times here")
		lo, _ := lanczosInterval(op, lanczosSteps, lanczosMargin, 1)
		require.GreaterOrEqual(t, lo, vals[0]*(1-1e-12), "the smallest Ritz value lies at or above λ_min")
	}
}

// TestDenseCGSharpInterval: dense CG with the polynomial on the Lanczos
// interval [θ_min, bound] needs at most half the dispatches of the same
// solve on the Gershgorin interval [‖A‖∞/(2k²), ‖A‖∞], to the same float64
// residual: the spectrum fills [0.5, 1.5], so the sharp interval's ratio
// is 3 where the wide one's is 2k² = 512.
func TestDenseCGSharpInterval(t *testing.T) {
	a, _ := spreadSPD(t, 256, 5)
	op := denseOf(t, a)
	b := randVec(256, 9)
	dev := simDevice(t, "sim")
	sharp, err := CG(op, b, &Settings{Device: dev})
	require.NoError(t, err)
	sharpDenseBound = false
	defer func() { sharpDenseBound = true }()
	wide, err := CG(denseOf(t, a), b, &Settings{Device: dev}) // a new operator: a new program
	require.NoError(t, err)
	t.Logf("dispatches to 1e-10: Lanczos interval %d, Gershgorin interval %d", sharp.Dispatches, wide.Dispatches)
	require.LessOrEqual(t, 2*sharp.Dispatches, wide.Dispatches)
	require.LessOrEqual(t, sharp.Residual, DefaultTol)
}
