package train

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
)

// gradUnit is the fixed unit of the optimizer state: the state holds
// gradients times 2¹⁰ whatever the loss scale, so that a change of scale
// leaves it consistent and its small entries stay in fp16's normal range.
const gradUnit = 1 << 10

// Optimizer is SGD or Adam: it adds one parameter's update to the step
// graph, its state as graph inputs carried from outputs.
type Optimizer interface {
	check() error
	// states names the per-parameter state tensors.
	states() []string
	// build returns the gated step of p (in units of b.unit: the weight
	// moves by step·2^−unitExp) and the next value of each state.
	build(b *stepBuilder, p *param, gk dataflow.Value) (step dataflow.Value, next []dataflow.Value)
	// scalars are the host's values of the optimizer's scalar inputs for
	// update number t (1-based), the step unit being u and the learning
	// rate LR·f.
	scalars(t int, u, f float64) map[string]float64
	// stepBound bounds |step| in its unit u for the learning rate LR·f,
	// over every step number, every gradient the step admits (|gk| ≤
	// gradClamp in the state's unit) and every weight (|w| ≤ 65504): +Inf
	// where there is no such bound, or where the optimizer's state could
	// itself leave fp16's range.
	stepBound(u, f float64) float64
}

// SGD is stochastic gradient descent with momentum: buf ← μ·buf + g,
// w ← w − LR·buf − LR·WeightDecay·w (decoupled decay).
type SGD struct {
	LR, Momentum, WeightDecay float64
}

func (o SGD) check() error {
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		return fmt.Errorf("train: SGD: learning rate %g, want > 0 and finite: %w", o.LR, ErrConfig)
	}
	if !(o.Momentum >= 0 && o.Momentum < 1) {
		return fmt.Errorf("train: SGD: momentum %g, want in [0, 1): %w", o.Momentum, ErrConfig)
	}
	if !(o.WeightDecay >= 0) || math.IsInf(o.WeightDecay, 0) {
		return fmt.Errorf("train: SGD: weight decay %g, want ≥ 0 and finite: %w", o.WeightDecay, ErrConfig)
	}
	return nil
}

func (o SGD) states() []string {
	if o.Momentum == 0 {
		return nil
	}
	return []string{"mom"}
}

func (o SGD) build(b *stepBuilder, p *param, gk dataflow.Value) (dataflow.Value, []dataflow.Value) {
	g := b.g
	dir := gk
	var next []dataflow.Value
	if o.Momentum > 0 {
		buf := p.state[0]
		// buf + ok·((μ−1)·buf + g)
		nb := g.Add(buf, g.Mul(b.ok, g.Add(g.Mul(buf, g.Scalar(o.Momentum-1)), gk)))
		next = append(next, nb)
		dir = nb
	}
	step := b.rate(dir, "train_sgd_lr")
	if o.WeightDecay > 0 {
		step = g.Add(step, b.rate(p.hi, "train_sgd_wd"))
	}
	return step, next
}

func (o SGD) scalars(_ int, u, f float64) map[string]float64 {
	lr := o.LR * f
	m := map[string]float64{}
	splitRate(m, "train_sgd_lr", -lr*u/gradUnit)
	if o.WeightDecay > 0 {
		splitRate(m, "train_sgd_wd", -lr*o.WeightDecay*u)
	}
	return m
}

func (o SGD) stepBound(u, f float64) float64 {
	d := float64(gradClamp) // |buf| ≤ gradClamp/(1 − μ) by induction
	if o.Momentum > 0 {
		if d /= 1 - o.Momentum; d > fp16.MaxValue {
			return math.Inf(1)
		}
	}
	lr := o.LR * f
	return lr*u/gradUnit*d + lr*o.WeightDecay*u*fp16.MaxValue
}

// Adam is Adam (AdamW when WeightDecay > 0: decoupled decay w ← w −
// LR·WeightDecay·w). Zero Beta1, Beta2 and Epsilon mean 0.9, 0.999 and
// 1e-8. On the device the second moment is kept as r = √v, updated as
// r ← s·√(β₂(r/s)² + (1−β₂)(g/s)²) with s = max(r, |g|), so neither g²
// nor v is ever formed; the bias corrections fold into the per-step
// learning rate and ε the host writes. ε is floored at 2⁻²⁴/√(1−β₂ᵗ) in
// gradient units (fp16's smallest normal, 2⁻¹⁴, in the state's unit
// 2¹⁰): a gradient far below that moves its weight less than textbook
// Adam's full step, and one that is exactly zero not at all.
type Adam struct {
	LR, Beta1, Beta2, Epsilon, WeightDecay float64
}

func (o Adam) params() (b1, b2, eps float64) {
	b1, b2, eps = o.Beta1, o.Beta2, o.Epsilon
	if b1 == 0 {
		b1 = 0.9
	}
	if b2 == 0 {
		b2 = 0.999
	}
	if eps == 0 {
		eps = 1e-8
	}
	return
}

func (o Adam) check() error {
	if !(o.LR > 0) || math.IsInf(o.LR, 0) {
		return fmt.Errorf("train: Adam: learning rate %g, want > 0 and finite: %w", o.LR, ErrConfig)
	}
	b1, b2, eps := o.params()
	if !(b1 > 0 && b1 < 1) || !(b2 > 0 && b2 < 1) {
		return fmt.Errorf("train: Adam: β₁ = %g, β₂ = %g, want each in (0, 1) (0 means the default): %w", b1, b2, ErrConfig)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("train: Adam: ε = %g, want > 0 and finite: %w", eps, ErrConfig)
	}
	if !(o.WeightDecay >= 0) || math.IsInf(o.WeightDecay, 0) {
		return fmt.Errorf("train: Adam: weight decay %g, want ≥ 0 and finite: %w", o.WeightDecay, ErrConfig)
	}
	return nil
}

func (o Adam) states() []string { return []string{"m", "r"} }

func (o Adam) build(b *stepBuilder, p *param, gk dataflow.Value) (dataflow.Value, []dataflow.Value) {
	g := b.g
	b1, b2, _ := o.params()
	m, r := p.state[0], p.state[1]
	mN := g.Add(m, g.Mul(g.Sub(gk, m), g.Mul(b.ok, g.Scalar(1-b1))))
	s := g.Maximum(g.Maximum(r, g.Abs(gk)), g.Scalar(0x1p-14))
	rs, gs := g.Div(r, s), g.Div(gk, s)
	q := g.Add(g.Mul(g.Square(rs), g.Scalar(b2)), g.Mul(g.Square(gs), g.Scalar(1-b2)))
	rC := g.Mul(s, g.Sqrt(q))
	rN := g.Add(r, g.Mul(g.Sub(rC, r), b.ok))
	step := b.rate(g.Div(mN, g.Add(rN, b.scalar("train_adam_eps"))), "train_adam_lr")
	if o.WeightDecay > 0 {
		step = g.Add(step, b.rate(p.hi, "train_adam_wd"))
	}
	return step, []dataflow.Value{mN, rN}
}

func (o Adam) scalars(t int, u, f float64) map[string]float64 {
	b1, b2, eps := o.params()
	c2 := math.Sqrt(1 - math.Pow(b2, float64(t)))
	lr := o.LR * f
	lrT := lr * c2 / (1 - math.Pow(b1, float64(t)))
	m := map[string]float64{
		// ε in the state's unit; fp16's smallest normal keeps m/(r+ε)
		// finite where a gradient has always been zero.
		"train_adam_eps": math.Max(eps*gradUnit*c2, 0x1p-14),
	}
	splitRate(m, "train_adam_lr", -lrT*u)
	if o.WeightDecay > 0 {
		splitRate(m, "train_adam_wd", -lr*o.WeightDecay*u)
	}
	return m
}

// stepBound for Adam: from m₀ = r₀ = 0, |m_t| ≤ (1−β₁)·Σ β₁^(t−i)·|g_i|
// and r_t ≥ √(1−β₂)·β₂^((t−i)/2)·|g_i| for every i, so |m_t|/r_t ≤
// (1−β₁)/(√(1−β₂)·(1 − β₁/√β₂)) when β₁ < √β₂ (31.8 for the defaults),
// whatever the gradients; twice that covers the states' fp16 rounding
// over the ~1/(1 − β₁/√β₂) steps the sum weighs. The bias-corrected rate
// is at most LR·f·sup_t √(1−β₂ᵗ)/(1−β₁ᵗ) (adamRateMax).
func (o Adam) stepBound(u, f float64) float64 {
	b1, b2, _ := o.params()
	if !(b1 < math.Sqrt(b2)) {
		return math.Inf(1)
	}
	ratio := 2 * (1 - b1) / (math.Sqrt(1-b2) * (1 - b1/math.Sqrt(b2)))
	lr := o.LR * f
	return lr*adamRateMax(b1, b2)*u*ratio + lr*o.WeightDecay*u*fp16.MaxValue
}

// adamRateMax is sup over t ≥ 1 of √(1−β₂ᵗ)/(1−β₁ᵗ): the maximum over the
// first 10⁵ steps, and beyond them 1/(1−β₁^(10⁵)), which bounds every
// later term (√(1−β₂ᵗ) ≤ 1, and 1/(1−β₁ᵗ) decreases).
func adamRateMax(b1, b2 float64) float64 {
	const steps = 100000
	best, p1, p2 := 0.0, 1.0, 1.0
	for range steps {
		p1 *= b1
		p2 *= b2
		best = math.Max(best, math.Sqrt(1-p2)/(1-p1))
	}
	return math.Max(best, 1/(1-p1))
}

// rateExp suffixes the name of the power of two that carries a rate's
// exponent. A rate (a learning rate or a decay, times the step unit) of
// 1e-5 is subnormal in fp16, which an engine may flush to zero — every
// update lost without a sign — so the host writes it as a·2^−k, a and
// 2^−k both normal (k ≤ 14), and the device multiplies by a, then by
// 2^−k: exact unless the step itself is subnormal, and for k = 0 the
// single product it always was.
const rateExp = "_exp"

// rate is v times the host's rate name (split as rateExp says), gated by
// b.ok.
func (b *stepBuilder) rate(v dataflow.Value, name string) dataflow.Value {
	g := b.g
	return g.Mul(g.Mul(v, g.Mul(b.scalar(name), b.ok)), b.scalar(name+rateExp))
}

// splitRate stores v as m[name]·m[name+rateExp], the second the power of
// two 2^−k with k ∈ [0, 14] the least that makes |m[name]| ≥ 2⁻¹⁴.
func splitRate(m map[string]float64, name string, v float64) {
	k := 0
	for v != 0 && math.Abs(math.Ldexp(v, k)) < 0x1p-14 && k < 14 {
		k++
	}
	m[name], m[name+rateExp] = math.Ldexp(v, k), math.Ldexp(1, -k)
}
