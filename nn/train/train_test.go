package train

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
)

// u is fp16's unit roundoff.
const u = 0x1p-11

func open(t testing.TB, name string) shim.Device {
	t.Helper()
	dev, err := shim.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

// digits is MNIST-shaped synthetic data: n rows of `in` pixels in [0, 1],
// a fifth of them lit, and the label of the brightest of the first ten.
func digits(rng *rand.Rand, n, in, classes int) Batch {
	x := make([]float64, n*in)
	labels := make([]int, n)
	for i := range n {
		for j := range in {
			if rng.IntN(5) == 0 {
				x[i*in+j] = fp16.Round64(rng.Float64())
			}
		}
		best := 0
		for j := range classes {
			if x[i*in+j] > x[i*in+best] {
				best = j
			}
		}
		labels[i] = best
	}
	return Batch{X: x, Y: OneHot(labels, classes)}
}

// TestDeviceGradients compares the device's gradients of one full step —
// the MLP 784-512-10 at batch 128, and the CNN 28×28 → 8 → 16 channels at
// batch 16 — with float64 Eval of the same graph on the same fp16 inputs.
// Each gradient entry is a sum of products whose factors passed through
// about ten fp16 roundings (forward, softmax, backward), so its relative
// error is of order 10u ≈ 5e-3 at worst and the cosine, 1 − ½·(relative
// error)², is above 1 − 2e-5: the bound 0.999 leaves a factor 50. The
// largest entrywise error (logged) is not of that kind: it sits on units
// whose pre-activation lies within the forward pass's rounding of zero,
// where the device's relu mask (or max-pool choice) and float64's differ.
// Those flips are what sim-narrow multiplies: its fp16 running sums put
// the CNN's pre-activations √K times further from float64, so more masks
// flip and its cosine for the first conv falls below 0.999 (logged); it is
// held to 0.99 there, still far above a wrong rule's (below 0.9).
func TestDeviceGradients(t *testing.T) {
	mlp := MLP{Sizes: []int{784, 512, 10}}
	cnn := CNN{Size: 28, Classes: 10, Widths: []int{8, 16}}
	models := []struct {
		name  string
		net   Network
		ws    nn.Weights
		batch int
	}{
		{"mlp", mlp.Network(), mlp.Init(3), 128},
		{"cnn", cnn.Network(), cnn.Init(3), 16},
	}
	for _, md := range models {
		for _, name := range []string{"sim", "sim-narrow"} {
			t.Run(md.name+"/"+name, func(t *testing.T) {
				bound := 0.999
				if md.name == "cnn" && name == "sim-narrow" {
					bound = 0.99
				}
				deviceGradients(t, open(t, name), md.net, md.ws, md.batch, bound)
			})
		}
	}
}

func deviceGradients(t *testing.T, dev shim.Device, net Network, ws nn.Weights, batch int, bound float64) {
	g := dataflow.New()
	x, out := net(g, batch)
	target := g.Input("target", out.Shape())
	scale := 1024.0
	loss := g.Mul(SoftmaxCrossEntropy(g, out, target), g.Scalar(scale))
	var names []string
	for n := range ws {
		names = append(names, n)
	}
	slices.Sort(names)
	var params []dataflow.Value
	for _, n := range names {
		v, _ := g.Lookup(n)
		params = append(params, v)
	}
	grads := g.GradWith(dataflow.GradOptions{Saturate: Cliff}, loss, params...)
	for i, n := range names {
		g.Output("d_"+n, grads[i])
	}
	b := digits(rand.New(rand.NewPCG(5, 6)), batch, 784, 10)
	in := map[string][]float64{g.Node(x).Name: b.X, "target": b.Y}
	for _, n := range names {
		w := append([]float64(nil), ws[n].Data...)
		for i := range w {
			w[i] = fp16.Round64(w[i])
		}
		in[n] = w
	}
	want, err := dataflow.Eval(g, in)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := shim.Build(dev, g)
	if err != nil {
		t.Fatal(err)
	}
	ses, err := shim.NewSession(exe)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range in {
		if err := ses.Write64(k, v, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := ses.Run(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		ref := want["d_"+n]
		got := make([]float64, len(ref))
		if err := ses.Read64("d_"+n, got, 0); err != nil {
			t.Fatal(err)
		}
		dot, ng, nr, worst, peak := 0.0, 0.0, 0.0, 0.0, 0.0
		for i := range ref {
			dot += got[i] * ref[i]
			ng += got[i] * got[i]
			nr += ref[i] * ref[i]
			worst = math.Max(worst, math.Abs(got[i]-ref[i]))
			peak = math.Max(peak, math.Abs(ref[i]))
		}
		cos := dot / math.Sqrt(ng*nr)
		t.Logf("%s: cosine %.7f, max |error| / max |gradient| %.2e", n, cos, worst/peak)
		if !(cos >= bound) {
			t.Errorf("%s: cosine %.6f < %g", n, cos, bound)
		}
	}
}

func smallConfig(update Update, opt Optimizer) Config {
	m := MLP{Sizes: []int{40, 32, 5}}
	return Config{Network: m.Network(), Weights: m.Init(1), Batch: 16, Loss: SoftmaxCrossEntropy, Optimizer: opt, Update: update, EvalBatch: 64}
}

// TestTrainerTracksReference: from the same weights the first step's loss
// agrees to the forward pass's rounding (a few u of each of the ~10 ops
// on its path: bound 32u), and after 150 steps the device's loss has
// fallen as the float64 twin's has (both below half the start) and the
// two test accuracies on 512 fresh rows differ by at most 3 binomial
// standard errors (the twins are correlated, so this is conservative).
func TestTrainerTracksReference(t *testing.T) {
	cfg := smallConfig(Compensated, Adam{LR: 1e-2})
	tr, err := New(cfg, open(t, "sim"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := NewReference(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var first, firstRef, last, lastRef float64
	for s := range 150 {
		b := digits(rng, 16, 40, 5)
		l, err := tr.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		lr, err := ref.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		if s == 0 {
			first, firstRef = l, lr
		}
		last, lastRef = l, lr
	}
	if math.Abs(first-firstRef) > 32*u*firstRef {
		t.Errorf("first loss: device %g, float64 %g: beyond 32u", first, firstRef)
	}
	test := digits(rng, 512, 40, 5)
	labels := argmax(test.Y, 5)
	md, err := tr.Evaluate(test.X, labels)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := ref.Evaluate(test.X, labels)
	if err != nil {
		t.Fatal(err)
	}
	se := math.Sqrt(mr.Accuracy * (1 - mr.Accuracy) / 512)
	t.Logf("loss %.4f → %.4f (float64 %.4f → %.4f); accuracy %.4f (float64 %.4f, σ %.4f); %+v",
		first, last, firstRef, lastRef, md.Accuracy, mr.Accuracy, se, tr.Stats())
	if !(last < first/2 && lastRef < firstRef/2) {
		t.Errorf("loss did not halve: device %g → %g, float64 %g → %g", first, last, firstRef, lastRef)
	}
	if math.Abs(md.Accuracy-mr.Accuracy) > 3*se+1.0/512 {
		t.Errorf("accuracy %.4f vs float64 %.4f: beyond 3σ = %.4f", md.Accuracy, mr.Accuracy, 3*se)
	}
}

func argmax(y []float64, c int) []int {
	out := make([]int, len(y)/c)
	for i := range out {
		for j := range c {
			if y[i*c+j] > y[i*c+out[i]] {
				out[i] = j
			}
		}
	}
	return out
}

// TestResidency: one compile for the step and one for evaluation, and per
// step the host moves exactly the batch and the scalars in and the loss
// and the monitor (forward and backward maxima; the step maximum too
// where the step is gated) out — the weights stay on the device.
func TestResidency(t *testing.T) {
	dev := open(t, "sim")
	cfg := smallConfig(Compensated, Adam{LR: 1e-3})
	tr, err := New(cfg, dev)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const steps = 7
	for range steps {
		if _, err := tr.Step(digits(rng, 16, 40, 5)); err != nil {
			t.Fatal(err)
		}
	}
	b := digits(rng, 100, 40, 5)
	if _, err := tr.Evaluate(b.X, argmax(b.Y, 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	st := tr.Stats()
	scalars := len(tr.st.scalars)
	wantIn := int64(steps * 2 * (16*40 + 16*5 + scalars))
	wantOut := int64(steps * 2 * (1 + tr.st.monitorLen()))
	if tr.st.gated {
		t.Errorf("Adam at lr 1e-3 has a step gate: its bound is %g in the step's unit, want below %d/2", cfg.Optimizer.stepBound(stepUnit(Compensated), 1), stepLimit)
	}
	if st.BytesIn != wantIn || st.BytesOut != wantOut {
		t.Errorf("bytes in %d, out %d; want %d (batch and %d scalars) and %d (loss and %d monitor maxima)", st.BytesIn, st.BytesOut, wantIn, scalars, wantOut, tr.st.monitorLen())
	}
	if c := dev.(*shim.Cache).Stats().Compiles; c != 2 {
		t.Errorf("%d compiles, want 2 (step and evaluation)", c)
	}
	// The weights are runtime operands, so the step's program carries
	// almost no blob: its modeled compile is the cost model's fixed part
	// (that of an empty program) plus well under a millisecond of weight
	// loading.
	base := lower.EstimateCompile(&lower.Program{})
	if mc := tr.ModeledCompile(); mc < base || mc > base+time.Millisecond {
		t.Errorf("modeled compile %v, want within 1 ms above the fixed %v", mc, base)
	}
}

// TestBadInput: every mistake is an error wrapping the package's sentinel.
func TestBadInput(t *testing.T) {
	dev := open(t, "sim")
	base := smallConfig(Compensated, Adam{LR: 1e-3})
	mod := func(f func(c *Config)) Config {
		c := base
		c.Weights = nn.Weights{}
		for k, v := range base.Weights {
			c.Weights[k] = v
		}
		f(&c)
		return c
	}
	cases := []struct {
		name string
		cfg  Config
		want error
	}{
		{"learning rate 0", mod(func(c *Config) { c.Optimizer = Adam{} }), ErrConfig},
		{"negative learning rate", mod(func(c *Config) { c.Optimizer = SGD{LR: -1} }), ErrConfig},
		{"NaN learning rate", mod(func(c *Config) { c.Optimizer = Adam{LR: math.NaN()} }), ErrConfig},
		{"momentum 1", mod(func(c *Config) { c.Optimizer = SGD{LR: 1, Momentum: 1} }), ErrConfig},
		{"no network", mod(func(c *Config) { c.Network = nil }), ErrConfig},
		{"no loss", mod(func(c *Config) { c.Loss = nil }), ErrConfig},
		{"batch 0", mod(func(c *Config) { c.Batch = 0 }), ErrConfig},
		{"loss scale 3", mod(func(c *Config) { c.LossScale = 3 }), ErrConfig},
		{"weight not in the graph", mod(func(c *Config) {
			c.Weights.Add(nn.Tensor{Name: "fc9_weight", Shape: []int{2}, Data: []float64{1, 2}})
		}), ErrParam},
		{"missing weight", mod(func(c *Config) { delete(c.Weights, "fc1_bias") }), ErrParam},
		{"misshapen weight", mod(func(c *Config) {
			c.Weights["fc1_bias"] = nn.Tensor{Name: "fc1_bias", Shape: []int{3}, Data: []float64{1, 2, 3}}
		}), ErrParam},
		{"weight beyond fp16", mod(func(c *Config) {
			w := c.Weights["fc2_bias"]
			w.Data = append([]float64(nil), w.Data...)
			w.Data[0] = 1e6
			c.Weights["fc2_bias"] = w
		}), ErrParam},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := New(c.cfg, dev); !errors.Is(err, c.want) {
				t.Errorf("New: %v, want %v", err, c.want)
			}
			if _, err := NewReference(c.cfg); !errors.Is(err, c.want) {
				t.Errorf("NewReference: %v, want %v", err, c.want)
			}
		})
	}
	tr, err := New(base, dev)
	if err != nil {
		t.Fatal(err)
	}
	good := digits(rand.New(rand.NewPCG(1, 1)), 16, 40, 5)
	nan := Batch{X: append([]float64(nil), good.X...), Y: good.Y}
	nan.X[7] = math.NaN()
	inf := Batch{X: good.X, Y: append([]float64(nil), good.Y...)}
	inf.Y[3] = math.Inf(1)
	// Labels outside [0, 5): OneHot gives them all-zero rows, which
	// SoftmaxCrossEntropy took as targets (the loss of those rows is then
	// log Σ exp z, and the step trains every logit down) without a word.
	labels := argmax(good.Y, 5)
	labels[3] = 5
	high := Batch{X: good.X, Y: OneHot(labels, 5)}
	labels[3] = -1
	low := Batch{X: good.X, Y: OneHot(labels, 5)}
	for name, b := range map[string]Batch{
		"short X": {X: good.X[:10], Y: good.Y}, "long Y": {X: good.X, Y: append(good.Y, 0)},
		"NaN pixel": nan, "Inf target": inf, "label 5 of 5": high, "label −1": low,
	} {
		if _, err := tr.Step(b); !errors.Is(err, ErrBatch) {
			t.Errorf("%s: %v, want ErrBatch", name, err)
		}
	}
	if _, err := tr.Evaluate(good.X[:41], []int{0}); !errors.Is(err, ErrBatch) {
		t.Errorf("partial example: %v, want ErrBatch", err)
	}
	if _, err := tr.Evaluate(good.X[:40], []int{9}); !errors.Is(err, ErrBatch) {
		t.Errorf("label out of range: %v, want ErrBatch", err)
	}
	if st := tr.Stats(); st.Steps != 0 {
		t.Errorf("%d steps ran on bad batches", st.Steps)
	}
	// Smoothed labels are distributions too: 0.9 on the label, 0.025
	// elsewhere. The first step's loss is the float64 twin's to within
	// the forward pass's rounding (32u, as in TestTrainerTracksReference).
	smooth := Batch{X: good.X, Y: make([]float64, len(good.Y))}
	for i, v := range good.Y {
		smooth.Y[i] = 0.025 + 0.875*v
	}
	ref, err := NewReference(base)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := tr.Step(smooth)
	if err != nil {
		t.Fatalf("smoothed labels: %v", err)
	}
	lr, err := ref.Step(smooth)
	if err != nil || math.Abs(ls-lr) > 32*u*lr {
		t.Errorf("smoothed labels: loss %g, float64 %g (%v)", ls, lr, err)
	}
	// A closed trainer is ErrDevice and shim.ErrClosed (a Step was
	// ErrBatch, as if the batch were bad).
	tr.Close()
	if _, err := tr.Step(good); !errors.Is(err, ErrDevice) || !errors.Is(err, shim.ErrClosed) || errors.Is(err, ErrBatch) {
		t.Errorf("Step after Close: %v, want ErrDevice and shim.ErrClosed", err)
	}
	if _, err := tr.Predict(good.X[:40]); !errors.Is(err, ErrDevice) || !errors.Is(err, shim.ErrClosed) {
		t.Errorf("Predict after Close: %v, want ErrDevice and shim.ErrClosed", err)
	}
	if _, err := tr.Checkpoint(); !errors.Is(err, ErrDevice) || !errors.Is(err, shim.ErrClosed) {
		t.Errorf("Checkpoint after Close: %v, want ErrDevice and shim.ErrClosed", err)
	}
}

// TestCheckpointMalformed: a checkpoint whose optimizer entries do not fit
// is ErrParam at New and NewReference. A truncated or non-power-of-two
// "train.scaler", or a state tensor of the wrong length, was ignored or
// taken as it was (the run restarted Adam's bias correction, or scaled
// the loss by 3, without a word), a loss scale of 0 failed only at the
// first Step, and a NaN in a state passed NewReference.
func TestCheckpointMalformed(t *testing.T) {
	dev := open(t, "sim")
	cfg := smallConfig(Compensated, Adam{LR: 1e-2})
	tr, err := New(cfg, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	b := digits(rand.New(rand.NewPCG(8, 9)), 16, 40, 5)
	if _, err := tr.Step(b); err != nil {
		t.Fatal(err)
	}
	ck, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	mod := func(f func(ws nn.Weights)) Config {
		c := cfg
		c.Weights = nn.Weights{}
		for k, v := range ck {
			c.Weights[k] = nn.Tensor{Name: v.Name, DType: v.DType, Shape: v.Shape, Data: append([]float64(nil), v.Data...)}
		}
		f(c.Weights)
		return c
	}
	good := mod(func(nn.Weights) {})
	cases := map[string]Config{
		"scaler of 3 values": mod(func(ws nn.Weights) {
			s := ws["train.scaler"]
			s.Data = s.Data[:3]
			ws["train.scaler"] = s
		}),
		"loss scale 3": mod(func(ws nn.Weights) { ws["train.scaler"].Data[0] = 3 }),
		"loss scale 0": mod(func(ws nn.Weights) { ws["train.scaler"].Data[0] = 0 }),
		"applied −1":   mod(func(ws nn.Weights) { ws["train.scaler"].Data[2] = -1 }),
		"lo too long": mod(func(ws nn.Weights) {
			lo := ws["train.fc1_bias.lo"]
			lo.Data = append(lo.Data, 0)
			ws["train.fc1_bias.lo"] = lo
		}),
		"lo without hi": mod(func(ws nn.Weights) { delete(ws, "train.fc1_bias.hi") }),
		"NaN moment":    mod(func(ws nn.Weights) { ws["train.fc2_weight.m"].Data[3] = math.NaN() }),
	}
	for name, c := range cases {
		if _, err := New(c, dev); !errors.Is(err, ErrParam) {
			t.Errorf("%s: New: %v, want ErrParam", name, err)
		}
		if _, err := NewReference(c); !errors.Is(err, ErrParam) {
			t.Errorf("%s: NewReference: %v, want ErrParam", name, err)
		}
	}
	// The intact checkpoint resumes where the trainer stands: the same
	// next loss, bit for bit.
	again, err := New(good, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	want, err := tr.Step(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := again.Step(b); err != nil || got != want {
		t.Errorf("resumed: loss %v, %v; want %v", got, err, want)
	}
}

// TestCheckpointResume: a checkpoint written to safetensors and read back
// resumes training to the same loss, bit for bit, on the device and on the
// float64 twin, without a new compile.
func TestCheckpointResume(t *testing.T) {
	dev := open(t, "sim")
	cfg := smallConfig(Compensated, Adam{LR: 1e-2, WeightDecay: 0.01})
	tr, err := New(cfg, dev)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := NewReference(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(8, 9))
	for range 12 {
		b := digits(rng, 16, 40, 5)
		if _, err := tr.Step(b); err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Step(b); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip := func(ck nn.Weights) nn.Weights {
		var buf bytes.Buffer
		if err := nn.WriteSafetensors(&buf, ck, nil); err != nil {
			t.Fatal(err)
		}
		ws, err := nn.ReadSafetensors(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	ck, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	rck, err := ref.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	compiles := dev.(*shim.Cache).Stats().Compiles
	c2 := cfg
	c2.Weights = roundTrip(ck)
	tr2, err := New(c2, dev)
	if err != nil {
		t.Fatal(err)
	}
	c3 := cfg
	c3.Weights = roundTrip(rck)
	ref2, err := NewReference(c3)
	if err != nil {
		t.Fatal(err)
	}
	if c := dev.(*shim.Cache).Stats().Compiles; c != compiles {
		t.Errorf("resuming compiled again: %d → %d compiles", compiles, c)
	}
	for s := range 5 {
		b := digits(rng, 16, 40, 5)
		l1, err1 := tr.Step(b)
		l2, err2 := tr2.Step(b)
		r1, err3 := ref.Step(b)
		r2, err4 := ref2.Step(b)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatal(err)
		}
		if l1 != l2 || r1 != r2 {
			t.Fatalf("step %d after resuming: device %v vs %v, float64 %v vs %v", s, l1, l2, r1, r2)
		}
	}
	// The plain weights alone are a valid start too.
	ws, err := tr.Weights()
	if err != nil {
		t.Fatal(err)
	}
	c4 := cfg
	c4.Weights = roundTrip(ws)
	if _, err := New(c4, dev); err != nil {
		t.Fatal(err)
	}
}

// TestOverflowSkipsStep: a loss scale far too large makes the backward
// pass overflow; the device's gate leaves every weight and state bit as it
// was, the host halves the scale, and training goes on.
func TestOverflowSkipsStep(t *testing.T) {
	cfg := smallConfig(Compensated, Adam{LR: 1e-2})
	cfg.LossScale = 1 << 15
	tr, err := New(cfg, open(t, "sim"))
	if err != nil {
		t.Fatal(err)
	}
	before, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 3))
	// Pixels up to 16: the backward sums reach 2¹⁵·16/16·16 and beyond.
	loud := func() Batch {
		b := digits(rng, 16, 40, 5)
		for i := range b.X {
			b.X[i] *= 16
		}
		return b
	}
	if _, err := tr.Step(loud()); err != nil {
		t.Fatal(err)
	}
	st := tr.Stats()
	if st.Skipped != 1 || st.LossScale != 1<<14 {
		t.Fatalf("after an overflowing step: %+v, want 1 skipped and the scale halved", st)
	}
	after, err := tr.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if !sameState(t, before, after, "a skipped step") {
		t.FailNow()
	}
	for range 30 {
		if _, err := tr.Step(loud()); err != nil {
			t.Fatal(err)
		}
	}
	if st := tr.Stats(); st.Applied == 0 || st.LossScale >= 1<<14 {
		t.Errorf("the scale did not come down to a working value: %+v", st)
	}
}

// TestStepOverflowSkipsStep: one weight w = 1 with x = 1 and target 5
// has the MSE gradient 2(w − 5) = −8 exactly. SGD at LR 8 asks for a
// change of 64, 2¹⁶ in lo's unit 2⁻¹⁰: beyond fp16, so lo became +Inf,
// then NaN, and every weight NaN, in a step reported as applied with no
// error. Now the step gate sees the step (≥ 2¹⁵ in its unit), skips it and
// the step is an ErrOverflow; every bit of the state is as it was, on the
// device and on the float64 twin, for SGD and for Adam (whose moments are
// gated too). At LR 1 the same step is applied: w = 1 + 8 = 9 exactly
// (every value on its path is a small integer).
func TestStepOverflowSkipsStep(t *testing.T) {
	net, w0 := oneWeightNet, oneWeight()
	b := Batch{X: []float64{1}, Y: []float64{5}}
	dev := open(t, "sim")
	for _, opt := range []Optimizer{SGD{LR: 8}, SGD{LR: 8, Momentum: 0.5}, Adam{LR: 100}} {
		// Compensated updates: a plain step of 64 fits fp16.
		cfg := Config{Network: net, Weights: w0, Batch: 1, Loss: MeanSquaredError, Optimizer: opt, Update: Compensated}
		tr, err := New(cfg, dev)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := NewReference(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range []interface {
			Step(Batch) (float64, error)
			Checkpoint() (nn.Weights, error)
		}{tr, ref} {
			before, err := r.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			loss, err := r.Step(b)
			if !errors.Is(err, ErrOverflow) || loss != 16 {
				t.Errorf("%+v: loss %g, %v; want 16 and ErrOverflow", opt, loss, err)
			}
			after, err := r.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			sameState(t, before, after, fmt.Sprintf("%+v: a skipped step", opt))
		}
		if st := tr.Stats(); st.Applied != 0 || st.Skipped != 1 {
			t.Errorf("%+v: %+v, want 0 applied and 1 skipped", opt, st)
		}
		tr.Close()
	}
	tr, err := New(Config{Network: net, Weights: w0, Batch: 1, Loss: MeanSquaredError, Optimizer: SGD{LR: 1}}, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Step(b); err != nil {
		t.Fatal(err)
	}
	if ws, err := tr.Weights(); err != nil || ws["w"].Data[0] != 9 {
		t.Errorf("after one SGD step at LR 1: %v, %v; want w = 9", ws["w"].Data, err)
	}
}

// TestSmallLearningRate: one weight w = 1 with x = 1 and target 5 has the
// MSE gradient −8 exactly, so one compensated SGD step at LR 3e-5 moves it
// by 2.4e-4. The device's rate factor, 3e-5, is subnormal in fp16, and
// the pessimistic simulator (sim-narrow, which flushes subnormals as an
// engine may) lost every update without a sign: w stayed 1. The rate now
// crosses as 1.2e-4·2⁻², both normal; the step is within 4u of 2.4e-4
// (the rounding of the rate, its product with the gradient and the add
// into lo). A rate below what the split carries (LR 1e-9) is ErrConfig
// at New, and a schedule that takes it there is ErrConfig at Step.
func TestSmallLearningRate(t *testing.T) {
	net, w0 := oneWeightNet, oneWeight()
	b := Batch{X: []float64{1}, Y: []float64{5}}
	cfg := Config{Network: net, Weights: w0, Batch: 1, Loss: MeanSquaredError, Optimizer: SGD{LR: 3e-5}}
	for _, name := range []string{"sim", "sim-narrow"} {
		tr, err := New(cfg, open(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Step(b); err != nil {
			t.Fatal(err)
		}
		ws, err := tr.Weights()
		if err != nil {
			t.Fatal(err)
		}
		if d := ws["w"].Data[0] - 1; math.Abs(d-2.4e-4) > 4*u*2.4e-4 {
			t.Errorf("%s: one step at LR 3e-5 moved w by %g, want 2.4e-4 ± %.2g", name, d, 4*u*2.4e-4)
		}
		tr.Close()
	}
	tiny := cfg
	tiny.Optimizer = SGD{LR: 1e-9}
	if _, err := New(tiny, open(t, "sim")); !errors.Is(err, ErrConfig) {
		t.Errorf("LR 1e-9: %v, want ErrConfig", err)
	}
	sched := cfg
	sched.Optimizer = SGD{LR: 1e-3}
	sched.Schedule = func(int) float64 { return 1e-6 }
	tr, err := New(sched, open(t, "sim"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Step(b); !errors.Is(err, ErrConfig) {
		t.Errorf("LR 1e-3 scheduled down to 1e-9: %v, want ErrConfig", err)
	}
}

// TestCompensatedUpdates is the ablation in its plainest form: a single
// weight w = 1 learns a target of 1.01 by SGD with steps of about 1e-5 —
// below half of fp16's spacing at 1 (2⁻¹¹ ≈ 4.9e-4). Plain fp16 updates
// are all lost and w stays 1 exactly; compensated updates accumulate in lo
// and follow the float64 twin. They differ from it in two ways: the
// forward pass reads hi, up to 2⁻¹¹ from w, which changes each gradient
// 2(w − 1.01) by up to 2·2⁻¹¹, times the effective rate lr/(1−μ) = 1e-3,
// over 200 steps ≤ 1.96e-4; and each add into lo (|lo| ≤ ½ in its unit
// 2⁻¹⁰) rounds by ≤ 2⁻¹³·2⁻¹⁰ of the weight, ≤ 2.4e-5 over 200 steps.
func TestCompensatedUpdates(t *testing.T) {
	net, w0 := oneWeightNet, oneWeight()
	b := Batch{X: []float64{1, 1, 1, 1}, Y: []float64{1.01, 1.01, 1.01, 1.01}}
	change := map[Update]float64{}
	dev := open(t, "sim")
	const steps = 200
	for _, up := range []Update{Compensated, PlainFP16} {
		cfg := Config{Network: net, Weights: w0, Batch: 4, Loss: MeanSquaredError, Optimizer: SGD{LR: 5e-4, Momentum: 0.5}, Update: up}
		tr, err := New(cfg, dev)
		if err != nil {
			t.Fatal(err)
		}
		for range steps {
			if _, err := tr.Step(b); err != nil {
				t.Fatal(err)
			}
		}
		ws, err := tr.Weights()
		if err != nil {
			t.Fatal(err)
		}
		change[up] = ws["w"].Data[0] - 1
	}
	ref, err := NewReference(Config{Network: net, Weights: w0, Batch: 4, Loss: MeanSquaredError, Optimizer: SGD{LR: 5e-4, Momentum: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	for range steps {
		if _, err := ref.Step(b); err != nil {
			t.Fatal(err)
		}
	}
	ws, _ := ref.Weights()
	want := ws["w"].Data[0] - 1
	t.Logf("w − 1 after %d steps: float64 %.6g, compensated %.6g, plain fp16 %.6g", steps, want, change[Compensated], change[PlainFP16])
	if change[PlainFP16] != 0 {
		t.Errorf("plain fp16 moved w by %g; every step is below half an ulp", change[PlainFP16])
	}
	if bound := 200*1e-3*2*0x1p-11 + 200*0x1p-23; math.Abs(change[Compensated]-want) > bound {
		t.Errorf("compensated change %g, float64 %g: beyond %.2g", change[Compensated], want, bound)
	}
}

// TestReferenceIsAdam: the float64 twin's update is textbook AdamW
// (PyTorch's formulas, the gradient from Eval of Grad, which the dataflow
// tests check against finite differences) to float64 rounding: after five
// steps every weight agrees within 1e-12 (the two evaluation orders differ
// by a few ulps of weights of order 0.1). One deliberate difference is
// written into the textbook side: ε is floored where the device's state
// unit needs it (see Adam).
func TestReferenceIsAdam(t *testing.T) {
	opt := Adam{LR: 1e-2, WeightDecay: 0.1}
	cfg := smallConfig(Compensated, opt)
	ref, err := NewReference(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The same network, loss and gradient, updated by hand.
	g := dataflow.New()
	x, out := cfg.Network(g, cfg.Batch)
	target := g.Input("target", out.Shape())
	loss := SoftmaxCrossEntropy(g, out, target)
	var names []string
	for n := range cfg.Weights {
		names = append(names, n)
	}
	slices.Sort(names)
	var params []dataflow.Value
	for _, n := range names {
		v, _ := g.Lookup(n)
		params = append(params, v)
	}
	for i, gv := range g.Grad(loss, params...) {
		g.Output("d_"+names[i], gv)
	}
	w, m, v := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for _, n := range names {
		w[n] = append([]float64(nil), cfg.Weights[n].Data...)
		m[n] = make([]float64, len(w[n]))
		v[n] = make([]float64, len(w[n]))
	}
	rng := rand.New(rand.NewPCG(4, 4))
	const b1, b2, eps = 0.9, 0.999, 1e-8
	for step := 1; step <= 5; step++ {
		b := digits(rng, 16, 40, 5)
		if _, err := ref.Step(b); err != nil {
			t.Fatal(err)
		}
		in := map[string][]float64{g.Node(x).Name: b.X, "target": b.Y}
		for _, n := range names {
			in[n] = w[n]
		}
		d, err := dataflow.Eval(g, in)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			for i, gr := range d["d_"+n] {
				w[n][i] -= opt.LR * opt.WeightDecay * w[n][i]
				m[n][i] = b1*m[n][i] + (1-b1)*gr
				v[n][i] = b2*v[n][i] + (1-b2)*gr*gr
				mh := m[n][i] / (1 - math.Pow(b1, float64(step)))
				vh := v[n][i] / (1 - math.Pow(b2, float64(step)))
				e := math.Max(eps, 0x1p-24/math.Sqrt(1-math.Pow(b2, float64(step))))
				w[n][i] -= opt.LR * mh / (math.Sqrt(vh) + e)
			}
		}
	}
	got, err := ref.Weights()
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for _, n := range names {
		for i, want := range w[n] {
			worst = math.Max(worst, math.Abs(got[n].Data[i]-want))
		}
	}
	t.Logf("largest difference from textbook AdamW after 5 steps: %.2g", worst)
	if worst > 1e-12 {
		t.Errorf("the float64 twin differs from AdamW by %g", worst)
	}
}

// TestSchedule: a schedule multiplies the learning rate without a
// compile: factor ½ from the start is the same run, bit for bit, as half
// the rate (the scalars the host writes are the same numbers), on the
// device and in the float64 twin; a factor that is not finite and
// positive is ErrConfig, naming the update.
func TestSchedule(t *testing.T) {
	dev := open(t, "sim")
	b := digits(rand.New(rand.NewPCG(7, 8)), 16, 40, 5)
	run := func(cfg Config) ([]float64, []float64) {
		tr, err := New(cfg, dev)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		ref, err := NewReference(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var dl, rl []float64
		for range 20 {
			l, err := tr.Step(b)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ref.Step(b)
			if err != nil {
				t.Fatal(err)
			}
			dl, rl = append(dl, l), append(rl, r)
		}
		return dl, rl
	}
	half := smallConfig(Compensated, Adam{LR: 5e-3})
	sched := smallConfig(Compensated, Adam{LR: 1e-2})
	sched.Schedule = func(int) float64 { return 0.5 }
	d1, r1 := run(half)
	d2, r2 := run(sched)
	if !slices.Equal(d1, d2) || !slices.Equal(r1, r2) {
		t.Errorf("factor ½ differs from half the rate:\ndevice %v\n  vs   %v\ntwin %v\n vs  %v", d1, d2, r1, r2)
	}
	bad := smallConfig(Compensated, Adam{LR: 1e-2})
	bad.Schedule = func(t int) float64 {
		if t == 3 {
			return math.NaN()
		}
		return 1
	}
	tr, err := New(bad, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for i := range 3 {
		_, err = tr.Step(b)
		if i < 2 && err != nil {
			t.Fatal(err)
		}
	}
	if !errors.Is(err, ErrConfig) {
		t.Errorf("a NaN factor at update 3: %v, want ErrConfig", err)
	}
	// The rate is a runtime scalar: three trainers of one network at
	// different rates and schedules share one step program.
	if c := dev.(*shim.Cache).Stats().Compiles; c != 1 {
		t.Errorf("%d compiles, want 1", c)
	}
}

// TestAdamStepBound: the ratio |m_t|/r_t that stepBound relies on stays
// below (1−β₁)/(√(1−β₂)·(1−β₁/√β₂)) (half of the bound's factor: the other
// half is rounding margin) over gradient sequences that push it, in
// float64 with the device's recursions: constant, geometrically growing
// and shrinking (a large old gradient weighs on m longer than on r when
// β₁ < √β₂ fails to hold by little), and a spike after silence. And
// adamRateMax is the supremum of the bias-corrected rate factor, checked
// against a brute-force scan of 10⁶ steps.
func TestAdamStepBound(t *testing.T) {
	for _, b := range [][2]float64{{0.9, 0.999}, {0.5, 0.9}, {0.99, 0.9999}, {0.9, 0.9}} {
		b1, b2 := b[0], b[1]
		limit := (1 - b1) / (math.Sqrt(1-b2) * (1 - b1/math.Sqrt(b2)))
		worst := 0.0
		for _, rho := range []float64{0.5, 0.9, 0.99, 0.999, 1, 1.001, 1.01, 1.1, 2} {
			m, r, g := 0.0, 0.0, 1.0
			for range 3000 {
				m = b1*m + (1-b1)*g
				r = math.Sqrt(b2*r*r + (1-b2)*g*g)
				worst = math.Max(worst, math.Abs(m)/r)
				if g *= rho; g < 1e-150 || g > 1e150 {
					break
				}
			}
		}
		// A spike, then zeros: m decays by β₁, r by √β₂ per step.
		m, r := 1-b1, math.Sqrt(1-b2)
		for range 3000 {
			worst = math.Max(worst, m/r)
			m, r = b1*m, math.Sqrt(b2)*r
		}
		if worst > limit*(1+1e-12) {
			t.Errorf("β = %v: |m|/r reached %.6g, beyond the bound %.6g", b, worst, limit)
		}
		if worst < limit/40 {
			t.Errorf("β = %v: |m|/r reached only %.3g of the bound %.3g: the sequences do not test it", b, worst, limit)
		}
		t.Logf("β = %v: max |m|/r %.4g, bound %.4g", b, worst, limit)

		brute, p1, p2 := 0.0, 1.0, 1.0
		for range 1000000 {
			p1, p2 = p1*b1, p2*b2
			brute = math.Max(brute, math.Sqrt(1-p2)/(1-p1))
		}
		if got := adamRateMax(b1, b2); got < brute*(1-1e-12) {
			t.Errorf("β = %v: adamRateMax %.15g below the scanned supremum %.15g", b, got, brute)
		}
	}
}

// TestUngatedStepRefusesSchedule: Adam at lr 1e-3 needs no step gate
// (its bound, about 6.5e4·lr in lo's unit 2⁻¹⁰ for compensated weights,
// 65 here, is far below 2¹⁴), so the program has none and its monitor two values; a
// schedule that multiplies the rate by 10⁴ at step 2 would allow steps of
// up to 2¹⁵ and is refused with ErrConfig before the dispatch, the
// weights as they were. SGD at lr 8 (a possible step of 2¹⁷) is gated.
func TestUngatedStepRefusesSchedule(t *testing.T) {
	dev := open(t, "sim")
	cfg := smallConfig(Compensated, Adam{LR: 1e-3})
	cfg.Schedule = func(t int) float64 {
		if t >= 2 {
			return 1e4
		}
		return 1
	}
	tr, err := New(cfg, dev)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.st.gated || tr.st.monitorLen() != 2 {
		t.Fatalf("Adam lr 1e-3: gated %v, monitor %d values; want ungated, 2", tr.st.gated, tr.st.monitorLen())
	}
	rng := rand.New(rand.NewPCG(5, 6))
	if _, err := tr.Step(digits(rng, 16, 40, 5)); err != nil {
		t.Fatal(err)
	}
	before, err := tr.Weights()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Step(digits(rng, 16, 40, 5)); !errors.Is(err, ErrConfig) {
		t.Fatalf("a schedule factor of 1e4: %v, want ErrConfig", err)
	}
	after, err := tr.Weights()
	if err != nil {
		t.Fatal(err)
	}
	if !sameState(t, before, after, "a refused step") {
		t.FailNow()
	}
	sgd, err := New(smallConfig(Compensated, SGD{LR: 8}), dev)
	if err != nil {
		t.Fatal(err)
	}
	defer sgd.Close()
	if !sgd.st.gated || sgd.st.monitorLen() != 3 {
		t.Errorf("SGD lr 8: gated %v, monitor %d values; want gated, 3", sgd.st.gated, sgd.st.monitorLen())
	}
}

// oneWeightNet is y = x·w for one weight w and x of shape [batch, 1]
// (oneWeight).
func oneWeightNet(g *dataflow.Graph, batch int) (dataflow.Value, dataflow.Value) {
	x := g.Input("x", dataflow.Shape{batch, 1})
	w := g.Input("w", dataflow.Shape{1, 1})
	return x, g.MatMul(x, w, false, true)
}

// oneWeight is oneWeightNet's weight, w = 1.
func oneWeight() nn.Weights {
	return nn.Weights{"w": {Name: "w", Shape: []int{1, 1}, Data: []float64{1}}}
}

// sameState reports whether every value of before (weights or a
// checkpoint; the loss scaler's entry aside, which a skipped step
// changes) is unchanged in after (==, NaN matching NaN); the first that
// is not is an error of the test, in what.
func sameState(t *testing.T, before, after nn.Weights, what string) bool {
	t.Helper()
	for name, w := range before {
		if name == "train.scaler" {
			continue
		}
		for i, v := range w.Data {
			if got := after[name].Data[i]; got != v && !(math.IsNaN(got) && math.IsNaN(v)) {
				t.Errorf("%s: %s[%d] changed from %v to %v", what, name, i, v, got)
				return false
			}
		}
	}
	return true
}
