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

// TestGMRESCompensated: a nonsymmetric RandSVD matrix with κ = 1e4 defeats
// restarted GMRES(m < n) in any precision (float64 GMRES(30) stalls near
// 0.9), and FP16 GMRES(n) too, since κ·2⁻¹¹ ≈ 5. Compensated GMRES(n)
// (A applied from limb digits, the host minimizing the residual over the
// device's directions in float64) reaches 1e-10 in a few dispatches. The
// issue's n = 256 case runs without -short (about 10 s on the simulator).
func TestGMRESCompensated(t *testing.T) {
	n := 64
	if !testing.Short() {
		n = 256
	}
	rng := rand.New(rand.NewPCG(1e4, uint64(n)))
	a, err := reference.RandSVD(n, 1e4, 3, false, rng)
	require.NoError(t, err)
	b := randVec(n, 5)
	op := denseOf(t, a)
	dev := simDevice(t, "sim")

	ref, err := reference.GMRES(mustDenseRef(t, a), b, reference.GMRESSettings{Tol: 1e-10, Restart: 30, MaxIter: 30 * 20})
	require.Error(t, err, "float64 GMRES(30) does not converge here either")
	t.Logf("float64 GMRES(30): residual %.2g after %d cycles", ref.Residual, ref.Restarts)

	fp16, err := GMRES(op, b, &Settings{Device: dev, Restart: n, MaxDispatches: 8})
	require.ErrorIs(t, err, ErrNotConverged)
	t.Logf("FP16 GMRES(%d): residual %.2g after %d dispatches", n, fp16.Residual, fp16.Dispatches)

	res, err := GMRES(op, b, &Settings{Device: dev, Restart: n, MaxDispatches: 8, Precision: precision.Compensated})
	require.NoError(t, err)
	relres := reference.RelResidual(mustDenseRef(t, a), res.X, b)
	t.Logf("Compensated GMRES(%d): %d dispatches, residual %.2g, history %.2g, build %v, device %v", n, res.Dispatches, relres, res.History, res.Build, res.Device)
	require.LessOrEqual(t, relres, 1e-10)
	require.True(t, res.Converged)
}

func mustDenseRef(t *testing.T, a mat.Matrix) reference.Operator {
	t.Helper()
	op, err := reference.DenseOperator(a)
	require.NoError(t, err)
	return op
}

// TestGMRESBadlyScaled: rows and columns of a nonsymmetric matrix scaled
// by factors spanning 2¹² put much of fl16(2^σ·A) below fp16's normal range;
// GMRES equilibrates A with powers of two before it reaches the device (and
// so also preconditions it: float64 GMRES(30) on the unequilibrated matrix
// stalls at 0.78 after 100 cycles).
func TestGMRESBadlyScaled(t *testing.T) {
	const n = 100
	g, err := reference.Grcar(n, 3)
	require.NoError(t, err)
	a := mat.NewDense(n, n, nil)
	a.Apply(func(i, j int, v float64) float64 {
		return math.Exp2(float64(i%13)-6) * v * math.Exp2(float64(j%7)-3)
	}, g)
	b := randVec(n, 3)
	res, err := GMRES(denseOf(t, a), b, &Settings{Device: simDevice(t, "sim"), Restart: 30})
	require.NoError(t, err)
	relres := reference.RelResidual(mustDenseRef(t, a), res.X, b)
	t.Logf("scaled Grcar(%d): %d cycles, residual %.2g", n, res.Dispatches, relres)
	require.LessOrEqual(t, relres, 1e-10)
}
