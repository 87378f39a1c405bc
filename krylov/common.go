package krylov

import (
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// checkVectors validates a solve's operator, b and X0.
func checkVectors(solver string, a Operator, b []float64, s Settings) error {
	if a == nil {
		return fmt.Errorf("krylov: %s: nil operator: %w", solver, ErrShape)
	}
	n := a.Dims()
	if len(b) != n {
		return fmt.Errorf("krylov: b has length %d, operator has %d: %w", len(b), n, ErrShape)
	}
	if s.X0 != nil && len(s.X0) != n {
		return fmt.Errorf("krylov: X0 has length %d, operator has %d: %w", len(s.X0), n, ErrShape)
	}
	if i, v, bad := firstNonFinite(b); bad {
		return fmt.Errorf("krylov: b[%d] is %g: %w", i, v, ErrInput)
	}
	if i, v, bad := firstNonFinite(s.X0); bad {
		return fmt.Errorf("krylov: X0[%d] is %g: %w", i, v, ErrInput)
	}
	return nil
}

// checkCommon validates what every solver takes besides the vectors: the
// operator, Tol, MaxDispatches and Precision. Settings one solver alone
// uses are checked by that solver, and ignored by the others.
func checkCommon(solver string, a Operator, s Settings) error {
	if a == nil {
		return fmt.Errorf("krylov: %s: nil operator: %w", solver, ErrShape)
	}
	if n := a.Dims(); n <= 0 {
		return fmt.Errorf("krylov: %s: operator has dimension %d, want at least 1: %w", solver, n, ErrShape)
	}
	if s.Tol < 0 || math.IsNaN(s.Tol) {
		return fmt.Errorf("krylov: Tol %g must be positive (or zero for the default %g): %w", s.Tol, DefaultTol, ErrInput)
	}
	if s.MaxDispatches < 0 {
		return fmt.Errorf("krylov: MaxDispatches %d must not be negative (zero means the default, max(%d, ⌈√n⌉) for n unknowns): %w", s.MaxDispatches, DefaultMaxDispatches, ErrInput)
	}
	if _, err := isCompensated(s.Precision); err != nil {
		return err
	}
	return nil
}

// isCompensated maps a precision mode to the solvers' two modes.
func isCompensated(m precision.Mode) (bool, error) {
	switch m {
	case precision.FP16:
		return false, nil
	case precision.Compensated, precision.Float64:
		return true, nil
	}
	return false, fmt.Errorf("krylov: unknown precision mode %v (use precision.FP16 or precision.Compensated): %w", m, ErrInput)
}

// checkNorm returns ‖A‖∞ from the operator, refusing a value the solvers
// cannot scale by: NaN, ±Inf (an overflowing row sum), negative or
// subnormal. Zero is returned as it is; each solver says what a zero
// operator means for it.
func checkNorm(solver string, a Operator) (float64, error) {
	v := a.NormInf()
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("krylov: %s: the operator's NormInf() is %g; it must be finite and non-negative (an overflowing row sum means A is beyond float64's range: scale it): %w", solver, v, ErrInput)
	}
	if v > 0 && v < 0x1p-1022 {
		// Every entry is subnormal: A has lost float64's precision, the
		// device's scaling of it overflows (Newton–Schulz), and x = A⁻¹·b
		// for the scaled b overflows the host's iterate.
		return 0, fmt.Errorf("krylov: %s: the operator's NormInf() is %g, below float64's smallest normal number 2⁻¹⁰²² (%g): scale A (and b) by a power of two, such as 2¹⁰⁰⁰, first: %w", solver, v, 0x1p-1022, ErrInput)
	}
	return v, nil
}

func firstNonFinite(x []float64) (int, float64, bool) {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i, v, true
		}
	}
	return 0, 0, false
}

// device returns the settings' device, opening the default one if unset.
func device(s Settings) (shim.Device, error) {
	if s.Device != nil {
		return s.Device, nil
	}
	d, err := shim.Shared()
	if err != nil {
		return nil, fmt.Errorf("krylov: %w", err)
	}
	return d, nil
}

// run is one solve in progress: what every solver's loop shares.
type run struct {
	a     Operator
	b     []float64 // scaled so that ‖b‖₂ is near 1 (see solve)
	bnorm float64   // ‖b‖₂ of the scaled b
	set   Settings
	dev   shim.Device
	res   *Result
	best  bestIterate
	start time.Time
}

// bestIterate is the iterate with the smallest residual seen, x = 0
// (relative residual 1) included: a solve that fails returns it, never an
// iterate worse than it.
type bestIterate struct {
	x   []float64
	res float64
}

func (b *bestIterate) offer(x []float64, res float64) {
	if res < b.res {
		copy(b.x, x)
		b.res = res
	}
}

// record appends the residual of the current iterate to the history,
// remembers the iterate if it is the best so far, and traces the dispatch.
func (r *run) record(rel float64) {
	res := r.res
	res.Residual = rel
	res.History = append(res.History, rel)
	r.best.offer(res.X, rel)
	r.trace(rel)
}

// trace reports the dispatch just recorded to Settings.Trace, if set.
func (r *run) trace(rel float64) {
	res := r.res
	if res.Dispatches > 0 && r.set.Trace != nil {
		r.set.Trace(Step{Dispatch: res.Dispatches, Iterations: res.Iterations, Residual: rel, Elapsed: time.Since(r.start)})
	}
}

// finite reports whether the relative residual is a number: a NaN or an
// infinite residual is never converged.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// bScaleRange: outside [2⁻⁶⁴, 2⁶⁴], ‖b‖₂ is brought to about 1 by a power
// of two before the solve, so that no host dot product of residuals or
// images under- or overflows.
const bScaleRange = 64

// solve runs loop on the system with b (and X0) scaled by a power of two
// when ‖b‖₂ is extreme, undoes the scaling on x, and returns the best
// iterate when the loop fails. b = 0 gives x = 0 at once.
func solve(a Operator, b []float64, set Settings, loop func(*run) error) (Result, error) {
	start := time.Now()
	n := a.Dims()
	res := Result{X: make([]float64, n)}
	bnorm := norm2(b)
	if bnorm == 0 {
		res.Converged = true
		res.History = []float64{0}
		return res, nil
	}
	e := 0
	ref := bnorm
	if math.IsInf(bnorm, 0) {
		// ‖b‖₂ overflows float64 although every entry is finite (checked):
		// scale by the largest entry instead.
		ref = 0
		for _, v := range b {
			ref = math.Max(ref, math.Abs(v))
		}
	}
	if _, be := math.Frexp(ref); be < -bScaleRange || be > bScaleRange {
		e = be
		b = scaledCopy(b, -e)
		if set.X0 != nil {
			set.X0 = scaledCopy(set.X0, -e)
		}
	}
	if set.X0 != nil {
		copy(res.X, set.X0)
	}
	dev, err := device(set)
	if err != nil {
		return res, err
	}
	if e != 0 {
		bnorm = norm2(b)
	}
	r := &run{a: a, b: b, bnorm: bnorm, set: set, dev: dev, res: &res, start: start,
		best: bestIterate{x: make([]float64, n), res: 1}}
	err = loop(r)
	if err != nil && !res.Converged && !(res.Residual <= r.best.res) { // NaN included
		copy(res.X, r.best.x)
		res.Residual = r.best.res
	}
	if e != 0 {
		for i, v := range res.X {
			res.X[i] = math.Ldexp(v, e)
		}
		if i, v, bad := firstNonFinite(res.X); bad && err == nil {
			res.Converged = false
			err = fmt.Errorf("krylov: the solution overflows float64 (x[%d] = %g): %w", i, v, ErrInput)
		}
	}
	res.Host = max(0, time.Since(start)-res.Build-res.Device)
	res.finish()
	return res, err
}

// scaledCopy returns 2^e·x.
func scaledCopy(x []float64, e int) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = math.Ldexp(v, e)
	}
	return y
}

// initialResidual sets r = b − A·x for the starting iterate, records it,
// and refuses a non-finite one (A·X0 overflows, or the operator's MulVecTo
// returned NaN or Inf). It returns ‖r‖₂.
func (r *run) initialResidual(rv []float64, solver string) (float64, error) {
	rnorm := residual(rv, r.a, r.res.X, r.b)
	rel := rnorm / r.bnorm
	if !finite(rel) {
		r.res.Residual = rel
		r.res.History = append(r.res.History, rel)
		return 0, fmt.Errorf("krylov: %s: the initial residual b − A·x₀ is %g: A·X0 overflows float64, or the operator's MulVecTo returned NaN or Inf: %w", solver, rel, ErrInput)
	}
	r.record(rel)
	return rnorm, nil
}

func norm2(x []float64) float64 {
	// The plain sum of squares where it is accurate (see sumSq), else the
	// scaled one: no overflow or underflow for any finite x.
	if ss := dot(x, x); ss >= 0x1p-900 && ss <= math.MaxFloat64 {
		return math.Sqrt(ss)
	}
	scale, ssq := 0.0, 1.0
	for _, v := range x {
		if v == 0 {
			continue
		}
		a := math.Abs(v)
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return a
		}
		if scale < a {
			ssq = 1 + ssq*(scale/a)*(scale/a)
			scale = a
		} else {
			ssq += (v / scale) * (v / scale)
		}
	}
	return scale * math.Sqrt(ssq)
}

func dot(x, y []float64) float64 {
	s := 0.0
	for i, v := range x {
		s += v * y[i]
	}
	return s
}

// residual sets r = b − A·x and returns ‖r‖₂.
func residual(r []float64, a Operator, x, b []float64) float64 {
	a.MulVecTo(r, x)
	for i := range r {
		r[i] = b[i] - r[i]
	}
	return norm2(r)
}

// pow2Exp returns e with 2^e·v in [½, 1) for v > 0.
func pow2Exp(v float64) int {
	_, e := math.Frexp(v)
	return -e
}

func toFloat32(dst []float32, src []float64, scale float64) {
	for i, v := range src {
		dst[i] = float32(v * scale)
	}
}

// twoSum returns s = fl(a + b) and the rounding error e with a + b = s + e
// exactly (Knuth's TwoSum, TAOCP vol. 2 §4.2.2): six correctly rounded
// fp16 operations, no assumption on the operands' sizes.
func twoSum(g *dataflow.Graph, a, b dataflow.Value) (s, e dataflow.Value) {
	s = g.Add(a, b)
	bb := g.Sub(s, a)
	e = g.Add(g.Sub(a, g.Sub(s, bb)), g.Sub(b, bb))
	return s, e
}

// outputs names a program's outputs.
type outputs struct {
	idx map[string]int
	out [][]float32
}

func outputNames(exe shim.Executable) map[string]int {
	idx := map[string]int{}
	for i, o := range exe.Program().Outputs {
		idx[o.Name] = i
	}
	return idx
}

// get returns the named output, or nil if the program has none.
func (o outputs) get(name string) []float32 {
	if i, ok := o.idx[name]; ok && i < len(o.out) {
		return o.out[i]
	}
	return nil
}

// roundFP16 returns x rounded to fp16, as the device reads it.
func roundFP16(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = fp16.Round32(v)
	}
	return y
}

// checkApplyShape reports an operator whose device apply did not return
// a vector of the shape it was given.
func checkApplyShape(g *dataflow.Graph, q dataflow.Value, shape dataflow.Shape) error {
	if err := g.Err(); err != nil {
		return fmt.Errorf("krylov: the operator's DeviceApply: %w", err)
	}
	if !q.Shape().Equal(shape) {
		return fmt.Errorf("krylov: the operator's DeviceApply returned shape %v, want %v (the shape of its input): %w", q.Shape(), shape, ErrShape)
	}
	return nil
}

// maxScale returns v/max|v| and max|v|, floored at 2⁻¹⁴ (fp16's smallest
// normal number) so that a zero vector stays zero instead of becoming NaN;
// a vector below the floor comes back with entries below 1, not 1.
func maxScale(g *dataflow.Graph, v dataflow.Value) (scaled, peak dataflow.Value) {
	peak = g.Maximum(g.ReduceMax(g.Abs(v), []int{1}, true), g.Scalar(0x1p-14))
	return g.Div(v, peak), peak
}

// vectorNorm is the 2-norm the device's vectors are scaled to: a power of
// two near √n/2, so that entries are about ½ (far from fp16's subnormals,
// whose products would underflow) and a dot product of two such vectors,
// about n/4, stays far below 65504.
func vectorNorm(n int) float64 {
	return math.Exp2(math.Floor(math.Log2(math.Sqrt(float64(n)) / 2)))
}

// scaleBy sets dst = S·x (dst = x when s is nil) and returns ‖dst‖₂.
func scaleBy(dst, s, x []float64) float64 {
	if s == nil {
		copy(dst, x)
	} else {
		for i, v := range x {
			dst[i] = s[i] * v
		}
	}
	return norm2(dst)
}
