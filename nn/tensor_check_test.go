package nn_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
)

// resized returns t with its data cut by one value (delta −1) or
// extended by one (delta +1); Shape is unchanged.
func resized(t nn.Tensor, delta int) nn.Tensor {
	d := append([]float64{}, t.Data...)
	if delta < 0 {
		d = d[:len(d)-1]
	} else {
		d = append(d, 0.5)
	}
	t.Data = d
	return t
}

// TestTensorCheck: Check accepts the zero Tensor and a tensor whose data
// fills its shape exactly, and refuses short data, long data, a shape
// without data and non-positive dimensions, with ErrWeight.
func TestTensorCheck(t *testing.T) {
	require.NoError(t, nn.Tensor{}.Check())
	require.NoError(t, nn.Tensor{Name: "w", Shape: []int{2, 3}, Data: make([]float64, 6)}.Check())
	require.NoError(t, nn.Tensor{Name: "s", Data: []float64{1}}.Check(), "a scalar: shape [], one value")
	for _, tc := range []struct {
		t    nn.Tensor
		want string
	}{
		{nn.Tensor{Name: "w", Shape: []int{2, 3}, Data: make([]float64, 5)}, "has 5 values but its shape [2 3] needs 6"},
		{nn.Tensor{Name: "w", Shape: []int{2, 3}, Data: make([]float64, 7)}, "has 7 values but its shape [2 3] needs 6"},
		{nn.Tensor{Name: "w", Shape: []int{2, 3}}, "but no data"},
		{nn.Tensor{Name: "w", Shape: []int{2, 0}, Data: []float64{}}, "dimension 1 is 0"},
		{nn.Tensor{Name: "w", Shape: []int{-2, -3}, Data: make([]float64, 6)}, "dimension 0 is -2"},
		{nn.Tensor{Name: "w", Shape: []int{1 << 30, 1 << 30, 4}, Data: make([]float64, 4)}, "more than 2^40"},
		{nn.Tensor{Name: "w", Data: []float64{}}, "has 0 values but its shape [] needs 1"},
	} {
		err := tc.t.Check()
		require.ErrorIs(t, err, nn.ErrWeight, tc.want)
		require.True(t, strings.HasPrefix(err.Error(), "nn: "), err.Error())
		require.ErrorContains(t, err, tc.want)
		require.ErrorContains(t, err, `"w"`)
	}
}

// TestLayerTensorLength: every layer given a weight whose data is one
// value shorter or one longer than its shape records an error wrapping
// ErrWeight that names the weight (no panic, no truncation), and builds
// without error when the data fits.
func TestLayerTensorLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const d = 8
	w2 := tensor(rng, "fc.weight", 0.3, 5, d)
	b5 := tensor(rng, "fc.bias", 0.3, 5)
	cw := tensor(rng, "conv.weight", 0.3, 4, d, 3, 3)
	cb := tensor(rng, "conv.bias", 0.3, 4)
	bn := func() nn.BatchNorm {
		return nn.BatchNorm{Gamma: positive(rng, "bn.weight", 4, 0.5, 1), Beta: tensor(rng, "bn.bias", 0.1, 4),
			Mean: tensor(rng, "bn.running_mean", 0.1, 4), Var: positive(rng, "bn.running_var", 4, 0.5, 1.5), Epsilon: 1e-5}
	}
	gamma := positive(rng, "ln.weight", d, 0.5, 1.5)
	beta := tensor(rng, "ln.bias", 0.1, d)
	table := tensor(rng, "emb.weight", 0.3, d, 6)
	proj := func(p string) nn.Dense {
		return nn.Dense{W: tensor(rng, p+".weight", 0.3, d, d), B: tensor(rng, p+".bias", 0.1, d)}
	}
	attn := nn.AttentionWeights{Q: proj("q"), K: proj("k"), V: proj("v"), O: proj("o")}

	// Each layer takes a slice of its tensors, so that the test can spoil
	// one at a time; input gives the layer's activation.
	type layer struct {
		name  string
		input dataflow.Shape
		ts    []nn.Tensor
		build func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor)
	}
	layers := []layer{
		{"linear rows", dataflow.Shape{3, d}, []nn.Tensor{w2, b5}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.Linear(g, x, ts[0], ts[1])
		}},
		{"linear channel-first", dataflow.Shape{1, d, 2, 2}, []nn.Tensor{w2, b5}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.Linear(g, x, ts[0], ts[1])
		}},
		{"linear shift", dataflow.Shape{3, d}, []nn.Tensor{w2, b5}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.LinearShift(g, x, ts[0], ts[1], nn.ShiftFor(ts[0], ts[1], 100))
		}},
		{"conv2d", dataflow.Shape{1, d, 5, 5}, []nn.Tensor{cw, cb}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.Conv2D(g, x, ts[0], ts[1], nn.ConvOptions{Pads: [4]int{1, 1, 1, 1}, Bound: 4})
		}},
		{"conv2d batch norm", dataflow.Shape{1, d, 5, 5}, func() []nn.Tensor {
			p := bn()
			return []nn.Tensor{cw, cb, p.Gamma, p.Beta, p.Mean, p.Var}
		}(), func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			p := nn.BatchNorm{Gamma: ts[2], Beta: ts[3], Mean: ts[4], Var: ts[5], Epsilon: 1e-5}
			nn.Conv2D(g, x, ts[0], ts[1], nn.ConvOptions{BatchNorm: &p})
		}},
		{"layer norm", dataflow.Shape{3, d}, []nn.Tensor{gamma, beta}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.LayerNorm(g, x, ts[0], ts[1], nn.NormOptions{Epsilon: 1e-5})
		}},
		{"layer norm native", dataflow.Shape{1, d, 1, 3}, []nn.Tensor{gamma, beta}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.LayerNorm(g, x, ts[0], ts[1], nn.NormOptions{Epsilon: 1e-4, Native: true})
		}},
		{"rms norm", dataflow.Shape{3, d}, []nn.Tensor{gamma}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.RMSNorm(g, x, ts[0], nn.NormOptions{Epsilon: 1e-5})
		}},
		{"embedding rows", dataflow.Shape{3, d}, []nn.Tensor{table}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.Embedding(g, x, ts[0])
		}},
		{"embedding channel-first", dataflow.Shape{1, d, 1, 3}, []nn.Tensor{table}, func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
			nn.Embedding(g, x, ts[0])
		}},
		{"attention", dataflow.Shape{1, d, 1, 3}, []nn.Tensor{attn.Q.W, attn.Q.B, attn.K.W, attn.K.B, attn.V.W, attn.V.B, attn.O.W, attn.O.B},
			func(g *dataflow.Graph, x dataflow.Value, ts []nn.Tensor) {
				nn.Attention(g, x, nn.AttentionWeights{
					Q: nn.Dense{W: ts[0], B: ts[1]}, K: nn.Dense{W: ts[2], B: ts[3]},
					V: nn.Dense{W: ts[4], B: ts[5]}, O: nn.Dense{W: ts[6], B: ts[7]},
				}, nn.AttentionOptions{Heads: 2, Causal: true})
			}},
	}
	for _, l := range layers {
		t.Run(l.name, func(t *testing.T) {
			g := dataflow.New()
			l.build(g, g.Input("x", l.input), l.ts)
			require.NoError(t, g.Err(), "the consistent weights build")
			for i, tt := range l.ts {
				for _, delta := range []int{-1, +1} {
					ts := append([]nn.Tensor{}, l.ts...)
					ts[i] = resized(tt, delta)
					g := dataflow.New()
					x := g.Input("x", l.input)
					require.NotPanics(t, func() { l.build(g, x, ts) }, "%s %+d", tt.Name, delta)
					err := g.Err()
					require.ErrorIs(t, err, nn.ErrWeight, "%s %+d", tt.Name, delta)
					require.True(t, strings.HasPrefix(err.Error(), "nn: "), err.Error())
					require.ErrorContains(t, err, tt.Name)
					require.ErrorContains(t, err, "values but its shape")
				}
			}
		})
	}
}

// TestFoldBatchNormLength: FoldBatchNorm returns ErrWeight (and does not
// panic) when any of its six tensors has data shorter or longer than its
// shape, and ShiftFor returns 0 for such a weight instead of panicking.
func TestFoldBatchNormLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	ts := []nn.Tensor{
		tensor(rng, "conv.weight", 0.3, 4, 2, 3, 3), tensor(rng, "conv.bias", 0.3, 4),
		positive(rng, "bn.weight", 4, 0.5, 1), tensor(rng, "bn.bias", 0.1, 4),
		tensor(rng, "bn.running_mean", 0.1, 4), positive(rng, "bn.running_var", 4, 0.5, 1.5),
	}
	fold := func(ts []nn.Tensor) error {
		_, _, err := nn.FoldBatchNorm(ts[0], ts[1], nn.BatchNorm{Gamma: ts[2], Beta: ts[3], Mean: ts[4], Var: ts[5], Epsilon: 1e-5})
		return err
	}
	require.NoError(t, fold(ts))
	for i := range ts {
		for _, delta := range []int{-1, +1} {
			bad := append([]nn.Tensor{}, ts...)
			bad[i] = resized(ts[i], delta)
			var err error
			require.NotPanics(t, func() { err = fold(bad) })
			require.ErrorIs(t, err, nn.ErrWeight, "%s %+d", ts[i].Name, delta)
			require.ErrorContains(t, err, ts[i].Name)
		}
	}
	for _, delta := range []int{-1, +1} {
		require.Zero(t, nn.ShiftFor(resized(ts[0], delta), ts[1], 1e6))
		require.Zero(t, nn.ShiftFor(ts[0], resized(ts[1], delta), 1e6))
	}
	require.Zero(t, nn.ShiftFor(nn.Tensor{}, nn.Tensor{}, 1e6), "the zero Tensor")
	require.Positive(t, nn.ShiftFor(ts[0], ts[1], 1e6), "a consistent weight still gets its shift")
}

// TestGetTensorLength: Weights.Get refuses a tensor whose data does not
// fill its shape (a Weights map built by hand), with ErrWeight.
func TestGetTensorLength(t *testing.T) {
	ws := nn.Weights{}
	ws.Add(nn.Tensor{Name: "short", DType: nn.F32, Shape: []int{2, 3}, Data: make([]float64, 5)})
	ws.Add(nn.Tensor{Name: "long", DType: nn.F32, Shape: []int{2, 3}, Data: make([]float64, 7)})
	ws.Add(nn.Tensor{Name: "ok", DType: nn.F32, Shape: []int{2, 3}, Data: make([]float64, 6)})
	for _, name := range []string{"short", "long"} {
		_, err := ws.Get(name, 2, 3)
		require.ErrorIs(t, err, nn.ErrWeight, name)
		require.ErrorContains(t, err, "values but its shape [2 3] needs 6")
	}
	_, err := ws.Get("ok", 2, 3)
	require.NoError(t, err)
}
