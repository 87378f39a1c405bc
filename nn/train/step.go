package train

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/nn"
)

// Network builds a model into g for a batch of the given size and returns
// its data input and its output ([batch, classes]). Every other input it
// declares is a parameter, named as in the trainer's weights.
type Network func(g *dataflow.Graph, batch int) (x, out dataflow.Value)

// Update says how an optimizer's step reaches the weights.
type Update int

const (
	// Compensated keeps each weight as an fp16 pair (hi, lo), w = hi +
	// lo·2⁻¹⁰, updated by Fast2Sum: steps below hi's resolution accumulate.
	Compensated Update = iota
	// PlainFP16 adds the step to the fp16 weight, where a step below half
	// its resolution is lost (the ablation).
	PlainFP16
)

// loExp is the scale of lo: lo holds (w − hi)·2¹⁰, which keeps it in
// fp16's normal range for every |hi| ≥ 2⁻¹³.
const loExp = 10

// Limits of the numerics (see the package doc).
const (
	// Cliff is where a matmul or conv output becomes ±Inf on the engine.
	Cliff = nn.Cliff
	// Headroom bounds every matmul and conv output of an applied step.
	Headroom = nn.Headroom
	// gradClamp bounds the state-unit gradient (a gradient of 16).
	gradClamp = 1 << 14
	// stepLimit bounds an applied optimizer step in its unit (a weight
	// change of 32 for a compensated weight, whose step unit is 2⁻¹⁰):
	// lo + step and hi + step then stay finite.
	stepLimit = 1 << 15
)

// Config describes a training run.
type Config struct {
	Network   Network
	Weights   nn.Weights // the parameters' initial values, by input name (or a Checkpoint)
	Batch     int        // minibatch size
	Loss      Loss
	Optimizer Optimizer
	Update    Update
	// LossScale is the initial loss scale, a power of two; 0 means 2¹⁰.
	LossScale float64
	// EvalBatch is the batch of the evaluation program; 0 means 500.
	EvalBatch int
	// Schedule, if not nil, multiplies the optimizer's learning rate (and
	// its decoupled weight decay, which scales with it) for update t,
	// counted from 1 over the updates applied (a step skipped for
	// overflow does not advance it). It must return a finite factor > 0.
	// The rate is a runtime operand of the step: a schedule compiles
	// nothing.
	Schedule func(t int) float64
}

func (c *Config) check() error {
	switch {
	case c.Network == nil:
		return fmt.Errorf("train: no network: %w", ErrConfig)
	case c.Loss == nil:
		return fmt.Errorf("train: no loss (SoftmaxCrossEntropy or MeanSquaredError): %w", ErrConfig)
	case c.Optimizer == nil:
		return fmt.Errorf("train: no optimizer (Adam or SGD): %w", ErrConfig)
	case c.Batch < 1:
		return fmt.Errorf("train: batch %d, want ≥ 1: %w", c.Batch, ErrConfig)
	case c.EvalBatch < 0:
		return fmt.Errorf("train: eval batch %d, want ≥ 0: %w", c.EvalBatch, ErrConfig)
	case c.Update != Compensated && c.Update != PlainFP16:
		return fmt.Errorf("train: unknown update %d: %w", c.Update, ErrConfig)
	}
	if s := c.LossScale; s != 0 && !validScale(s) {
		return fmt.Errorf("train: loss scale %g, want a power of two in [2⁻⁵, 2¹⁵]: %w", s, ErrConfig)
	}
	if err := c.Optimizer.check(); err != nil {
		return err
	}
	return checkScalars(c.Optimizer.scalars(1, stepUnit(c.Update), 1), 1)
}

// stepUnit is the unit of an optimizer's step: 2¹⁰ for the lo half of a
// compensated weight, 1 for a plain one.
func stepUnit(u Update) float64 {
	if u == Compensated {
		return 1 << loExp
	}
	return 1
}

// param is one trained tensor in the step graph.
type param struct {
	name   string
	shape  dataflow.Shape
	hi, lo dataflow.Value
	state  []dataflow.Value
}

// names of a parameter's inputs and outputs in the step program.
func loName(p string) string         { return "train_" + p + "_lo" }
func stateName(p, s string) string   { return "train_" + p + "_" + s }
func nextName(in string) string      { return in + "_next" }
func ckptName(p, what string) string { return "train." + p + "." + what }
func isTrainEntry(name string) bool  { return strings.HasPrefix(name, "train.") }
func unitFor(u Update) (float64, int) {
	return map[Update]float64{Compensated: 1 << loExp, PlainFP16: 1}[u], loExp
}
func shapesEqual(a []int, b []int) bool { return slices.Equal(a, b) }
func describe(p *param) string          { return fmt.Sprintf("%s %v", p.name, p.shape) }
func (p *param) inputs(o Optimizer) []string {
	names := []string{p.name}
	if p.lo.Valid() {
		names = append(names, loName(p.name))
	}
	for _, s := range o.states() {
		names = append(names, stateName(p.name, s))
	}
	return names
}

// stepBuilder holds what the optimizer needs while the step is built.
type stepBuilder struct {
	g       *dataflow.Graph
	ok      dataflow.Value // 1 if the step is applied, 0 if not
	scalars map[string]dataflow.Value
	order   []string
}

// scalar is a [1] input written by the host every step.
func (b *stepBuilder) scalar(name string) dataflow.Value {
	if v, ok := b.scalars[name]; ok {
		return v
	}
	v := b.g.Input(name, dataflow.Shape{1})
	b.scalars[name] = v
	b.order = append(b.order, name)
	return v
}

// step is a built training step: the graph and the names the host uses.
type step struct {
	g        *dataflow.Graph
	x, t     string
	xShape   dataflow.Shape
	outShape dataflow.Shape
	params   []*param
	scalars  []string
	carries  [][2]string // output → input
	update   Update
	opt      Optimizer
	sched    func(t int) float64
	// gated: the program gates every optimizer step on its size (see
	// buildStep) and its monitor has a third value, the largest step.
	gated bool
	// bound is the optimizer's stepBound at the configured rate (factor
	// 1); it scales with the schedule's factor.
	bound float64
	// crossEntropy is set when the loss is SoftmaxCrossEntropy, whose
	// targets checkBatch checks are distributions.
	crossEntropy bool
}

const (
	outLoss    = "train_loss"
	outMonitor = "train_monitor"
	inTarget   = "train_target"
	inScale    = "train_loss_scale"
	inUnit     = "train_grad_unit"
)

// saturate clamps v to ±Cliff: the identity on every finite contraction
// output, ±Inf to ±Cliff.
func saturate(g *dataflow.Graph, v dataflow.Value) dataflow.Value {
	return g.Minimum(g.Maximum(v, g.Scalar(-Cliff)), g.Scalar(Cliff))
}

// buildStep builds the one-dispatch training step of c.
func buildStep(c *Config) (*step, error) {
	g := dataflow.New()
	x, out := c.Network(g, c.Batch)
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("train: building the network: %w", err)
	}
	if !x.Valid() || !out.Valid() {
		return nil, fmt.Errorf("train: the network returned a zero Value: %w", ErrConfig)
	}
	xn := g.Node(x)
	if xn.Op != dataflow.OpInput {
		return nil, fmt.Errorf("train: the network's data value is a %s, want an input: %w", xn.Op, ErrConfig)
	}
	s := &step{g: g, x: xn.Name, xShape: x.Shape(), outShape: out.Shape(), update: c.Update, opt: c.Optimizer, sched: c.Schedule,
		crossEntropy: reflect.ValueOf(c.Loss).Pointer() == reflect.ValueOf(Loss(SoftmaxCrossEntropy)).Pointer()}
	// Every other input is a parameter with a weight, and every weight an
	// input.
	for _, id := range g.Inputs() {
		n := g.Nodes()[id]
		if id == x.ID() {
			continue
		}
		w, ok := c.Weights[n.Name]
		if !ok {
			return nil, fmt.Errorf("train: the network's input %q %v has no weight (weights: %s): %w", n.Name, n.Shape, weightNames(c.Weights), ErrParam)
		}
		if !slices.Equal(w.Shape, []int(n.Shape)) || len(w.Data) != n.Shape.Size() {
			return nil, fmt.Errorf("train: weight %q has shape %v (%d values), the network's input %v: %w", n.Name, w.Shape, len(w.Data), n.Shape, ErrParam)
		}
		v, _ := g.ValueOf(id)
		s.params = append(s.params, &param{name: n.Name, shape: n.Shape.Clone(), hi: v})
	}
	for name := range c.Weights {
		if isTrainEntry(name) {
			continue
		}
		if v, ok := g.Lookup(name); !ok || g.Node(v).Op != dataflow.OpInput || v.ID() == x.ID() {
			return nil, fmt.Errorf("train: weight %q is not a parameter of the network (its parameters: %s): %w", name, paramNames(s.params), ErrParam)
		}
	}
	if len(s.params) == 0 {
		return nil, fmt.Errorf("train: the network has no parameters: %w", ErrParam)
	}
	target := g.Input(inTarget, out.Shape())
	s.t = inTarget
	loss := c.Loss(g, out, target)
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("train: building the loss: %w", err)
	}
	if loss.Shape().Size() != 1 {
		return nil, fmt.Errorf("train: the loss has shape %v, want one element: %w", loss.Shape(), ErrConfig)
	}
	b := &stepBuilder{g: g, scalars: map[string]dataflow.Value{}}
	scale := b.scalar(inScale)
	first := g.NumNodes()
	his := make([]dataflow.Value, len(s.params))
	for i, p := range s.params {
		his[i] = p.hi
	}
	grads := g.GradWith(dataflow.GradOptions{Saturate: Cliff}, g.Mul(loss, scale), his...)
	last := g.NumNodes()
	// The monitor: the largest magnitude of every contraction output,
	// forward (before first) and backward.
	var mf, mb dataflow.Value
	for id := range last {
		n := g.Nodes()[id]
		if n.Op != dataflow.OpMatMul && n.Op != dataflow.OpConv2D {
			continue
		}
		v, _ := g.ValueOf(id)
		m := g.ReduceMax(g.Abs(v), nil, false)
		acc := &mb
		if id < first {
			acc = &mf
		}
		if acc.Valid() {
			*acc = g.Maximum(*acc, m)
		} else {
			*acc = m
		}
	}
	if !mf.Valid() {
		mf = g.Scalar(0)
	}
	if !mb.Valid() {
		mb = g.Scalar(0)
	}
	// ok = min(relu(2¹⁴ − max), 1): 1 below the headroom, 0 at or above
	// it and for ±Inf (exact on fp16 values, whose spacing there is 16).
	b.ok = g.Minimum(g.Relu(g.Sub(g.Scalar(Headroom), g.Maximum(mf, mb))), g.Scalar(1))
	unit := b.scalar(inUnit)
	u := stepUnit(c.Update)
	// The step gate is built only where the optimizer's bound on a step
	// (stepBound, at the configured rate) does not keep it below half of
	// stepLimit: then no gradient can make a step overflow, and a
	// schedule that raises the rate past that is refused on the host
	// (checkStep). The gate reads every step (an abs and a reduction per
	// parameter) and blends every state: about a fifth of an MLP step's
	// modeled engine time.
	s.bound = c.Optimizer.stepBound(u, 1)
	s.gated = !(2*s.bound < stepLimit)
	deltas := make([]dataflow.Value, len(s.params))
	nexts := make([][]dataflow.Value, len(s.params))
	var ms dataflow.Value // the largest |step|, in its unit
	for i, p := range s.params {
		if c.Update == Compensated {
			p.lo = g.Input(loName(p.name), p.shape)
		}
		for _, st := range c.Optimizer.states() {
			p.state = append(p.state, g.Input(stateName(p.name, st), p.shape))
		}
		gk := g.Minimum(g.Maximum(g.Mul(grads[i], unit), g.Scalar(-gradClamp)), g.Scalar(gradClamp))
		deltas[i], nexts[i] = c.Optimizer.build(b, p, gk)
		if !s.gated {
			continue
		}
		m := g.ReduceMax(g.Abs(deltas[i]), nil, false)
		if ms.Valid() {
			ms = g.Maximum(ms, m)
		} else {
			ms = m
		}
	}
	// The step gate: okU = 1 when every step is below stepLimit in its
	// unit, 0 when one is not or is ±Inf (a learning rate times a
	// gradient beyond fp16: added to lo or hi it would make them ±Inf and
	// NaN). Each gated value is clamp(v)·okU (+ its old value·(1 − okU)):
	// exact for okU = 1 (the clamp is then the identity) and for okU = 0,
	// and never 0·Inf.
	okAll, okU, notU := b.ok, dataflow.Value{}, dataflow.Value{}
	if s.gated {
		okU = g.Minimum(g.Relu(g.Sub(g.Scalar(stepLimit), ms)), g.Scalar(1))
		okAll = g.Mul(b.ok, okU)
		notU = g.Sub(g.Scalar(1), okU)
	}
	for i, p := range s.params {
		delta := deltas[i]
		if s.gated {
			delta = g.Mul(g.Minimum(g.Maximum(delta, g.Scalar(-stepLimit)), g.Scalar(stepLimit)), okU)
		}
		var hiN dataflow.Value
		if c.Update == Compensated {
			// Fast2Sum of hi and b = lo + step (in units of 2⁻¹⁰): s = hi +
			// b, z = s − hi (exact), hi' = hi + z, lo' = (lo + step) − z·2¹⁰.
			// z is gated too: b's rounding (it may be subnormal) can tip s
			// to the next fp16 even for a zero step, and a skipped step
			// must leave every bit as it was.
			bs := g.Add(p.lo, delta)
			sum := g.Add(p.hi, g.Mul(bs, g.Scalar(1/u)))
			z := g.Mul(g.Sub(sum, p.hi), okAll)
			loN := g.Sub(bs, g.Mul(z, g.Scalar(u)))
			hiN = g.Add(p.hi, z)
			g.Output(nextName(loName(p.name)), loN)
			s.carries = append(s.carries, [2]string{nextName(loName(p.name)), loName(p.name)})
		} else {
			hiN = g.Add(p.hi, delta)
		}
		g.Output(nextName(p.name), hiN)
		s.carries = append(s.carries, [2]string{nextName(p.name), p.name})
		for j, st := range c.Optimizer.states() {
			in := stateName(p.name, st)
			nx := nexts[i][j]
			if s.gated {
				nx = g.Minimum(g.Maximum(nx, g.Scalar(-fp16.MaxValue)), g.Scalar(fp16.MaxValue))
				nx = g.Add(g.Mul(nx, okU), g.Mul(p.state[j], notU))
			}
			g.Output(nextName(in), nx)
			s.carries = append(s.carries, [2]string{nextName(in), in})
		}
	}
	g.Output(outLoss, g.Reshape(loss, dataflow.Shape{1}))
	monitor := g.Concat(0, g.Reshape(mf, dataflow.Shape{1}), g.Reshape(mb, dataflow.Shape{1}))
	if s.gated {
		monitor = g.Concat(0, monitor, g.Reshape(ms, dataflow.Shape{1}))
	}
	g.Output(outMonitor, monitor)
	// Force the optimizer's scalars into existence in a fixed order.
	for name := range c.Optimizer.scalars(1, u, 1) {
		b.scalar(name)
	}
	s.scalars = b.order
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("train: building the step: %w", err)
	}
	return s, nil
}

// hostScalars are the step's scalar inputs for update number t.
func (s *step) hostScalars(t int, scale float64) (map[string]float64, error) {
	f := 1.0
	if s.sched != nil {
		if f = s.sched(t); !(f > 0) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("train: Schedule(%d) = %g, want a finite factor > 0: %w", t, f, ErrConfig)
		}
	}
	u := stepUnit(s.update)
	if !s.gated && !(2*f*s.bound < stepLimit) { // stepBound is linear in f
		return nil, fmt.Errorf("train: Schedule(%d) = %g raises the learning rate to where one optimizer step could reach 2¹⁵ in its unit (a change of 32 for a compensated weight), which the step program, built for the rate at factor 1, does not gate: lower the learning rate or the schedule's factor: %w", t, f, ErrConfig)
	}
	m := s.opt.scalars(t, u, f)
	if err := checkScalars(m, f); err != nil {
		return nil, err
	}
	m[inScale] = scale
	m[inUnit] = gradUnit / scale
	return m, nil
}

// checkScalars refuses optimizer scalars that fp16 cannot carry: beyond
// its range, or nonzero and below its normal range (2⁻¹⁴; 2⁻²⁸ for a
// rate split by its power of two, see rateExp), which the engine may
// flush to zero so that the updates are silently lost. f is the
// schedule's factor, for the message.
func checkScalars(m map[string]float64, f float64) error {
	// It runs every step, so it allocates nothing; of several factors out
	// of range it reports the least name, the same one every run.
	bad, badV, badLo := "", 0.0, 0.0
	for name, v := range m {
		if strings.HasSuffix(name, rateExp) {
			continue
		}
		lo := 0x1p-14
		if p, ok := m[name+rateExp]; ok {
			v, lo = v*p, 0x1p-28
		}
		if a := math.Abs(v); a != 0 && !(a >= lo && a <= fp16.MaxValue) && (bad == "" || name < bad) {
			bad, badV, badLo = name, v, lo
		}
	}
	if bad != "" {
		return fmt.Errorf("train: the optimizer's device factor %s is %g (the learning rate times the schedule's factor %g and the step unit), outside [%g, %g], what fp16 carries: the updates would be lost or overflow: choose a larger (or smaller) learning rate or weight decay, or Compensated updates for small ones: %w", bad, badV, f, badLo, fp16.MaxValue, ErrConfig)
	}
	return nil
}

func weightNames(ws nn.Weights) string {
	var names []string
	for n := range ws {
		if !isTrainEntry(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

func paramNames(ps []*param) string {
	var names []string
	for _, p := range ps {
		names = append(names, describe(p))
	}
	return strings.Join(names, ", ")
}

// scaler is the dynamic loss scale, shared by the device and the reference.
type scaler struct {
	scale   float64
	good    int // applied steps since the last change
	applied int // updates applied (Adam's t)
	skipped int
}

const (
	growAfter = 50 // applied steps with room to spare before the scale doubles
	// The scale and 2¹⁰/scale are fp16 inputs: both stay within fp16's
	// powers of two.
	maxScale = 1 << 15
	minScale = 0x1p-5
)

// validScale reports whether s is a loss scale the scaler takes: a power
// of two in [minScale, maxScale].
func validScale(s float64) bool {
	_, e := math.Frexp(s)
	return s >= minScale && s <= maxScale && math.Ldexp(1, e-1) == s
}

// monitorLen is the number of values in the step's monitor output.
func (s *step) monitorLen() int {
	if s.gated {
		return 3
	}
	return 2
}

// observe takes a step's monitor (forward and backward maxima, and the
// largest optimizer step in its unit, as the device computed them) and
// says whether the device applied the step, exactly as its gates did:
// both maxima below Headroom and the step below stepLimit.
func (s *scaler) observe(mf, mb, ms float64) (applied bool, err error) {
	if !(mf < Headroom) {
		s.skipped++
		return false, fmt.Errorf("train: a forward matmul or conv output reached %g, at or beyond 2¹⁴ (the engine's cliff is 32752); the step was skipped: lower the learning rate or scale the inputs: %w", mf, ErrOverflow)
	}
	if !(mb < Headroom) {
		s.skipped++
		s.good = 0
		s.scale = math.Max(s.scale/2, minScale)
		return false, nil
	}
	if !(ms < stepLimit) {
		s.skipped++
		return false, fmt.Errorf("train: an optimizer step reached %g in its unit, at or beyond 2¹⁵ (for a compensated weight, a change of 32 or more in one update), which fp16 cannot add to the weights; the step was skipped and nothing changed: lower the learning rate: %w", ms, ErrOverflow)
	}
	s.applied++
	s.good++
	// Double when the backward maxima leave 4× room after doubling.
	if s.good >= growAfter && 2*mb <= Headroom/4 && s.scale < maxScale {
		s.scale *= 2
		s.good = 0
	}
	return true, nil
}
