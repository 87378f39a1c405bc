package krylov

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
)

// TestRefineWithDevicePolynomial drives precision.Refine with CG's device
// program as the inner solver: each correction is one dispatch, d = q(A)·r
// with q the Chebyshev polynomial of Unroll steps on [λ_hi/(2k²), λ_hi]
// (a restarted scheme, unlike CG's flexible outer iteration). On a dense
// SPD RandSVD matrix, n = 256, κ = 1e3, the spectrum of 2^σ·A lies inside
// that interval once 2k² ≥ κ·‖A‖∞/‖A‖₂, so each dispatch contracts the
// error by at most 1/T_k(σ₁) = 1/cosh(k·acosh σ₁) ≈ 1/cosh(√2) ≈ 0.46
// (σ₁ = θ/δ; independent of k, since λ_lo shrinks with k), plus fp16's
// error. Refine reaches a normwise backward error
// ‖b−Ax‖/(‖A‖_F‖x‖+‖b‖) ≤ 1e-15 within 0.46^m ≲ 1e-15·κ: m ≈ 60 dispatches.
func TestRefineWithDevicePolynomial(t *testing.T) {
	const n, kappa, unroll = 256, 1e3, 64
	rng := rand.New(rand.NewPCG(256, 1000))
	a, err := reference.RandSVD(n, kappa, 3, true, rng)
	require.NoError(t, err)
	op := denseOf(t, a)
	b := randVec(n, 8)
	dev := simDevice(t, "sim")
	plan, err := planCG(op, (&Settings{Device: dev, Unroll: unroll}).withDefaults(op.Dims()))
	require.NoError(t, err)
	require.Nil(t, plan.sdiag, "RandSVD's diagonal needs no scaling")
	exe, err := plan.program(dev)
	require.NoError(t, err)

	rIn := make([]float32, n)
	correct := func(d, r []float64) error {
		e := pow2Exp(norm2(r)) + int(math.Log2(chebInputNorm))
		for i, v := range r {
			rIn[i] = float32(math.Ldexp(v, e))
		}
		out, err := exe.Run([][]float32{rIn})
		if err != nil {
			return err
		}
		// y ≈ (2^σA)⁻¹·2^e·r, stored divided by sy: A⁻¹r = 2^(σ−e)·sy·y.
		for i := range d {
			d[i] = math.Ldexp(plan.poly.sy*float64(out[0][i]), plan.sigma-e)
		}
		return nil
	}
	residualFn := func(r, x []float64) error {
		residual(r, op, x, b)
		return nil
	}
	xRef, err := reference.Solve(a, b)
	require.NoError(t, err)
	normA := frobenius(a)
	res, err := precision.Refine(make([]float64, n), residualFn, correct, precision.RefineSettings{
		Tol: 1e-15, NormB: normA*norm2(xRef) + norm2(b), MaxDispatches: 60,
	})
	require.NoError(t, err)
	aop, err := reference.DenseOperator(a)
	require.NoError(t, err)
	be := reference.BackwardError(aop, res.X, b)
	t.Logf("Refine + device Chebyshev(%d): %d dispatches, backward error %.2g", unroll, res.Dispatches, be)
	require.LessOrEqual(t, be, 1e-15)
	require.LessOrEqual(t, reference.RelErr(res.X, xRef), kappa*1e-14)
	// The contraction per dispatch, geometric mean over the run: at most
	// the polynomial's 0.46 with room for fp16's error (κ·u ≈ 0.5 of it
	// is normwise, not all of it reaches the error's direction).
	rate := math.Pow(res.History[len(res.History)-1]/res.History[0], 1/float64(res.Dispatches))
	t.Logf("mean contraction %.3f per dispatch", rate)
	require.Less(t, rate, 0.6)
}

func frobenius(a mat.Matrix) float64 {
	r, c := a.Dims()
	s := 0.0
	for i := range r {
		for j := range c {
			s += a.At(i, j) * a.At(i, j)
		}
	}
	return math.Sqrt(s)
}
