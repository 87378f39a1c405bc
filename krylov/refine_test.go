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

// TestRefineWithDeviceCG drives precision.Refine with a device inner
// solver: each correction is one dispatch of the unrolled CG program,
// started from zero (a restarted scheme, unlike CG's reliable updates). The
// issue asks for a normwise backward error ‖b−Ax‖/(‖A‖_F‖x‖+‖b‖) ≤ 1e-15
// within 20 dispatches on a dense SPD RandSVD matrix, n = 256, κ = 1e3.
func TestRefineWithDeviceCG(t *testing.T) {
	const n, kappa, unroll = 256, 1e3, 64
	rng := rand.New(rand.NewPCG(256, 1000))
	a, err := reference.RandSVD(n, kappa, 3, true, rng)
	require.NoError(t, err)
	op := denseOf(t, a)
	b := randVec(n, 8)
	dev := simDevice(t, "sim")
	sigma := pow2Exp(op.NormInf())
	exe, err := cgProgram(dev, op, nil, unroll, sigma, false)
	require.NoError(t, err)
	nu := vectorNorm(n)

	rIn := make([]float32, n)
	correct := func(d, r []float64) error {
		rn := norm2(r)
		toFloat32(rIn, r, nu/rn)
		out, err := exe.Run([][]float32{rIn, rIn, {1}})
		if err != nil {
			return err
		}
		scale := math.Ldexp(rn/nu, sigma)
		for i := range d {
			d[i] = scale * (float64(out[0][i]) + float64(out[1][i]))
		}
		return nil
	}
	residualFn := func(r, x []float64) error {
		residual(r, op, x, b)
		return nil
	}
	// The backward error's normalizer ‖A‖_F·‖x‖ + ‖b‖, with ‖x‖ from a
	// float64 solve: Refine stops on ‖r‖/NormB ≤ Tol, which is then exactly
	// the backward error the issue names.
	xRef, err := reference.Solve(a, b)
	require.NoError(t, err)
	normA := frobenius(a)
	res, err := precision.Refine(make([]float64, n), residualFn, correct, precision.RefineSettings{
		Tol: 1e-15, NormB: normA*norm2(xRef) + norm2(b), MaxDispatches: 20,
	})
	require.NoError(t, err)
	aop, err := reference.DenseOperator(a)
	require.NoError(t, err)
	be := reference.BackwardError(aop, res.X, b)
	t.Logf("Refine + device CG(%d): %d dispatches, backward error %.2g, history %.2g", unroll, res.Dispatches, be, res.History)
	require.LessOrEqual(t, be, 1e-15)
	require.LessOrEqual(t, res.Dispatches, 20)
	require.LessOrEqual(t, reference.RelErr(res.X, xRef), kappa*1e-14)
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
