package precision

import (
	"math/rand/v2"
	"testing"

	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim" // registers "sim" and "sim-narrow"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// u16 is fp16's unit roundoff, 2⁻¹¹: every tolerance below derives from it.
const u16 = 0x1p-11

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// openDevice opens a simulator device ("sim" or "sim-narrow").
func openDevice(t testing.TB, name string) shim.Device {
	t.Helper()
	dev, err := shim.Open(name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	return dev
}

// randn returns an m×n matrix of independent standard normal entries.
func randn(rng *rand.Rand, m, n int) *mat.Dense {
	a := mat.NewDense(m, n, nil)
	for i := range m {
		for j := range n {
			a.Set(i, j, rng.NormFloat64())
		}
	}
	return a
}

func randVec(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

// mulVec is the float64 reference A·x (gonum).
func mulVec(a mat.Matrix, x []float64) []float64 {
	m, _ := a.Dims()
	y := make([]float64, m)
	mat.NewVecDense(m, y).MulVec(a, mat.NewVecDense(len(x), x))
	return y
}

// frobRelErr is ‖c − ref‖_F/‖ref‖_F.
func frobRelErr(c, ref mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(c, ref)
	return mat.Norm(&d, 2) / mat.Norm(ref, 2)
}
