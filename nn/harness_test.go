package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// u16 is fp16's unit roundoff.
const u16 = 0x1p-11

// devices are the simulator's two numerics variants; every accuracy claim
// holds under both.
var devices = []string{"sim", "sim-narrow"}

// run lowers g for dev, runs it once on inputs (by name) and returns the
// outputs by name. A device error fails the test.
func run(t testing.TB, dev shim.Device, g *dataflow.Graph, inputs map[string][]float64) map[string][]float64 {
	t.Helper()
	exe, err := shim.Build(dev, g)
	require.NoError(t, err)
	outs, err := exe.Run(packInputs(g, inputs))
	require.NoError(t, err)
	res := map[string][]float64{}
	for i, o := range g.Outputs() {
		res[o.Name] = widen(outs[i])
	}
	return res
}

// packInputs orders inputs as the graph declares them, in float32.
func packInputs(g *dataflow.Graph, inputs map[string][]float64) [][]float32 {
	var out [][]float32
	for _, id := range g.Inputs() {
		x := inputs[g.Nodes()[id].Name]
		f := make([]float32, len(x))
		for i, v := range x {
			f[i] = float32(v)
		}
		out = append(out, f)
	}
	return out
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func open(t testing.TB, name string) shim.Device {
	t.Helper()
	dev, err := shim.Open(name)
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	return dev
}

func eval(t testing.TB, g *dataflow.Graph, inputs map[string][]float64) map[string][]float64 {
	t.Helper()
	ref, err := dataflow.Eval(g, inputs)
	require.NoError(t, err)
	return ref
}

// randn fills n values with N(0, σ²).
func randn(rng *rand.Rand, n int, sigma float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64() * sigma
	}
	return x
}

// tensor makes a named F32 weight of N(0, σ²) entries.
func tensor(rng *rand.Rand, name string, sigma float64, shape ...int) nn.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return nn.Tensor{Name: name, DType: nn.F32, Shape: shape, Data: randn(rng, n, sigma)}
}

// requireClose checks |got − want| ≤ tol[i] elementwise (tol of length 1
// applies to all) and that got holds no NaN or Inf.
func requireClose(t testing.TB, got, want, tol []float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		require.False(t, math.IsNaN(got[i]) || math.IsInf(got[i], 0), "%s: element %d is %g", what, i, got[i])
		tl := tol[0]
		if len(tol) > 1 {
			tl = tol[i]
		}
		require.LessOrEqual(t, math.Abs(got[i]-want[i]), tl, "%s: element %d is %g, want %g ± %g", what, i, got[i], want[i], tl)
	}
}

// cosine is the cosine similarity of x and y.
func cosine(x, y []float64) float64 {
	var xy, xx, yy float64
	for i := range x {
		xy += x[i] * y[i]
		xx += x[i] * x[i]
		yy += y[i] * y[i]
	}
	return xy / math.Sqrt(xx*yy)
}

// maxRel is max|x − y| / max|y|: the largest error relative to the
// output's scale.
func maxRel(x, y []float64) float64 {
	var e, s float64
	for i := range x {
		e = math.Max(e, math.Abs(x[i]-y[i]))
		s = math.Max(s, math.Abs(y[i]))
	}
	return e / s
}
