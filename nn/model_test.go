package nn_test

import (
	"errors"
	"math/rand/v2"
	"sync"
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

// TestModelClosed: a Run after Close (or racing with it) is an error
// wrapping ErrDevice and shim.ErrClosed — not ErrRange, which would send
// the user hunting for a bad value — and the runs before Close are exact.
func TestModelClosed(t *testing.T) {
	g := dataflow.New()
	w := nn.Tensor{Name: "w", Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}}
	g.Output("y", nn.Linear(g, g.Input("x", dataflow.Shape{1, 2}), w, nn.Tensor{}))
	m, err := nn.Compile(g, &nn.Settings{Device: open(t, "sim")})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				x := float64(i + j)
				out, err := m.Run(map[string][]float64{"x": {x, 1}})
				if err != nil {
					if !errors.Is(err, nn.ErrDevice) || !errors.Is(err, shim.ErrClosed) || errors.Is(err, nn.ErrRange) {
						t.Errorf("run during Close: %v, want ErrDevice and shim.ErrClosed", err)
					}
					return
				}
				if out["y"][0] != x+2 || out["y"][1] != 3*x+4 {
					t.Errorf("x = %g: y = %v, want [%g %g]", x, out["y"], x+2, 3*x+4)
				}
			}
		}()
	}
	require.NoError(t, m.Close())
	wg.Wait()
	_, err = m.Run(map[string][]float64{"x": {1, 1}})
	require.ErrorIs(t, err, nn.ErrDevice)
	require.ErrorIs(t, err, shim.ErrClosed)
	require.NotErrorIs(t, err, nn.ErrRange)
	require.Contains(t, err.Error(), "the model is closed")
}

// TestCompileNoOutputs: a graph with nothing marked as output is ErrShape
// with the remedy, before any lowering.
func TestCompileNoOutputs(t *testing.T) {
	for _, g := range []*dataflow.Graph{dataflow.New(), func() *dataflow.Graph {
		g := dataflow.New()
		nn.ReLU(g, g.Input("x", dataflow.Shape{1, 4}))
		return g
	}()} {
		_, err := nn.Compile(g, &nn.Settings{Device: open(t, "sim")})
		require.ErrorIs(t, err, nn.ErrShape)
		require.Contains(t, err.Error(), "g.Output")
	}
}
