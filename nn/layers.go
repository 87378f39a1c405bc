package nn

import (
	"fmt"
	"math"
	"strings"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
)

// Cliff is the magnitude a matmul or conv output may not exceed on the
// engine (engine.Cliff); Headroom, half of it, is what the layers keep
// their conv and matmul outputs under by construction.
const (
	Cliff    = engine.Cliff
	Headroom = engine.Headroom
)

// minNormal is fp16's smallest normal magnitude, 2⁻¹⁴: no constant may
// lie below it (the lowering refuses subnormal constants).
const minNormal = 0x1p-14

// fail records an nn error in g and returns the zero Value.
func fail(g *dataflow.Graph, sentinel error, format string, args ...any) dataflow.Value {
	g.Fail(fmt.Errorf("nn: "+format+": %w", append(args, sentinel)...))
	return dataflow.Value{}
}

// ok reports whether g can take more ops on xs: no error recorded and every
// value valid (a zero Value after an error is that error's echo).
func ok(g *dataflow.Graph, xs ...dataflow.Value) bool {
	if g == nil || g.Err() != nil {
		return false
	}
	for _, x := range xs {
		if !x.Valid() {
			fail(g, ErrShape, "a layer input is the zero Value")
			return false
		}
	}
	return true
}

// constName turns a weight name ("layer1.0.conv1.weight") into a fresh MIL
// identifier of g ("layer1_0_conv1_weight", then "…_2" if taken).
func constName(g *dataflow.Graph, base string) string {
	var b strings.Builder
	for i, c := range base {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9' && i > 0:
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" {
		name = "w"
	}
	if _, taken := g.Lookup(name); !taken {
		return name
	}
	for i := 2; ; i++ {
		n := fmt.Sprintf("%s_%d", name, i)
		if _, taken := g.Lookup(n); !taken {
			return n
		}
	}
}

// constant adds a weight to g under a fresh name derived from base, after
// checking that every value is finite.
func constant(g *dataflow.Graph, base string, shape dataflow.Shape, data []float64) dataflow.Value {
	for i, v := range data {
		if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > engine.MaxValue {
			return fail(g, ErrRange, "weight %q element %d is %g, beyond fp16's range ±65504", base, i, v)
		}
	}
	return g.Const(constName(g, base), shape, data)
}

// consistent reports whether every tensor passes Tensor.Check (the zero
// Tensor, "none", does), recording an ErrWeight in g for the first that
// does not; layer names the layer for the message.
func consistent(g *dataflow.Graph, layer string, ts ...Tensor) bool {
	for _, t := range ts {
		if p := t.problem(); p != "" {
			fail(g, ErrWeight, "%s: %s", layer, p)
			return false
		}
	}
	return true
}

// finite reports whether every tensor holds finite values within fp16's
// range, recording an ErrRange in g when one does not.
func finite(g *dataflow.Graph, ts ...Tensor) bool {
	for _, t := range ts {
		for i, v := range t.Data {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > engine.MaxValue {
				fail(g, ErrRange, "weight %q element %d is %g, beyond fp16's range ±65504", t.Name, i, v)
				return false
			}
		}
	}
	return true
}

// vector adds an additive or multiplicative per-channel constant (a bias,
// γ, β): entries below 2⁻¹⁴ in magnitude are set to zero, since fp16 has
// no normal value there (the lowering refuses subnormal constants); the
// change is below the rounding of any activation ≥ 2⁻³ it meets.
func vector(g *dataflow.Graph, base string, shape dataflow.Shape, data []float64) dataflow.Value {
	out := make([]float64, len(data))
	for i, v := range data {
		if math.Abs(v) >= minNormal {
			out[i] = v
		}
	}
	return constant(g, base, shape, out)
}

// upscale picks the power of two 2^e (e ≥ 0) for a contraction weight of
// rows of rowLen (one row per output channel) so that, after scaling,
// flushing the entries below fp16's normal range to zero changes every
// row's L1 norm by at most u = 2⁻¹¹ of it — under the products' own
// rounding — while the largest scaled entry (and bias, if any) stays
// within 2¹⁴. It returns e and the scaled, flushed weight.
func upscale(w, b []float64, rowLen int) (int, []float64) {
	peak := 0.0
	for _, v := range w {
		peak = math.Max(peak, math.Abs(v))
	}
	for _, v := range b {
		peak = math.Max(peak, math.Abs(v))
	}
	fits := func(e int) bool {
		t := math.Ldexp(minNormal, -e) // entries below t flush at scale 2^e
		for r := 0; r+rowLen <= len(w); r += rowLen {
			l1, lost := 0.0, 0.0
			for _, v := range w[r : r+rowLen] {
				a := math.Abs(v)
				l1 += a
				if a < t {
					lost += a
				}
			}
			if lost > l1*0x1p-11 {
				return false
			}
		}
		return true
	}
	e := 0
	for !fits(e) && e < 24 && math.Ldexp(peak, e+1) <= Headroom {
		e++
	}
	out := make([]float64, len(w))
	for i, v := range w {
		v = math.Ldexp(v, e)
		if math.Abs(v) >= minNormal {
			out[i] = v
		}
	}
	return e, out
}

// scaled returns data·s.
func scaled(data []float64, s float64) []float64 {
	out := make([]float64, len(data))
	for i, v := range data {
		out[i] = v * s
	}
	return out
}

// Dense is the weight [out, in] and optional bias [out] of a linear layer,
// in PyTorch's layout (y = x·Wᵀ + b).
type Dense struct {
	W, B Tensor
}

// Linear is y = x·Wᵀ + b over x's feature axis: x is [M, in] (rows of
// features) or channel-first [N, in, H, W]; w is [out, in] and b [out] or
// the zero Tensor. The channel-first form is a 1×1 conv; the row form is a
// matmul with a constant, which the lowering emits as a 1×1 conv too.
// Linear keeps the engine's output limit only as far as x·Wᵀ + b stays
// within Headroom: see LinearShift.
func Linear(g *dataflow.Graph, x dataflow.Value, w, b Tensor) dataflow.Value {
	return LinearShift(g, x, w, b, 0)
}

// LinearShift is Linear with the power of two 2^−shift folded into the
// weight and bias and unfolded by an exact elementwise multiply by 2^shift
// after the conv: the conv's output is 2^shift times smaller, so a result
// up to fp16's range (65504), beyond the conv's cliff (32752), comes out
// finite. ShiftFor picks the shift for a bound on |x|.
func LinearShift(g *dataflow.Graph, x dataflow.Value, w, b Tensor, shift int) dataflow.Value {
	if !ok(g, x) {
		return dataflow.Value{}
	}
	if len(w.Shape) != 2 || !w.Valid() {
		return fail(g, ErrWeight, "linear: weight %q has shape %v, want [out, in]", w.Name, w.Shape)
	}
	if !consistent(g, "linear", w, b) {
		return dataflow.Value{}
	}
	out, in := w.Shape[0], w.Shape[1]
	xs := x.Shape()
	if (len(xs) != 2 && len(xs) != 4) || xs[1] != in {
		return fail(g, ErrShape, "linear: input of shape %v does not fit weight %q of shape %v: want [M, %d] or [N, %d, H, W]", xs, w.Name, w.Shape, in, in)
	}
	if !b.isZero() && (len(b.Shape) != 1 || b.Shape[0] != out) {
		return fail(g, ErrWeight, "linear: bias %q has shape %v, want [%d]", b.Name, b.Shape, out)
	}
	if shift < 0 || shift > 24 {
		return fail(g, ErrRange, "linear: shift %d outside [0, 24]", shift)
	}
	if !finite(g, w, b) {
		return dataflow.Value{}
	}
	e, wd := upscale(scaled(w.Data, math.Ldexp(1, -shift)), scaled(b.Data, math.Ldexp(1, -shift)), in)
	s := math.Ldexp(1, e-shift)
	var y dataflow.Value
	if len(xs) == 4 {
		wc := constant(g, w.Name, dataflow.Shape{out, in, 1, 1}, wd)
		y = g.Conv2D(x, wc, dataflow.Conv2DOptions{})
		if b.Valid() {
			y = g.Add(y, vector(g, b.Name, dataflow.Shape{1, out, 1, 1}, scaled(b.Data, s)))
		}
	} else {
		wt := make([]float64, in*out)
		for o := range out {
			for i := range in {
				wt[i*out+o] = wd[o*in+i]
			}
		}
		y = g.MatMul(x, constant(g, w.Name, dataflow.Shape{in, out}, wt), false, false)
		if b.Valid() {
			y = g.Add(y, vector(g, b.Name, dataflow.Shape{out}, scaled(b.Data, s)))
		}
	}
	return unscale(g, y, shift-e)
}

// unscale multiplies y by 2^k (exact) unless k is 0. A factor outside
// fp16's normal range — 2^k below 2⁻¹⁴ (upscale's e reaches 24) or above
// 2¹⁵ (a shift of up to 24) — is applied as several multiplies by powers
// of two that are normal constants; each intermediate lies between y and
// the result, so none is smaller or larger than both.
func unscale(g *dataflow.Graph, y dataflow.Value, k int) dataflow.Value {
	for k != 0 {
		step := max(min(k, 15), -14)
		y = g.Mul(y, g.Scalar(math.Ldexp(1, step)))
		k -= step
	}
	return y
}

// ShiftFor is the smallest shift ≥ 0 that keeps a linear or conv layer's
// output within Headroom when every |input| ≤ inputBound: the bound on
// output channel o is inputBound·Σ|w[o, …]| + |b[o]|, and the shift makes
// its maximum over o at most 2^14 after the 2^−shift fold.
//
// For a weight the layers would refuse (w without data or shape, or w or
// b failing Tensor.Check, or b not one entry per output channel) it
// returns 0; the layer then reports the mistake.
func ShiftFor(w, b Tensor, inputBound float64) int {
	if len(w.Shape) == 0 || !w.Valid() || w.Check() != nil || b.Check() != nil || (!b.isZero() && len(b.Data) != w.Shape[0]) {
		return 0
	}
	return shiftFor(w.Data, b.Data, w.Shape[0], inputBound)
}

func shiftFor(w, b []float64, out int, inputBound float64) int {
	per := len(w) / max(out, 1)
	worst := 0.0
	for o := range out {
		s := 0.0
		for _, v := range w[o*per : (o+1)*per] {
			s += math.Abs(v)
		}
		s *= inputBound
		if b != nil {
			s += math.Abs(b[o])
		}
		worst = math.Max(worst, s)
	}
	shift := 0
	for worst > Headroom && shift < 24 {
		worst /= 2
		shift++
	}
	return shift
}

// BatchNorm holds a batch-norm layer's per-channel parameters, folded into
// the preceding conv at build time: y = (x − mean)/√(var + ε)·γ + β.
type BatchNorm struct {
	Gamma, Beta, Mean, Var Tensor
	Epsilon                float64
}

// FoldBatchNorm returns the weight and bias of conv(w, b) followed by bn:
// w'[o] = w[o]·γ[o]/√(var[o]+ε), b'[o] = (b[o] − mean[o])·γ[o]/√(var[o]+ε)
// + β[o], computed in float64 (b may be the zero Tensor). It is an error
// wrapping ErrWeight when a parameter does not have one entry per output
// channel or a variance plus ε is not positive.
func FoldBatchNorm(w, b Tensor, bn BatchNorm) (Tensor, Tensor, error) {
	if len(w.Shape) == 0 || !w.Valid() {
		return Tensor{}, Tensor{}, fmt.Errorf("nn: batch norm: conv weight %q has shape %v: %w", w.Name, w.Shape, ErrWeight)
	}
	for _, t := range []Tensor{w, b, bn.Gamma, bn.Beta, bn.Mean, bn.Var} {
		if p := t.problem(); p != "" {
			return Tensor{}, Tensor{}, fmt.Errorf("nn: batch norm: %s: %w", p, ErrWeight)
		}
	}
	out := w.Shape[0]
	for _, p := range []Tensor{bn.Gamma, bn.Beta, bn.Mean, bn.Var} {
		if !p.Valid() || len(p.Shape) != 1 || p.Shape[0] != out {
			return Tensor{}, Tensor{}, fmt.Errorf("nn: batch norm: parameter %q has shape %v, the conv %q has %d output channels: %w", p.Name, p.Shape, w.Name, out, ErrWeight)
		}
	}
	if !b.isZero() && (len(b.Shape) != 1 || b.Shape[0] != out) {
		return Tensor{}, Tensor{}, fmt.Errorf("nn: batch norm: bias %q has shape %v, the conv %q has %d output channels: %w", b.Name, b.Shape, w.Name, out, ErrWeight)
	}
	per := len(w.Data) / out
	fw := Tensor{Name: w.Name, DType: w.DType, Shape: append([]int{}, w.Shape...), Data: make([]float64, len(w.Data))}
	fb := Tensor{Name: bn.Beta.Name, DType: bn.Beta.DType, Shape: []int{out}, Data: make([]float64, out)}
	if b.Valid() {
		fb.Name = b.Name
	}
	for o := range out {
		v := bn.Var.Data[o] + bn.Epsilon
		if !(v > 0) || math.IsInf(v, 0) {
			return Tensor{}, Tensor{}, fmt.Errorf("nn: batch norm: channel %d of %q has variance %g + ε %g, want a finite positive sum: %w", o, bn.Var.Name, bn.Var.Data[o], bn.Epsilon, ErrWeight)
		}
		k := bn.Gamma.Data[o] / math.Sqrt(v)
		for i := range per {
			fw.Data[o*per+i] = w.Data[o*per+i] * k
		}
		bias := 0.0
		if b.Valid() {
			bias = b.Data[o]
		}
		fb.Data[o] = (bias-bn.Mean.Data[o])*k + bn.Beta.Data[o]
	}
	return fw, fb, nil
}

// ConvOptions are Conv2D's parameters. Zero strides, dilations and groups
// mean 1. BatchNorm, when not nil, is folded into the weight and bias at
// build time. Shift folds 2^−Shift into the weight and bias and multiplies
// the result by 2^Shift (see LinearShift); when Bound > 0 it is a bound on
// |x| and the shift is chosen by ShiftFor from the (folded) weights,
// unless Shift is larger.
type ConvOptions struct {
	Strides   [2]int // along H, W
	Pads      [4]int // top, bottom, left, right
	Dilations [2]int
	Groups    int
	BatchNorm *BatchNorm
	Shift     int
	Bound     float64
}

// Conv2D is the 2-D convolution (cross-correlation, as PyTorch's Conv2d) of
// x [N, Cin, H, W] with w [Cout, Cin/groups, KH, KW] plus the optional bias
// b [Cout], zero-padded.
func Conv2D(g *dataflow.Graph, x dataflow.Value, w, b Tensor, opts ConvOptions) dataflow.Value {
	if !ok(g, x) {
		return dataflow.Value{}
	}
	if len(w.Shape) != 4 || !w.Valid() {
		return fail(g, ErrWeight, "conv2d: weight %q has shape %v, want [Cout, Cin/groups, KH, KW]", w.Name, w.Shape)
	}
	if !consistent(g, "conv2d", w, b) {
		return dataflow.Value{}
	}
	if !b.isZero() && (len(b.Shape) != 1 || b.Shape[0] != w.Shape[0]) {
		return fail(g, ErrWeight, "conv2d: bias %q has shape %v, want [%d]", b.Name, b.Shape, w.Shape[0])
	}
	if !finite(g, w, b) {
		return dataflow.Value{}
	}
	if opts.BatchNorm != nil {
		var err error
		if w, b, err = FoldBatchNorm(w, b, *opts.BatchNorm); err != nil {
			g.Fail(err)
			return dataflow.Value{}
		}
	}
	shift := opts.Shift
	if opts.Bound > 0 {
		shift = max(shift, shiftFor(w.Data, b.Data, w.Shape[0], opts.Bound))
	}
	if shift < 0 || shift > 24 {
		return fail(g, ErrRange, "conv2d: shift %d outside [0, 24]", shift)
	}
	per := len(w.Data) / max(w.Shape[0], 1)
	e, wd := upscale(scaled(w.Data, math.Ldexp(1, -shift)), scaled(b.Data, math.Ldexp(1, -shift)), per)
	s := math.Ldexp(1, e-shift)
	wc := constant(g, w.Name, dataflow.Shape(w.Shape), wd)
	y := g.Conv2D(x, wc, dataflow.Conv2DOptions{Strides: opts.Strides, Pads: opts.Pads, Dilations: opts.Dilations, Groups: opts.Groups})
	if b.Valid() {
		y = g.Add(y, vector(g, b.Name, dataflow.Shape{1, b.Shape[0], 1, 1}, scaled(b.Data, s)))
	}
	return unscale(g, y, shift-e)
}

// ReLU is max(x, 0).
func ReLU(g *dataflow.Graph, x dataflow.Value) dataflow.Value {
	if !ok(g, x) {
		return dataflow.Value{}
	}
	return g.Relu(x)
}

// SiLU is x·sigmoid(x) (the swish activation).
func SiLU(g *dataflow.Graph, x dataflow.Value) dataflow.Value {
	if !ok(g, x) {
		return dataflow.Value{}
	}
	return g.Mul(x, g.Sigmoid(x))
}

// GELUMode selects how GELU is built.
type GELUMode int

// GELU forms. The native ones are one gelu op, whose compile reports on the
// engine are mixed (docs/ENGINE.md §7); the decomposed ones use only tanh,
// sigmoid and arithmetic.
const (
	// GELUExact is the native gelu op, 0.5·x·(1 + erf(x/√2)).
	GELUExact GELUMode = iota
	// GELUNativeTanh is the native gelu op in its tanh approximation.
	GELUNativeTanh
	// GELUTanh is the tanh approximation built from ops,
	// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·t³))) with t = x clamped to
	// [−8, 8] so that the cube stays in fp16's range (past |x| = 8 the
	// tanh is 1 to within 2⁻²⁰ either way).
	GELUTanh
	// GELUSigmoid is x·sigmoid(1.702·x).
	GELUSigmoid
)

// GELU is the Gaussian error linear unit in the given form.
func GELU(g *dataflow.Graph, x dataflow.Value, mode GELUMode) dataflow.Value {
	if !ok(g, x) {
		return dataflow.Value{}
	}
	switch mode {
	case GELUExact:
		return g.Gelu(x, dataflow.GeluExact)
	case GELUNativeTanh:
		return g.Gelu(x, dataflow.GeluTanh)
	case GELUTanh:
		t := g.Minimum(g.Maximum(x, g.Scalar(-8)), g.Scalar(8))
		cube := g.Mul(g.Mul(t, t), t)
		u := g.Mul(g.Add(x, g.Mul(cube, g.Scalar(0.044715))), g.Scalar(math.Sqrt(2/math.Pi)))
		return g.Mul(g.Mul(x, g.Scalar(0.5)), g.Add(g.Tanh(u), g.Scalar(1)))
	case GELUSigmoid:
		return g.Mul(x, g.Sigmoid(g.Mul(x, g.Scalar(1.702))))
	}
	return fail(g, ErrShape, "gelu: unknown mode %d", mode)
}

// Softmax is exp(x − max)/Σ exp(x − max) along axis: the row maximum is
// subtracted first (reduce_max is exact), so no exponential exceeds 1 and
// logits of any finite size give a finite result.
func Softmax(g *dataflow.Graph, x dataflow.Value, axis int) dataflow.Value {
	if !ok(g, x) {
		return dataflow.Value{}
	}
	if r := len(x.Shape()); axis < -r || axis >= r {
		return fail(g, ErrShape, "softmax: axis %d is outside [-%d, %d), the axes of the input of shape %v", axis, r, r, x.Shape())
	}
	return g.Softmax(g.Sub(x, g.ReduceMax(x, []int{axis}, true)), axis)
}

// Residual is the skip connection x + y.
func Residual(g *dataflow.Graph, x, y dataflow.Value) dataflow.Value {
	if !ok(g, x, y) {
		return dataflow.Value{}
	}
	return g.Add(x, y)
}
