package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
)

// TestModelRun: a compiled model agrees with the float64 evaluation of
// its graph as the layer tests do (cosine and max relative error, the
// same bars), counts its dispatches and modeled time, and a second
// Compile of the same graph on the same device compiles nothing.
func TestModelRun(t *testing.T) {
	cfg := nn.SmallCNN
	g, err := nn.CNN(cfg.RandomWeights(1), cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	img := make([]float64, 3*cfg.Size*cfg.Size)
	for i := range img {
		img[i] = rng.NormFloat64()
	}
	dev := open(t, "sim")
	m, err := nn.Compile(g, &nn.Settings{Device: dev})
	require.NoError(t, err)
	defer m.Close()
	st := m.Stats()
	require.Positive(t, st.ModeledCompile, "the first compile is modeled")

	want := eval(t, g, map[string][]float64{"image": img})["logits"]
	for range 3 {
		out, err := m.Run(map[string][]float64{"image": img})
		require.NoError(t, err)
		require.GreaterOrEqual(t, cosine(out["logits"], want), minCosine)
		require.LessOrEqual(t, maxRel(out["logits"], want), maxRelErr)
	}
	st = m.Stats()
	require.Equal(t, 3, st.Dispatches)
	require.Positive(t, st.ModeledTime)
	require.Equal(t, st.ModeledTime+st.ModeledCompile+st.Build+st.Host, st.ModeledTotal)
	t.Logf("SmallCNN on sim: %d runs, modeled engine %v (ane-m1), modeled compile %v, build %v, host %v, total %v",
		st.Dispatches, st.ModeledTime, st.ModeledCompile, st.Build, st.Host, st.ModeledTotal)

	again, err := nn.Compile(g, &nn.Settings{Device: dev})
	require.NoError(t, err)
	defer again.Close()
	require.Zero(t, again.Stats().ModeledCompile, "the device holds the program")
	require.Equal(t, 1, dev.(*shim.Cache).Stats().Compiles)
}

func TestModelRunErrors(t *testing.T) {
	g := dataflow.New()
	g.Output("y", nn.ReLU(g, g.Input("x", dataflow.Shape{1, 4})))
	m, err := nn.Compile(g, &nn.Settings{Device: open(t, "sim")})
	require.NoError(t, err)
	_, err = m.Run(nil)
	require.ErrorIs(t, err, nn.ErrShape)
	require.Contains(t, err.Error(), `input "x" (shape [1 4]) is missing`)
	_, err = m.Run(map[string][]float64{"x": {1, 2}})
	require.ErrorIs(t, err, nn.ErrShape)
	_, err = m.Run(map[string][]float64{"x": {1, 2, 3, 4}, "z": {1}})
	require.ErrorIs(t, err, nn.ErrShape)
	require.Contains(t, err.Error(), `no input "z"`)
	_, err = m.Run(map[string][]float64{"x": {1, 2, 1e6, 4}})
	require.ErrorIs(t, err, nn.ErrRange)
	out, err := m.Run(map[string][]float64{"x": {-1, 2, -3, 4}})
	require.NoError(t, err)
	require.Equal(t, []float64{0, 2, 0, 4}, out["y"])
	_, err = nn.Compile(nil, nil)
	require.ErrorIs(t, err, nn.ErrShape)
}
