package newtonschulz

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// With exact (float64) products the iteration converges quadratically to
// B⁻¹: it must reach Stop, and the result must match gonum's inverse to
// within Stop·‖B⁻¹‖ (‖X − B⁻¹‖ ≤ ‖B⁻¹‖·‖I − B·X‖).
func TestRunConvergesWithExactProducts(t *testing.T) {
	const n = 40
	rng := rand.New(rand.NewPCG(1, 2))
	b := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			b.Set(i, j, rng.NormFloat64()/math.Sqrt(n))
		}
		b.Set(i, i, b.At(i, i)+3)
	}
	products := Products{
		MulB: func(dst, x *mat.Dense) error { dst.Mul(b, x); return nil },
		MulX: func(dst, x, m *mat.Dense) error { dst.Mul(x, m); return nil },
	}
	const stop = 1e-12
	res, err := Run(b, Config{Stop: stop, Reach: 1e3, Seed: 7}, products)
	require.NoError(t, err)
	require.LessOrEqual(t, res.ResF, stop)
	require.Len(t, res.History, res.Steps+1)
	var inv mat.Dense
	require.NoError(t, inv.Inverse(b))
	var diff mat.Dense
	diff.Sub(res.X, &inv)
	require.LessOrEqual(t, mat.Norm(&diff, 2), stop*mat.Norm(&inv, 2)*2)
}

func TestResidualF(t *testing.T) {
	id := mat.NewDense(3, 3, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1})
	require.Zero(t, ResidualF(id))
	z := mat.NewDense(2, 2, nil)
	require.InDelta(t, math.Sqrt(2), ResidualF(z), 1e-15)
}

// LanczosMin bounds the smallest eigenvalue of a symmetric matrix from
// above, and finds it for a small diagonal one (Lanczos on n = k steps is
// exact).
func TestLanczosMin(t *testing.T) {
	d := mat.NewDense(4, 4, nil)
	for i, v := range []float64{0.5, 0.01, 0.9, 0.3} {
		d.Set(i, i, v)
	}
	got := LanczosMin(d, 4, rand.New(rand.NewPCG(3, 4)))
	require.InDelta(t, 0.01, got, 1e-12)
	require.GreaterOrEqual(t, LanczosMin(d, 2, rand.New(rand.NewPCG(3, 4))), 0.01-1e-15)
}
