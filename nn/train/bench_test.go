package train

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anemone-go/anemone/internal/benchclaim"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// The MNIST step of examples/mnist (MLP 784-512-10, batch 128, Adam
// lr 1e-3) on the simulator, against the same step in float64 on the CPU
// with gonum's BLAS. What a user waits for per step is the modeled engine
// time plus the measured host time (the simulator's own time is neither).

// stepMLP512 is the benchmarks' trainer, its program compiled by a first
// step on batch; the caller closes it.
func stepMLP512(b *testing.B) (tr *Trainer, batch Batch) {
	mlp := MLP{Sizes: []int{784, 512, 10}}
	cfg := Config{Network: mlp.Network(), Weights: mlp.Init(1), Batch: 128, Loss: SoftmaxCrossEntropy,
		Optimizer: Adam{LR: 1e-3}, Update: Compensated}
	tr, err := New(cfg, open(b, "sim"))
	if err != nil {
		b.Fatal(err)
	}
	batch = digits(rand.New(rand.NewPCG(1, 2)), 128, 784, 10)
	if _, err := tr.Step(batch); err != nil {
		tr.Close()
		b.Fatal(err)
	}
	return tr, batch
}

func BenchmarkStepMLP512(b *testing.B) {
	tr, batch := stepMLP512(b)
	defer tr.Close()
	first := tr.Stats()
	for b.Loop() {
		if _, err := tr.Step(batch); err != nil {
			b.Fatal(err)
		}
	}
	st := tr.Stats()
	steps := float64(st.Steps - first.Steps)
	host := (st.Host - first.Host).Seconds() * 1e3 / steps
	b.ReportMetric(host, "host-ms")
	for _, fam := range []string{"ane-m1", "ane-m5"} {
		c, err := tr.ModeledStep(fam)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(c.Time.Seconds()*1e3, "modeled-engine-ms-"+fam[4:])
		b.ReportMetric(c.Time.Seconds()*1e3+host, "modeled-total-ms-"+fam[4:])
	}
	b.ReportMetric(float64(st.BytesIn-first.BytesIn)/steps, "host-B-in/step")
}

// BenchmarkGonumStepMLP512 is the CPU baseline: forward, softmax
// cross-entropy, backward and Adam for the same network and batch in
// float64, the products by gonum's Dgemm (which uses every core).
func BenchmarkGonumStepMLP512(b *testing.B) {
	step, loss := gonumStepMLP512()
	start := time.Now()
	for b.Loop() {
		step()
	}
	if l := loss(); !(l > 0) || math.IsInf(l, 0) {
		b.Fatalf("loss %g", l)
	}
	b.ReportMetric(time.Since(start).Seconds()*1e3/float64(b.N), "ms/step")
}

// gonumStepMLP512 returns the baseline's step and the last step's loss.
func gonumStepMLP512() (step func(), loss func() float64) {
	const B, in, hid, out = 128, 784, 512, 10
	rng := rand.New(rand.NewPCG(1, 2))
	batch := digits(rng, B, in, out)
	mk := func(n int, bound float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = bound * (2*rng.Float64() - 1)
		}
		return v
	}
	params := [][]float64{mk(hid*in, 1/math.Sqrt(in)), mk(hid, 1/math.Sqrt(in)), mk(out*hid, 1/math.Sqrt(hid)), mk(out, 1/math.Sqrt(hid))}
	grads := make([][]float64, len(params))
	m1, m2 := make([][]float64, len(params)), make([][]float64, len(params))
	for i, p := range params {
		grads[i], m1[i], m2[i] = make([]float64, len(p)), make([]float64, len(p)), make([]float64, len(p))
	}
	w1, b1, w2, b2 := params[0], params[1], params[2], params[3]
	gw1, gb1, gw2, gb2 := grads[0], grads[1], grads[2], grads[3]
	h := make([]float64, B*hid)
	logits := make([]float64, B*out)
	dh := make([]float64, B*hid)
	gen := func(r, c int, d []float64) blas64.General {
		return blas64.General{Rows: r, Cols: c, Stride: c, Data: d}
	}
	t := 0
	var last float64
	step = func() {
		t++
		// Forward: h = relu(x·W1ᵀ + b1), logits = h·W2ᵀ + b2.
		for i := range B {
			copy(h[i*hid:(i+1)*hid], b1)
			copy(logits[i*out:(i+1)*out], b2)
		}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, gen(B, in, batch.X), gen(hid, in, w1), 1, gen(B, hid, h))
		for i, v := range h {
			h[i] = max(v, 0)
		}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, gen(B, hid, h), gen(out, hid, w2), 1, gen(B, out, logits))
		// Softmax cross-entropy, mean over the batch; logits becomes dL/dlogits.
		last = 0
		for i := range B {
			row, y := logits[i*out:(i+1)*out], batch.Y[i*out:(i+1)*out]
			mx := row[0]
			for _, v := range row {
				mx = max(mx, v)
			}
			s := 0.0
			for j, v := range row {
				row[j] = math.Exp(v - mx)
				s += row[j]
			}
			for j := range row {
				p := row[j] / s
				if y[j] > 0 {
					last -= y[j] * math.Log(p)
				}
				row[j] = (p - y[j]) / B
			}
		}
		last /= B
		// Backward.
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, gen(B, out, logits), gen(B, hid, h), 0, gen(out, hid, gw2))
		clear(gb2)
		for i := range B {
			for j := range out {
				gb2[j] += logits[i*out+j]
			}
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, gen(B, out, logits), gen(out, hid, w2), 0, gen(B, hid, dh))
		for i, v := range h {
			if v <= 0 {
				dh[i] = 0
			}
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, gen(B, hid, dh), gen(B, in, batch.X), 0, gen(hid, in, gw1))
		clear(gb1)
		for i := range B {
			for j := range hid {
				gb1[j] += dh[i*hid+j]
			}
		}
		// Adam, lr 1e-3, β = (0.9, 0.999), ε = 1e-8.
		c1, c2 := 1-math.Pow(0.9, float64(t)), 1-math.Pow(0.999, float64(t))
		for k, p := range params {
			g, m, v := grads[k], m1[k], m2[k]
			for i := range p {
				m[i] = 0.9*m[i] + 0.1*g[i]
				v[i] = 0.999*v[i] + 0.001*g[i]*g[i]
				p[i] -= 1e-3 * (m[i] / c1) / (math.Sqrt(v[i]/c2) + 1e-8)
			}
		}
	}
	return step, func() float64 { return last }
}

// BenchmarkEndToEnd is the training row of docs/RESULTS.md's end-to-end
// table (internal/benchclaim): one BenchmarkStepMLP512 step on the
// simulator, its modeled M1 engine time (Trainer.ModeledStep) and measured
// host time, alternated with the same step in float64 with gonum's BLAS;
// it fails where the table's row disagrees.
func BenchmarkEndToEnd(b *testing.B) {
	b.Run("StepMLP512", func(b *testing.B) {
		tr, batch := stepMLP512(b)
		defer tr.Close()
		c, err := tr.ModeledStep("ane-m1")
		if err != nil {
			b.Fatal(err)
		}
		compile := tr.ModeledCompile()
		step, loss := gonumStepMLP512()
		benchclaim.Pair(b, "Training step, MLP 784-512-10, batch 128, Adam", "gonum float64 step", func() benchclaim.Run {
			before := tr.Stats()
			if _, err := tr.Step(batch); err != nil {
				b.Fatal(err)
			}
			after := tr.Stats()
			return benchclaim.Run{Dispatches: after.Steps - before.Steps, Engine: c.Time, Host: after.Host - before.Host, Compile: compile}
		}, step)
		if l := loss(); !(l > 0) || math.IsInf(l, 0) {
			b.Fatalf("gonum step's loss %g", l)
		}
	})
}
