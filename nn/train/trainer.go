package train

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
)

// Batch is one minibatch: X row-major in the network's input shape, Y the
// target in its output shape (one-hot rows for a classifier; see OneHot).
type Batch struct {
	X, Y []float64
}

// OneHot returns the one-hot rows [len(labels), classes] of labels; a
// label outside [0, classes) gives an all-zero row, which Step refuses
// (ErrBatch) when the loss is SoftmaxCrossEntropy.
func OneHot(labels []int, classes int) []float64 {
	y := make([]float64, len(labels)*classes)
	for i, l := range labels {
		if l >= 0 && l < classes {
			y[i*classes+l] = 1
		}
	}
	return y
}

// Stats are a trainer's counts so far.
type Stats struct {
	Steps, Applied, Skipped int
	LossScale               float64
	// BytesIn and BytesOut are the host↔device bytes of all steps (the
	// initial weights and evaluations excluded); WeightBytes the fp16
	// size of the parameters, for comparison.
	BytesIn, BytesOut, WeightBytes int64
	// Device is the time inside the device's runs (the simulation, on
	// the simulator); Host the rest of Step.
	Device, Host time.Duration
	// Modeled is the engine's modeled time of one step (lower.Estimate
	// for the device's target; the simulator's programs as ane-m1).
	Modeled time.Duration
}

// Trainer trains a network on a device, one dispatch per step.
type Trainer struct {
	cfg   Config
	st    *step
	dev   shim.Device
	exe   shim.Executable
	ses   *shim.Session
	sc    scaler
	stats Stats

	eval      *evalProgram
	evalStale bool
	closed    bool
	base      shim.SessionStats // session counters after the initial writes
	extraOut  int64             // bytes read outside steps: weights for evaluation, checkpoints
}

type evalProgram struct {
	ses   *shim.Session
	batch int
	x     string
}

// New compiles c's training step for dev (nil: the process's shared
// default device) and puts the weights and a zero optimizer state on it.
// c.Weights may be a Checkpoint, which restores the state exactly.
func New(c Config, dev shim.Device) (*Trainer, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.EvalBatch == 0 {
		c.EvalBatch = 500
	}
	st, err := buildStep(&c)
	if err != nil {
		return nil, err
	}
	if dev == nil {
		if dev, err = shim.Shared(); err != nil {
			return nil, fmt.Errorf("train: opening the default device: %w", err)
		}
	}
	exe, _, err := shim.BuildReported(dev, st.g)
	if err != nil {
		return nil, fmt.Errorf("train: compiling the step: %w", err)
	}
	ses, err := shim.NewSession(exe)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	t := &Trainer{cfg: c, st: st, dev: dev, exe: exe, ses: ses, evalStale: true}
	for _, cp := range st.carries {
		if err := ses.Carry(cp[0], cp[1]); err != nil {
			return nil, fmt.Errorf("train: %w", err)
		}
	}
	init, sc, err := initialState(&c, st, false)
	if err != nil {
		return nil, err
	}
	t.sc = sc
	for name, v := range init {
		if err := ses.Write64(name, v, 0); err != nil {
			return nil, fmt.Errorf("train: writing %q: %w", name, errors.Join(ErrParam, err))
		}
	}
	t.base = ses.Stats()
	target := dev.Info().Target.Name
	if target == "sim" {
		target = "ane-m1"
	}
	if cost, err := lower.Estimate(exe.Program(), target); err == nil {
		t.stats.Modeled = cost.Time
	}
	for _, p := range st.params {
		t.stats.WeightBytes += 2 * int64(p.shape.Size())
	}
	return t, nil
}

// initialState is every state input's first value and the loss scale's
// state, from plain weights or from a Checkpoint. exact keeps each weight
// whole in hi (the float64 reference) instead of splitting it into fp16
// halves.
func initialState(c *Config, st *step, exact bool) (map[string][]float64, scaler, error) {
	out := map[string][]float64{}
	sc := scaler{scale: c.LossScale}
	if sc.scale == 0 {
		sc.scale = 1 << 10
	}
	u := stepUnit(c.Update)
	for _, p := range st.params {
		w := c.Weights[p.name].Data
		hi := make([]float64, len(w))
		lo := make([]float64, len(w))
		if i := outsideFP16(w); i >= 0 {
			return nil, sc, fmt.Errorf("train: weight %q element %d is %g, beyond fp16's range: %w", p.name, i, w[i], ErrParam)
		}
		for i, v := range w {
			hi[i] = v
			if !exact {
				hi[i] = fp16.Round64(v)
				lo[i] = (v - hi[i]) * u
			}
		}
		ckHi, okHi, err := checkpointEntry(c.Weights, ckptName(p.name, "hi"), len(w))
		if err != nil {
			return nil, sc, err
		}
		ckLo, okLo, err := checkpointEntry(c.Weights, ckptName(p.name, "lo"), len(w))
		if err != nil {
			return nil, sc, err
		}
		if okLo && !okHi {
			return nil, sc, fmt.Errorf("train: checkpoint: %q without %q: %w", ckptName(p.name, "lo"), ckptName(p.name, "hi"), ErrParam)
		}
		if okHi && okLo {
			hi, lo = ckHi, ckLo
		}
		out[p.name] = hi
		if p.lo.Valid() {
			out[loName(p.name)] = lo
		}
		for _, s := range st.opt.states() {
			v, ok, err := checkpointEntry(c.Weights, ckptName(p.name, s), len(w))
			if err != nil {
				return nil, sc, err
			}
			if !ok {
				v = make([]float64, len(w))
			}
			out[stateName(p.name, s)] = v
		}
	}
	if t, ok := c.Weights["train.scaler"]; ok {
		d := t.Data
		bad := len(d) != 4 || !validScale(d[0])
		for i := 1; !bad && i < 4; i++ {
			bad = !(d[i] >= 0) || math.IsInf(d[i], 0) || d[i] != math.Trunc(d[i])
		}
		if bad {
			return nil, sc, fmt.Errorf("train: checkpoint: \"train.scaler\" is %v, want [loss scale (a power of two in [2⁻⁵, 2¹⁵]), good, applied, skipped] with counts whole and ≥ 0, as Checkpoint writes it: %w", d, ErrParam)
		}
		sc = scaler{scale: d[0], good: int(d[1]), applied: int(d[2]), skipped: int(d[3])}
	}
	return out, sc, nil
}

// checkpointEntry is the checkpoint's state tensor name in ws, if there
// is one (ok), validated for a parameter of n values: n finite values
// within fp16's range.
func checkpointEntry(ws nn.Weights, name string, n int) (data []float64, ok bool, err error) {
	t, ok := ws[name]
	if !ok {
		return nil, false, nil
	}
	if len(t.Data) != n {
		return nil, true, fmt.Errorf("train: checkpoint: %q has %d values, its parameter %d: %w", name, len(t.Data), n, ErrParam)
	}
	if i := outsideFP16(t.Data); i >= 0 {
		return nil, true, fmt.Errorf("train: checkpoint: %q element %d is %g, beyond fp16's range: %w", name, i, t.Data[i], ErrParam)
	}
	return t.Data, true, nil
}

// outsideFP16 is the index of the first element of xs that is NaN, ±Inf
// or beyond fp16's range, or −1.
func outsideFP16(xs []float64) int {
	for i, v := range xs {
		if !(math.Abs(v) <= fp16.MaxValue) {
			return i
		}
	}
	return -1
}

// checkBatch validates a minibatch against the step's shapes.
func (s *step) checkBatch(b Batch) error {
	if len(b.X) != s.xShape.Size() {
		return fmt.Errorf("train: batch X has %d values, the network's input %v needs %d: %w", len(b.X), s.xShape, s.xShape.Size(), ErrBatch)
	}
	if len(b.Y) != s.outShape.Size() {
		return fmt.Errorf("train: batch Y has %d values, the network's output %v needs %d: %w", len(b.Y), s.outShape, s.outShape.Size(), ErrBatch)
	}
	for _, xs := range [...]struct {
		name string
		v    []float64
	}{{"X", b.X}, {"Y", b.Y}} {
		if i := outsideFP16(xs.v); i >= 0 {
			return fmt.Errorf("train: batch %s element %d is %g: clean the data (fp16 holds finite values up to ±%g): %w", xs.name, i, xs.v[i], fp16.MaxValue, ErrBatch)
		}
	}
	if s.crossEntropy {
		// Its targets are distributions. OneHot gives a label outside
		// [0, classes) an all-zero row, which would train every logit of
		// the example down without a word.
		c := s.outShape[len(s.outShape)-1]
		for r := 0; r < len(b.Y)/c; r++ {
			sum := 0.0
			for j, v := range b.Y[r*c : (r+1)*c] {
				if v < 0 {
					return fmt.Errorf("train: batch Y row %d has %g for class %d: SoftmaxCrossEntropy's targets are distributions (one-hot rows): %w", r, v, j, ErrBatch)
				}
				sum += v
			}
			if math.Abs(sum-1) > 1e-3 {
				return fmt.Errorf("train: batch Y row %d sums to %g, and SoftmaxCrossEntropy's targets are distributions summing to 1 (one-hot rows; OneHot gives a label outside [0, %d) an all-zero row): %w", r, sum, c, ErrBatch)
			}
		}
	}
	return nil
}

// Step runs one training step on the device and returns the batch's loss
// (before the update). A step whose backward pass overflowed is skipped
// on the device and the loss scale halved; that is not an error. A
// forward overflow, or an optimizer step too large for fp16 (the learning
// rate is too high), skips the step too and is an error wrapping
// ErrOverflow.
func (t *Trainer) Step(b Batch) (float64, error) {
	start := time.Now()
	if err := t.open(); err != nil {
		return 0, err
	}
	if err := t.st.checkBatch(b); err != nil {
		return 0, err
	}
	dev0 := t.ses.Stats().Device
	if err := t.ses.Write64(t.st.x, b.X, 0); err != nil {
		return 0, fmt.Errorf("train: %w", errors.Join(ErrBatch, err))
	}
	if err := t.ses.Write64(t.st.t, b.Y, 0); err != nil {
		return 0, fmt.Errorf("train: %w", errors.Join(ErrBatch, err))
	}
	scalars, err := t.st.hostScalars(t.sc.applied+1, t.sc.scale)
	if err != nil {
		return 0, err
	}
	for name, v := range scalars {
		if err := t.ses.Write64(name, []float64{v}, 0); err != nil {
			return 0, fmt.Errorf("train: scalar %s = %g: %w", name, v, errors.Join(ErrConfig, err))
		}
	}
	if err := t.ses.Run(); err != nil {
		return 0, fmt.Errorf("train: %w", errors.Join(ErrDevice, err))
	}
	loss := make([]float64, 1)
	mon := make([]float64, 3) // the step maximum is 0 when ungated
	lerr := t.ses.Read64(outLoss, loss, 0)
	_ = t.ses.Read64(outMonitor, mon[:t.st.monitorLen()], 0) // ±Inf is the overflow signal itself
	t.evalStale = true
	t.stats.Steps++
	_, err = t.sc.observe(mon[0], mon[1], mon[2])
	st := t.ses.Stats()
	t.stats.Device += st.Device - dev0
	t.stats.Host += time.Since(start) - (st.Device - dev0)
	if err == nil && lerr != nil {
		err = fmt.Errorf("train: the loss overflowed: %w", errors.Join(ErrOverflow, lerr))
	}
	return loss[0], err
}

// Stats returns the trainer's counts so far.
func (t *Trainer) Stats() Stats {
	s := t.stats
	s.Applied, s.Skipped, s.LossScale = t.sc.applied, t.sc.skipped, t.sc.scale
	ss := t.ses.Stats()
	s.BytesIn = ss.BytesIn - t.base.BytesIn
	s.BytesOut = ss.BytesOut - t.base.BytesOut - t.extraOut
	return s
}

// evalProgram compiles the evaluation network on first use.
func (t *Trainer) evalProg() (*evalProgram, error) {
	if t.eval != nil {
		return t.eval, nil
	}
	g := dataflow.New()
	x, out := t.cfg.Network(g, t.cfg.EvalBatch)
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("train: building the evaluation network: %w", err)
	}
	g.Output("logits", out)
	exe, _, err := shim.BuildReported(t.dev, g)
	if err != nil {
		return nil, fmt.Errorf("train: compiling the evaluation network: %w", err)
	}
	ses, err := shim.NewSession(exe)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	t.eval = &evalProgram{ses: ses, batch: t.cfg.EvalBatch, x: g.Node(x).Name}
	return t.eval, nil
}

// Predict returns the network's outputs for the rows of x (row-major in
// the input's per-example shape), computed on the device in batches of
// the evaluation size with the current weights.
func (t *Trainer) Predict(x []float64) ([]float64, error) {
	if err := t.open(); err != nil {
		return nil, err
	}
	ep, err := t.evalProg()
	if err != nil {
		return nil, err
	}
	if t.evalStale {
		for _, p := range t.st.params {
			h := make([]uint16, p.shape.Size())
			before := t.ses.Stats().BytesOut
			if err := t.ses.ReadHalf(p.name, h); err != nil {
				return nil, fmt.Errorf("train: %w", errors.Join(ErrDevice, err))
			}
			t.extraOut += t.ses.Stats().BytesOut - before
			if err := ep.ses.WriteHalf(p.name, h); err != nil {
				return nil, fmt.Errorf("train: %w", errors.Join(ErrDevice, err))
			}
		}
		t.evalStale = false
	}
	return predict(x, t.st.xShape, t.st.outShape, ep.batch, func(xb, yb []float64) error {
		if err := ep.ses.Write64(ep.x, xb, 0); err != nil {
			return fmt.Errorf("train: %w", errors.Join(ErrBatch, err))
		}
		if err := ep.ses.Run(); err != nil {
			return fmt.Errorf("train: %w", errors.Join(ErrDevice, err))
		}
		if err := ep.ses.Read64("logits", yb, 0); err != nil {
			return fmt.Errorf("train: %w", errors.Join(ErrOverflow, err))
		}
		return nil
	})
}

// predict runs f over x in batches of n examples, the last one padded
// with zeros, and gathers the outputs.
func predict(x []float64, xShape, outShape dataflow.Shape, n int, f func(xb, yb []float64) error) ([]float64, error) {
	per := xShape.Size() / xShape[0]
	outPer := outShape.Size() / outShape[0]
	if len(x)%per != 0 {
		return nil, fmt.Errorf("train: %d input values are not whole examples of %d: %w", len(x), per, ErrBatch)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("train: input element %d is %g: %w", i, v, ErrBatch)
		}
	}
	count := len(x) / per
	out := make([]float64, count*outPer)
	xb := make([]float64, n*per)
	yb := make([]float64, n*outPer)
	for at := 0; at < count; at += n {
		k := min(n, count-at)
		clear(xb)
		copy(xb, x[at*per:(at+k)*per])
		if err := f(xb, yb); err != nil {
			return nil, err
		}
		copy(out[at*outPer:], yb[:k*outPer])
	}
	return out, nil
}

// Metrics are a classifier's figures on a data set.
type Metrics struct {
	Loss, Accuracy float64 // mean cross-entropy (float64, from the outputs) and the fraction right
	Predicted      []int   // the argmax of every example's output
}

// Evaluate classifies the rows of x on the device and scores them
// against labels.
func (t *Trainer) Evaluate(x []float64, labels []int) (Metrics, error) {
	z, err := t.Predict(x)
	if err != nil {
		return Metrics{}, err
	}
	return score(z, labels)
}

// score is the mean cross-entropy and the accuracy of logits z.
func score(z []float64, labels []int) (Metrics, error) {
	if len(labels) == 0 || len(z)%len(labels) != 0 {
		return Metrics{}, fmt.Errorf("train: %d outputs for %d labels: %w", len(z), len(labels), ErrBatch)
	}
	c := len(z) / len(labels)
	m := Metrics{Predicted: make([]int, len(labels))}
	right := 0
	for i, l := range labels {
		row := z[i*c : (i+1)*c]
		best, mx := 0, math.Inf(-1)
		for j, v := range row {
			if v > mx {
				best, mx = j, v
			}
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		if l < 0 || l >= c {
			return Metrics{}, fmt.Errorf("train: label %d of example %d outside [0, %d): %w", l, i, c, ErrBatch)
		}
		m.Loss += math.Log(sum) - (row[l] - mx)
		m.Predicted[i] = best
		if best == l {
			right++
		}
	}
	m.Loss /= float64(len(labels))
	m.Accuracy = float64(right) / float64(len(labels))
	return m, nil
}

// Weights returns the current parameters in float64 (hi + lo·2⁻¹⁰ for a
// compensated weight), read from the device.
func (t *Trainer) Weights() (nn.Weights, error) {
	ck, err := t.Checkpoint()
	if err != nil {
		return nil, err
	}
	out := nn.Weights{}
	for _, p := range t.st.params {
		out.Add(ck[p.name])
	}
	return out, nil
}

// Checkpoint returns the parameters (F64, as Weights) and the whole
// optimizer state (F16 tensors named "train.<param>.hi", ".lo", ".m", …
// and "train.scaler"), read from the device; a Config whose Weights is a
// checkpoint resumes exactly where this one stands.
func (t *Trainer) Checkpoint() (nn.Weights, error) {
	if err := t.open(); err != nil {
		return nil, err
	}
	before := t.ses.Stats().BytesOut
	defer func() { t.extraOut += t.ses.Stats().BytesOut - before }()
	read := func(name string, n int) ([]float64, error) {
		h := make([]uint16, n)
		if err := t.ses.ReadHalf(name, h); err != nil {
			return nil, fmt.Errorf("train: %w", errors.Join(ErrDevice, err))
		}
		v := make([]float64, n)
		fp16.DecodeScaled(v, h, 0)
		return v, nil
	}
	return checkpoint(t.st, t.sc, nn.F16, read)
}

// checkpoint gathers the state through read, the halves and the state
// tensors in dtype (F16 on the device, F64 for the reference).
func checkpoint(st *step, sc scaler, dtype nn.DType, read func(name string, n int) ([]float64, error)) (nn.Weights, error) {
	ws := nn.Weights{}
	u := stepUnit(st.update)
	for _, p := range st.params {
		n := p.shape.Size()
		hi, err := read(p.name, n)
		if err != nil {
			return nil, err
		}
		w := append([]float64(nil), hi...)
		ws.Add(nn.Tensor{Name: ckptName(p.name, "hi"), DType: dtype, Shape: p.shape.Clone(), Data: hi})
		if p.lo.Valid() {
			lo, err := read(loName(p.name), n)
			if err != nil {
				return nil, err
			}
			for i := range w {
				w[i] += lo[i] / u
			}
			ws.Add(nn.Tensor{Name: ckptName(p.name, "lo"), DType: dtype, Shape: p.shape.Clone(), Data: lo})
		}
		ws.Add(nn.Tensor{Name: p.name, DType: nn.F64, Shape: p.shape.Clone(), Data: w})
		for _, s := range st.opt.states() {
			v, err := read(stateName(p.name, s), n)
			if err != nil {
				return nil, err
			}
			ws.Add(nn.Tensor{Name: ckptName(p.name, s), DType: dtype, Shape: p.shape.Clone(), Data: v})
		}
	}
	ws.Add(nn.Tensor{Name: "train.scaler", DType: nn.F64, Shape: []int{4},
		Data: []float64{sc.scale, float64(sc.good), float64(sc.applied), float64(sc.skipped)}})
	return ws, nil
}

// Program returns the step's lowered program.
func (t *Trainer) Program() *lower.Program { return t.exe.Program() }

// Close releases the sessions; the programs stay compiled on the device.
// Step, Predict, Evaluate, Weights and Checkpoint after it are errors
// wrapping ErrDevice and shim.ErrClosed.
func (t *Trainer) Close() error {
	t.closed = true
	if t.eval != nil {
		t.eval.ses.Close()
	}
	return t.ses.Close()
}

// ModeledStep is the engine's modeled time of one step on target (the
// step graph lowered for it and priced by lower.Estimate).
func (t *Trainer) ModeledStep(target string) (lower.Cost, error) {
	tg, err := lower.TargetByName(target)
	if err != nil {
		return lower.Cost{}, err
	}
	p, err := lower.Lower(t.st.g, tg)
	if err != nil {
		return lower.Cost{}, err
	}
	return lower.Estimate(p, target)
}

// ModeledCompile is the modeled compile and load of the step's program
// (lower.EstimateCompile), paid once per run.
func (t *Trainer) ModeledCompile() time.Duration {
	return lower.EstimateCompile(t.exe.Program())
}

// open is nil unless the trainer is closed.
func (t *Trainer) open() error {
	if t.closed {
		return fmt.Errorf("train: the trainer is closed: create a new one with New (a Checkpoint taken before Close resumes it): %w", errors.Join(ErrDevice, shim.ErrClosed))
	}
	return nil
}
