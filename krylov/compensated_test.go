package krylov

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
)

// TestCompensatedApply measures the device's A·p against float64 for a
// vector p with ‖p‖ = ν: in FP16 mode the error is normwise, about
// u·‖A‖‖p‖; compensated, only the final rounding of each component is
// left, |err_i| ≲ 2u·|(Ap)_i| + 2^(−5L)·‖A‖‖p‖.
func TestCompensatedApply(t *testing.T) {
	const n = 128
	rng := rand.New(rand.NewPCG(1, 1))
	a, err := reference.RandSVD(n, 1e6, 3, true, rng)
	require.NoError(t, err)
	op := denseOf(t, a).(*denseOp)
	sigma := pow2Exp(op.NormInf())
	nu := vectorNorm(n)
	c, err := newCompensatedDense(op, sigma, compensatedLimbs)
	require.NoError(t, err)
	dev := simDevice(t, "sim")
	for _, comp := range []bool{false, true} {
		g := dataflow.New()
		p := g.Input("p", dataflow.Shape{1, n})
		if comp {
			q, qLo := c.apply(g, p, nu)
			g.Output("q", q)
			g.Output("q_lo", qLo)
		} else {
			g.Output("q", op.DeviceApply(g, p, sigma))
			g.Output("q_lo", g.Sub(p, p))
		}
		exe, err := shim.Build(dev, g)
		require.NoError(t, err)
		x := randVec(n, 7)
		s := nu / norm2(x)
		p32 := make([]float32, n)
		p64 := make([]float64, n)
		for i := range x {
			p32[i] = fp16.Round32(float32(x[i] * s)) // what the device sees
			p64[i] = float64(p32[i])
		}
		out, err := exe.Run([][]float32{p32})
		require.NoError(t, err)
		want := make([]float64, n)
		op.MulVecTo(want, p64)
		normwise, componentwise, withLo := 0.0, 0.0, 0.0
		for i := range want {
			w := math.Ldexp(want[i], sigma)
			e := math.Abs(float64(out[0][i]) - w)
			normwise = math.Max(normwise, e)
			componentwise = math.Max(componentwise, e/math.Abs(w))
			withLo = math.Max(withLo, math.Abs(float64(out[0][i])+float64(out[1][i])-w)/math.Abs(w))
		}
		normwise /= nu // ‖2^σA‖ ≤ 1
		t.Logf("compensated=%v: max error %.3g of ‖A‖‖p‖, componentwise %.3g, with the remainder %.3g", comp, normwise, componentwise, withLo)
		if comp {
			// Rounding the exact product once: half an ulp, 2⁻¹¹ relative.
			require.Less(t, componentwise, 0x1p-11*1.01)
			// With the remainder: the digit triangle's truncation, about
			// 2^(−5·6) of ‖A‖‖p‖, relative to a component as small as
			// 1e-6 of ‖A‖‖p‖ (κ = 1e6), with room for the TwoSum error.
			require.Less(t, withLo, 1e-2)
		}
	}
}
