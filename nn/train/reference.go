package train

import (
	"fmt"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
)

// Reference is the float64 twin of a Trainer: the same step graph
// (forward, Grad, update, gate and loss-scale control) evaluated by
// dataflow.Eval on the host, its outputs carried to its inputs as the
// device's are.
type Reference struct {
	cfg   Config
	st    *step
	state map[string][]float64
	sc    scaler
	evalG *dataflow.Graph
	evalX string
	// StepTime is the measured host time of all steps so far.
	StepTime time.Duration
	steps    int
}

// NewReference builds c's step for float64 evaluation.
func NewReference(c Config) (*Reference, error) {
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
	state, sc, err := initialState(&c, st, true)
	if err != nil {
		return nil, err
	}
	return &Reference{cfg: c, st: st, state: state, sc: sc}, nil
}

// Step runs one training step in float64 and returns the loss, as
// Trainer.Step.
func (r *Reference) Step(b Batch) (float64, error) {
	if err := r.st.checkBatch(b); err != nil {
		return 0, err
	}
	start := time.Now()
	in := make(map[string][]float64, len(r.state)+8)
	for k, v := range r.state {
		in[k] = v
	}
	in[r.st.x], in[r.st.t] = b.X, b.Y
	scalars, err := r.st.hostScalars(r.sc.applied+1, r.sc.scale)
	if err != nil {
		return 0, err
	}
	for name, v := range scalars {
		in[name] = []float64{v}
	}
	out, err := dataflow.Eval(r.st.g, in)
	if err != nil {
		return 0, fmt.Errorf("train: reference: %w", err)
	}
	for _, cp := range r.st.carries {
		r.state[cp[1]] = out[cp[0]]
	}
	mon := append(out[outMonitor], 0) // the step maximum is 0 when ungated
	_, err = r.sc.observe(mon[0], mon[1], mon[2])
	r.StepTime += time.Since(start)
	r.steps++
	return out[outLoss][0], err
}

// Steps is the number of steps run.
func (r *Reference) Steps() int { return r.steps }

// Predict returns the network's outputs for the rows of x in float64.
func (r *Reference) Predict(x []float64) ([]float64, error) {
	if r.evalG == nil {
		g := dataflow.New()
		xv, out := r.cfg.Network(g, r.cfg.EvalBatch)
		g.Output("logits", out)
		if err := g.Err(); err != nil {
			return nil, fmt.Errorf("train: reference: building the evaluation network: %w", err)
		}
		r.evalG, r.evalX = g, g.Node(xv).Name
	}
	return predict(x, r.st.xShape, r.st.outShape, r.cfg.EvalBatch, func(xb, yb []float64) error {
		in := map[string][]float64{r.evalX: xb}
		for _, p := range r.st.params {
			in[p.name] = r.master(p)
		}
		out, err := dataflow.Eval(r.evalG, in)
		if err != nil {
			return fmt.Errorf("train: reference: %w", err)
		}
		copy(yb, out["logits"])
		return nil
	})
}

// master is p's float64 weight, hi + lo·2⁻¹⁰.
func (r *Reference) master(p *param) []float64 {
	hi := r.state[p.name]
	if !p.lo.Valid() {
		return hi
	}
	u := stepUnit(r.st.update)
	w := make([]float64, len(hi))
	for i := range w {
		w[i] = hi[i] + r.state[loName(p.name)][i]/u
	}
	return w
}

// Evaluate classifies the rows of x in float64 and scores them.
func (r *Reference) Evaluate(x []float64, labels []int) (Metrics, error) {
	z, err := r.Predict(x)
	if err != nil {
		return Metrics{}, err
	}
	return score(z, labels)
}

// Checkpoint returns the parameters and the optimizer state (F64).
func (r *Reference) Checkpoint() (nn.Weights, error) {
	return checkpoint(r.st, r.sc, nn.F64, func(name string, n int) ([]float64, error) {
		return append([]float64(nil), r.state[name]...), nil
	})
}

// Weights returns the current parameters.
func (r *Reference) Weights() (nn.Weights, error) {
	ck, err := r.Checkpoint()
	if err != nil {
		return nil, err
	}
	out := nn.Weights{}
	for _, p := range r.st.params {
		out.Add(ck[p.name])
	}
	return out, nil
}

// LossScale is the current loss scale.
func (r *Reference) LossScale() float64 { return r.sc.scale }
