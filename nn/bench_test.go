package nn_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/internal/benchclaim"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/sim"
)

// Benchmarks per model: forward time on the simulator (BenchmarkForward…),
// the float64 baseline of the same graph (BenchmarkEval…, dataflow.Eval
// standing in for gonum: a plain float64 evaluation), lowering time
// (BenchmarkLower…), and program size and modeled engine time reported as
// metrics of BenchmarkLower… (MIL bytes, blob bytes, modeled ns on M1 and
// M5 from lower.Estimate).

type benchModel struct {
	name   string
	build  func() (*dataflow.Graph, error)
	short  bool // small enough for -short
	once   sync.Once
	g      *dataflow.Graph
	inputs map[string][]float64
}

func (m *benchModel) get(b *testing.B) (*dataflow.Graph, map[string][]float64) {
	m.once.Do(func() {
		g, err := m.build()
		require.NoError(b, err)
		rng := rand.New(rand.NewPCG(51, 52))
		in := g.Nodes()[g.Inputs()[0]]
		x := make([]float64, dataflow.Shape(in.Shape).Size())
		if in.Name == "tokens" { // one-hot columns
			t := in.Shape[3]
			v := in.Shape[1]
			for c := range t {
				x[rng.IntN(v)*t+c] = 1
			}
		} else {
			x = randn(rng, len(x), 1)
		}
		m.g, m.inputs = g, map[string][]float64{in.Name: x}
	})
	return m.g, m.inputs
}

var (
	benchCNN     = &benchModel{name: "cnn", short: true, build: func() (*dataflow.Graph, error) { return nn.CNN(nn.SmallCNN.RandomWeights(1), nn.SmallCNN) }}
	benchEncoder = &benchModel{name: "encoder", short: true, build: func() (*dataflow.Graph, error) {
		return nn.Encoder(nn.SmallEncoder.RandomWeights(1), nn.SmallEncoder)
	}}
	benchResNet = &benchModel{name: "resnet18", build: func() (*dataflow.Graph, error) { return nn.ResNet(nn.ResNet18.RandomWeights(1), nn.ResNet18) }}
	benchMiniLM = &benchModel{name: "minilm", build: func() (*dataflow.Graph, error) { return nn.Encoder(nn.MiniLM.RandomWeights(1), nn.MiniLM) }}
)

func benchSkip(b *testing.B, m *benchModel) {
	if testing.Short() && !m.short {
		b.Skip("large model")
	}
}

// benchForward runs the model through nn.Compile and Model.Run and
// reports, per forward, what a user waits for: the modeled engine time
// (ane-m1), the measured host time and their sum, with the modeled compile
// of the first Compile beside it. The simulator's own time is ns/op.
func benchForward(b *testing.B, m *benchModel) {
	benchSkip(b, m)
	model, _, inputs := compileBench(b, m)
	first := model.Stats()
	b.ResetTimer()
	for b.Loop() {
		if _, err := model.Run(inputs); err != nil {
			b.Fatal(err)
		}
	}
	st := model.Stats()
	runs := float64(st.Dispatches)
	ms := func(d float64) float64 { return d * 1e3 / runs }
	b.ReportMetric(ms(st.ModeledTime.Seconds()), "modeled-engine-ms")
	b.ReportMetric(first.ModeledCompile.Seconds()*1e3, "modeled-compile-ms")
	b.ReportMetric(ms(st.Host.Seconds()), "host-ms")
	b.ReportMetric(ms((st.ModeledTime + st.Host).Seconds()), "modeled-total-ms")
}

// compileBench compiles m on a fresh simulator, closed with the model at
// the end of b.
func compileBench(b *testing.B, m *benchModel) (*nn.Model, *dataflow.Graph, map[string][]float64) {
	g, inputs := m.get(b)
	dev, err := shim.Open("sim")
	require.NoError(b, err)
	b.Cleanup(func() { dev.Close() })
	model, err := nn.Compile(g, &nn.Settings{Device: dev})
	require.NoError(b, err)
	b.Cleanup(func() { model.Close() })
	return model, g, inputs
}

func benchEval(b *testing.B, m *benchModel) {
	benchSkip(b, m)
	g, inputs := m.get(b)
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, err := dataflow.Eval(g, inputs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(time.Since(start).Seconds()*1e3/float64(b.N), "modeled-total-ms") // all host: measured
}

func benchLower(b *testing.B, m *benchModel) {
	benchSkip(b, m)
	g, _ := m.get(b)
	var p *lower.Program
	b.ResetTimer()
	for b.Loop() {
		var err error
		if p, err = lower.Lower(g, lower.TargetSim); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(len(p.MIL)), "MIL-bytes")
	b.ReportMetric(float64(len(p.Blob)), "blob-bytes")
	for _, fam := range []string{"ane-m1", "ane-m5"} {
		c, err := lower.Estimate(p, fam)
		require.NoError(b, err)
		b.ReportMetric(float64(c.Time.Nanoseconds()), "modeled-ns-"+fam[4:])
	}
}

// benchCompile times the simulator's compile of the lowered program
// (parse, check, plan), on the backend itself so that no cache answers.
func benchCompile(b *testing.B, m *benchModel) {
	benchSkip(b, m)
	g, _ := m.get(b)
	p, err := lower.Lower(g, lower.TargetSim)
	require.NoError(b, err)
	dev, err := shim.Open("sim")
	require.NoError(b, err)
	defer dev.Close()
	sd, found := sim.Backend(dev)
	require.True(b, found)
	b.ResetTimer()
	for b.Loop() {
		exe, err := sd.Compile(p)
		if err != nil {
			b.Fatal(err)
		}
		exe.Close()
	}
}

func BenchmarkCompileCNN32(b *testing.B)       { benchCompile(b, benchCNN) }
func BenchmarkCompileEncoder32(b *testing.B)   { benchCompile(b, benchEncoder) }
func BenchmarkCompileResNet18224(b *testing.B) { benchCompile(b, benchResNet) }
func BenchmarkCompileMiniLM128(b *testing.B)   { benchCompile(b, benchMiniLM) }
func BenchmarkForwardCNN32(b *testing.B)       { benchForward(b, benchCNN) }
func BenchmarkEvalCNN32(b *testing.B)          { benchEval(b, benchCNN) }
func BenchmarkLowerCNN32(b *testing.B)         { benchLower(b, benchCNN) }
func BenchmarkForwardEncoder32(b *testing.B)   { benchForward(b, benchEncoder) }
func BenchmarkEvalEncoder32(b *testing.B)      { benchEval(b, benchEncoder) }
func BenchmarkLowerEncoder32(b *testing.B)     { benchLower(b, benchEncoder) }
func BenchmarkForwardResNet18224(b *testing.B) { benchForward(b, benchResNet) }
func BenchmarkEvalResNet18224(b *testing.B)    { benchEval(b, benchResNet) }
func BenchmarkLowerResNet18224(b *testing.B)   { benchLower(b, benchResNet) }
func BenchmarkForwardMiniLM128(b *testing.B)   { benchForward(b, benchMiniLM) }
func BenchmarkEvalMiniLM128(b *testing.B)      { benchEval(b, benchMiniLM) }
func BenchmarkLowerMiniLM128(b *testing.B)     { benchLower(b, benchMiniLM) }

// BenchmarkEndToEnd is the nn row of docs/RESULTS.md's end-to-end table
// (internal/benchclaim): the small CNN's forward on the simulator, its
// modeled M1 engine time and measured host time, alternated with the
// float64 evaluation of the same graph (dataflow.Eval: Go has no CPU
// framework to set beside it); it fails where the table's row disagrees.
func BenchmarkEndToEnd(b *testing.B) {
	b.Run("ForwardCNN32", func(b *testing.B) {
		model, g, inputs := compileBench(b, benchCNN)
		compile := model.Stats().ModeledCompile
		benchclaim.Pair(b, "CNN forward, 3×32×32", "float64 evaluation", func() benchclaim.Run {
			before := model.Stats()
			if _, err := model.Run(inputs); err != nil {
				b.Fatal(err)
			}
			after := model.Stats()
			return benchclaim.Run{Dispatches: after.Dispatches - before.Dispatches, Engine: after.ModeledTime - before.ModeledTime,
				Host: after.Host - before.Host, Compile: compile}
		}, func() {
			if _, err := dataflow.Eval(g, inputs); err != nil {
				b.Fatal(err)
			}
		})
	})
}
