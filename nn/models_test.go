package nn_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/sim"
)

// roundTrip writes ws to a safetensors file (F16, as models ship) and
// reads it back, so that every model test runs on weights from a file.
func roundTrip(t testing.TB, ws nn.Weights) nn.Weights {
	t.Helper()
	for n, w := range ws {
		w.DType = nn.F16
		ws[n] = w
	}
	var buf bytes.Buffer
	require.NoError(t, nn.WriteSafetensors(&buf, ws, map[string]string{"seeded": "true"}))
	back, err := nn.ReadSafetensors(&buf)
	require.NoError(t, err)
	return back
}

// modelCheck runs g on dev with headroom recording and returns cosine
// similarity and max relative error against dataflow.Eval, and the worst
// conv/matmul output magnitude.
func modelCheck(t testing.TB, dev string, g *dataflow.Graph, inputs map[string][]float64, out string) (cos, rel, peak float64) {
	t.Helper()
	d := open(t, dev)
	sd, found := sim.Backend(d)
	require.True(t, found)
	sd.RecordHeadroom(true)
	got := run(t, d, g, inputs)[out]
	for _, h := range sd.Headroom() {
		if h.Op == "conv" || h.Op == "matmul" {
			peak = math.Max(peak, h.Max)
		}
	}
	want := eval(t, g, inputs)[out]
	return cosine(got, want), maxRel(got, want), peak
}

// The models' acceptance bar: cosine similarity ≥ 0.9999 with float64
// under both simulator variants; the cosine deficit is about half the
// squared relative error, far below 1e−4.
const minCosine = 0.9999

// maxRelErr is SmallCNN's bound on "sim" (maxRelBound with L = 4), which
// model_test.go's compiled-model check uses.
var maxRelErr = maxRelBound("sim", 4)

// maxRelBound bounds the largest error relative to the largest output
// (maxRel) of a chain of L contraction stages (convs, matmuls: the
// stages whose inputs, weights and result each round to fp16). Under
// "sim" each stage is within about u16 of its scale (three roundings of
// RMS ≤ u16/√3 each, the float32 sum exact beside them), and the errors
// of independent stages add in quadrature: √L·u16, bounded by twice
// that. Under "sim-narrow" the fp16 running sum rounds every partial sum
// as well; its model per stage (0.42·u16·√(k/2) for k terms of random
// sign, TestLimbTable's) overestimates the measured largest error 3–4×
// here (ReLU, normalization and max pooling keep the largest outputs away
// from the partial sums' rounding), so the narrow bound is twice the
// wide one, the ratio measured (2.0–2.9×), not derived. Stage counts L:
// the CNN's three convs and classifier, 4; an encoder layer's q/k/v
// projection, scores, attention·V, output projection and two MLP
// matmuls, 6 per layer, plus the one-hot embedding matmul; ResNet-18's
// stem conv, classifier and three downsample convs at full weight and
// the 16 convs of its residual branches at their second batch norm's
// γ ∈ [0.25, 0.5] (mean 0.375, so γ² = 0.14 each in quadrature).
// Measured (sim / sim-narrow, bound 2√L·u16 / 4√L·u16): CNN 7.2e-4 /
// 1.6e-3 (L = 4: 2.0e-3 / 3.9e-3), raw pixels 6.5e-4 / 1.9e-3, encoder
// 1.2e-3 / 3.1e-3 (L = 13: 3.5e-3 / 7.0e-3), 4 layers 1.6e-3 / 3.3e-3
// (L = 25: 4.9e-3 / 9.8e-3), pre-norm ×4000 9.0e-4 / 1.8e-3, ResNet-18
// 7.9e-4 (L = 7.25: 2.6e-3), MiniLM 1.9e-3 (L = 36: 5.9e-3). The data
// and weights are seeded: the figures do not vary run to run.
func maxRelBound(dev string, stages float64) float64 {
	b := 2 * math.Sqrt(stages) * u16
	if dev == "sim-narrow" {
		b *= 2
	}
	return b
}

func TestCNN(t *testing.T) {
	cfg := nn.SmallCNN
	ws := roundTrip(t, cfg.RandomWeights(1))
	g, err := nn.CNN(ws, cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(41, 42))
	img := make([]float64, 3*cfg.Size*cfg.Size)
	for i := range img {
		img[i] = rng.NormFloat64()
	}
	for _, dev := range devices {
		cos, rel, peak := modelCheck(t, dev, g, map[string][]float64{"image": img}, "logits")
		t.Logf("cnn %s: cosine %.6f, max rel err %.2e, peak conv output %.3g", dev, cos, rel, peak)
		require.GreaterOrEqual(t, cos, minCosine, dev)
		require.LessOrEqual(t, rel, maxRelBound(dev, 4), dev)
		require.LessOrEqual(t, peak, float64(nn.Headroom), dev)
	}
}

// TestCNNLargeInput: raw 0…255 pixels (no normalization) into a first
// conv with large weights: its output passes the 32752 cliff, which the
// device reports, unless the config states the input bound; then the
// conv folds the shift that keeps its output within 2¹⁴ and the result
// agrees with float64 as before.
func TestCNNLargeInput(t *testing.T) {
	cfg := nn.SmallCNN
	ws := cfg.RandomWeights(2)
	// Block 0's conv 112 times larger, block 1's 112 times smaller: the
	// activations in between are that much larger than usual (ReLU and max
	// pooling commute with the scale), past the cliff but within fp16 (with
	// these seeds 96 stays under the cliff and 128 overflows fp16 itself).
	for name, f := range map[string]float64{"blocks.0.conv.weight": 112, "blocks.1.conv.weight": 1.0 / 112} {
		w := ws[name]
		for i := range w.Data {
			w.Data[i] *= f
		}
	}
	ws = roundTrip(t, ws)
	rng := rand.New(rand.NewPCG(43, 44))
	img := make([]float64, 3*cfg.Size*cfg.Size)
	for i := range img {
		img[i] = math.Floor(rng.Float64() * 256)
	}
	inputs := map[string][]float64{"image": img}

	cfg.InputBound = 1 // wrong: claims normalized input
	g, err := nn.CNN(ws, cfg)
	require.NoError(t, err)
	exe, err := shim.Build(open(t, "sim"), g)
	require.NoError(t, err)
	_, err = exe.Run(packInputs(g, inputs))
	require.ErrorIs(t, err, shim.ErrRange, "unshifted, the first conv passes the cliff")

	cfg.InputBound = 255
	g, err = nn.CNN(ws, cfg)
	require.NoError(t, err)
	for _, dev := range devices {
		cos, rel, peak := modelCheck(t, dev, g, inputs, "logits")
		t.Logf("cnn raw pixels %s: cosine %.6f, max rel err %.2e, peak conv output %.3g", dev, cos, rel, peak)
		require.GreaterOrEqual(t, cos, minCosine, dev)
		require.LessOrEqual(t, rel, maxRelBound(dev, 4), dev)
		require.LessOrEqual(t, peak, float64(nn.Headroom), dev)
	}
}

func TestEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, tc := range []struct {
		name  string
		cfg   nn.EncoderConfig
		scale float64 // multiplies the token embeddings: large pre-norm values
	}{
		{"small", nn.SmallEncoder, 1},
		{"deep_bidirectional_sigmoid_gelu", func() nn.EncoderConfig {
			c := nn.SmallEncoder
			c.Layers, c.Causal, c.GELU = 4, false, nn.GELUSigmoid
			return c
		}(), 1},
		{"large_prenorm", nn.SmallEncoder, 4000},
	} {
		ws := tc.cfg.RandomWeights(3)
		if tc.scale != 1 {
			e := ws["embed.weight"]
			for i := range e.Data {
				e.Data[i] *= tc.scale
			}
		}
		ws = roundTrip(t, ws)
		g, err := nn.Encoder(ws, tc.cfg)
		require.NoError(t, err)
		ids := make([]int, tc.cfg.Seq)
		for i := range ids {
			ids[i] = rng.IntN(tc.cfg.Vocab)
		}
		oh, err := nn.OneHot(ids, tc.cfg.Vocab)
		require.NoError(t, err)
		for _, dev := range devices {
			cos, rel, peak := modelCheck(t, dev, g, map[string][]float64{"tokens": widen(oh)}, "hidden")
			t.Logf("encoder %s %s: cosine %.6f, max rel err %.2e, peak matmul/conv output %.3g", tc.name, dev, cos, rel, peak)
			require.GreaterOrEqual(t, cos, minCosine, tc.name+"/"+dev)
			require.LessOrEqual(t, rel, maxRelBound(dev, float64(6*tc.cfg.Layers+1)), tc.name+"/"+dev)
			require.LessOrEqual(t, peak, float64(nn.Headroom), tc.name+"/"+dev)
		}
	}
}

func TestModelWeightErrors(t *testing.T) {
	ws := nn.SmallCNN.RandomWeights(1)
	delete(ws, "blocks.1.bn.running_var")
	_, err := nn.CNN(ws, nn.SmallCNN)
	require.ErrorIs(t, err, nn.ErrWeight)
	require.Contains(t, err.Error(), "blocks.1.bn.running_var")

	ws = nn.SmallEncoder.RandomWeights(1)
	ws["layers.1.mlp.fc1.weight"] = nn.Tensor{Name: "layers.1.mlp.fc1.weight", Shape: []int{64, 256}, Data: make([]float64, 64*256)}
	_, err = nn.Encoder(ws, nn.SmallEncoder)
	require.ErrorIs(t, err, nn.ErrWeight)
	require.Contains(t, err.Error(), "[256 64]")
}

// bigModels are the ResNet-18- and MiniLM-shaped programs.
func bigModels(t testing.TB) map[string]*dataflow.Graph {
	t.Helper()
	rg, err := nn.ResNet(nn.ResNet18.RandomWeights(7), nn.ResNet18)
	require.NoError(t, err)
	eg, err := nn.Encoder(nn.MiniLM.RandomWeights(8), nn.MiniLM)
	require.NoError(t, err)
	return map[string]*dataflow.Graph{"resnet18": rg, "minilm": eg}
}

// TestBigModelsLower: both programs lower for every target, pass the lint
// (Lower runs it), and are priced by the cost model for M1 and M5. Run
// once on the simulator (and against float64) only without -short.
func TestBigModelsLower(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ResNet-18 (11.7M weights) and MiniLM-shaped (21M) programs")
	}
	for name, g := range bigModels(t) {
		for _, tgt := range []lower.Target{lower.TargetSim, lower.TargetM1, lower.TargetM5} {
			start := time.Now()
			p, err := lower.Lower(g, tgt)
			require.NoError(t, err, "%s on %s", name, tgt.Name)
			t.Logf("%s on %s: lowered in %v, MIL %d bytes, blob %d bytes", name, tgt.Name, time.Since(start), len(p.MIL), len(p.Blob))
			for _, fam := range []string{"ane-m1", "ane-m5"} {
				c, err := lower.Estimate(p, fam)
				require.NoError(t, err)
				require.Positive(t, c.Time)
				t.Logf("  %s priced as %s: %v, %d nodes, %.3g GB, %.3g GFLOP", name, fam, c.Time, c.Nodes, float64(c.Bytes)/1e9, float64(c.Flops)/1e9)
			}
		}
	}
}

// bigStages are the contraction stages of the large models (see
// maxRelBound): ResNet-18 5 + 16·0.375², MiniLM 6 layers of 6.
var bigStages = map[string]float64{"resnet18": 5 + 16*0.375*0.375, "minilm": 36}

// TestBigModelsRun runs both programs once on the simulator against
// float64 (slow: minutes on two cores).
func TestBigModelsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ResNet-18- and MiniLM-shaped programs on the simulator and in float64")
	}
	rng := rand.New(rand.NewPCG(47, 48))
	for name, g := range bigModels(t) {
		in := g.Nodes()[g.Inputs()[0]]
		x := randn(rng, dataflow.Shape(in.Shape).Size(), 1)
		out := g.Outputs()[0].Name
		start := time.Now()
		cos, rel, peak := modelCheck(t, "sim", g, map[string][]float64{in.Name: x}, out)
		t.Logf("%s sim: cosine %.6f, max rel err %.2e, peak %.3g (%v with float64 eval)", name, cos, rel, peak, time.Since(start))
		require.GreaterOrEqual(t, cos, minCosine, name)
		require.LessOrEqual(t, rel, maxRelBound("sim", bigStages[name]), name)
		require.LessOrEqual(t, peak, float64(nn.Headroom), name)
	}
}
