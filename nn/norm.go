package nn

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
)

// NormOptions are the parameters of LayerNorm and RMSNorm.
type NormOptions struct {
	// Epsilon is ε ≥ 0, added to the variance (or the mean square).
	Epsilon float64
	// Native builds LayerNorm as the engine's one layer_norm op, which
	// needs ε = 0 or ε ≥ 2⁻¹⁴ (fp16 has no normal value below) and leaves
	// large inputs to the op's internals. The default builds it from
	// matmul-class ops that take any ε and any finite input. RMSNorm is
	// always built from ops.
	Native bool
}

// Norm constants of the decomposed form. The normalized rows xs = x/max|x|
// lie in [−1, 1], so centred values c lie in [−2, 2]; their squares are
// taken at 16·c (≤ 32, squares ≤ 1024, far inside the cliff) and the
// variance comes out 256 times too large, which the final multiply by 16
// undoes exactly. The variance-plus-ε is floored at 2⁻¹⁴ (a constant
// cannot be smaller), which at the ×256 scale is a floor of 2⁻²² on the
// true normalized variance, and the ε term is capped at 2¹⁵ (ε/max|x|² ≤
// 128), so no step overflows.
const (
	normPre    = 16
	normFloor  = 0x1p-14
	normEpsCap = 0x1p15
)

// LayerNorm normalizes x over its feature axis, axis 1 (x is [T, D] rows
// of features or channel-first [N, D, H, W]): y = (x − μ)/√(σ² + ε)·γ + β
// with the biased variance, γ and β of shape [D] (either may be the zero
// Tensor: ones and zeros).
//
// The default (decomposed) form is safe for any finite input: each
// position's features are first divided by their largest magnitude (an
// exact reduce_max), so the mean and variance — computed as convs with a
// constant 1/D weight, never with reduce_sum's narrow accumulator — see
// values in [−1, 1]; ε is carried as ε/max|x|², through a power-of-two
// scaled √ε so that even ε = 1e−12 (MiniLM's) is a normal constant.
// Positions whose largest |x| is below about √ε/11 are normalized with ε
// capped (their outputs are then up to √ε/(11·max|x|) times too large in
// magnitude, and at most 2⁻² in absolute value).
func LayerNorm(g *dataflow.Graph, x dataflow.Value, gamma, beta Tensor, opts NormOptions) dataflow.Value {
	d, good := normInput(g, "layer_norm", x, gamma, beta, opts.Epsilon)
	if !good {
		return dataflow.Value{}
	}
	if opts.Native {
		eps := opts.Epsilon
		if eps != 0 && eps < minNormal || eps > engine.MaxValue {
			return fail(g, ErrRange, "layer_norm: native epsilon %g is outside fp16's normal range: use 0, a value in [2⁻¹⁴ ≈ 6.1e-5, 65504], or the decomposed form (Native false), which takes any ε", eps)
		}
		var gv, bv dataflow.Value
		if gamma.Valid() {
			gv = vector(g, gamma.Name, dataflow.Shape{d}, gamma.Data)
		}
		if beta.Valid() {
			bv = vector(g, beta.Name, dataflow.Shape{d}, beta.Data)
		}
		return g.LayerNorm(x, []int{1}, gv, bv, eps)
	}
	return affine(g, x, normalize(g, x, d, true, opts.Epsilon), gamma, beta)
}

// RMSNorm is y = x/√(mean(x²) + ε)·γ over the feature axis (axis 1, as in
// LayerNorm), built from ops in the same overflow-safe way as LayerNorm's
// decomposed form; gamma [D] may be the zero Tensor.
func RMSNorm(g *dataflow.Graph, x dataflow.Value, gamma Tensor, opts NormOptions) dataflow.Value {
	d, good := normInput(g, "rms_norm", x, gamma, Tensor{}, opts.Epsilon)
	if !good {
		return dataflow.Value{}
	}
	return affine(g, x, normalize(g, x, d, false, opts.Epsilon), gamma, Tensor{})
}

// normInput checks a norm's operands and returns the feature count D.
func normInput(g *dataflow.Graph, op string, x dataflow.Value, gamma, beta Tensor, eps float64) (int, bool) {
	if !ok(g, x) {
		return 0, false
	}
	xs := x.Shape()
	if len(xs) != 2 && len(xs) != 4 {
		fail(g, ErrShape, "%s: input of shape %v: want [T, D] or [N, D, H, W]", op, xs)
		return 0, false
	}
	d := xs[1]
	if !consistent(g, op, gamma, beta) {
		return 0, false
	}
	for _, p := range []Tensor{gamma, beta} {
		if !p.isZero() && (len(p.Shape) != 1 || p.Shape[0] != d) {
			fail(g, ErrWeight, "%s: parameter %q has shape %v, want [%d]", op, p.Name, p.Shape, d)
			return 0, false
		}
	}
	if math.IsNaN(eps) || eps < 0 || math.IsInf(eps, 0) {
		fail(g, ErrRange, "%s: epsilon %g, want a finite value ≥ 0", op, eps)
		return 0, false
	}
	return d, true
}

// featureMean is the mean over axis 1 as a contraction with a constant
// 1/D weight (wide accumulator): a 1×1 conv for rank 4, a matmul for rank 2.
func featureMean(g *dataflow.Graph, x dataflow.Value, d int) dataflow.Value {
	rank := len(x.Shape())
	name := fmt.Sprintf("nn_mean%d_r%d", d, rank)
	w, found := g.Lookup(name)
	if !found {
		data := make([]float64, d)
		for i := range data {
			data[i] = 1 / float64(d)
		}
		shape := dataflow.Shape{d, 1}
		if rank == 4 {
			shape = dataflow.Shape{1, d, 1, 1}
		}
		w = g.Const(name, shape, data)
	}
	if rank == 4 {
		return g.Conv2D(x, w, dataflow.Conv2DOptions{})
	}
	return g.MatMul(x, w, false, false)
}

// normalize returns (x − μ)/√(σ² + ε) (center) or x/√(mean x² + ε), per
// position over axis 1, as described at LayerNorm.
func normalize(g *dataflow.Graph, x dataflow.Value, d int, center bool, eps float64) dataflow.Value {
	m := g.Maximum(g.ReduceMax(g.Abs(x), []int{1}, true), g.Scalar(minNormal))
	// x/m, not x·(1/m): 1/m is subnormal for m > 2¹⁴ and an engine may
	// flush it.
	xs := g.Div(x, m) // in [−1, 1]
	c := xs
	if center {
		c = g.Sub(xs, featureMean(g, xs, d))
	}
	c16 := g.Mul(c, g.Scalar(normPre))
	v := featureMean(g, g.Mul(c16, c16), d) // 256·σ²
	// Below 2⁻⁵⁶, ε/m² (m ≥ 2⁻¹⁴) is under the variance floor: no effect.
	if eps >= 0x1p-56 {
		// a = 16·√ε/m = √(256·ε/m²), with √ε carried as √ε·2^k ≥ 2⁻¹⁰
		// (a normal constant) and 16·2^−k applied after the division. A
		// quotient that underflows means ε is negligible; one that
		// overflows is capped below.
		se, k := math.Sqrt(eps), 0
		for se*math.Ldexp(1, k) < 0x1p-10 {
			k++
		}
		a := g.Mul(g.Div(g.Scalar(se*math.Ldexp(1, k)), m), g.Scalar(math.Ldexp(normPre, -k)))
		v = g.Add(v, g.Minimum(g.Mul(a, a), g.Scalar(normEpsCap)))
	}
	s := g.Rsqrt(g.Maximum(v, g.Scalar(normFloor))) // 1/(16·√(σ²+ε'))
	return g.Mul(c16, s)
}

// affine applies γ and β along axis 1 of x's layout to y.
func affine(g *dataflow.Graph, x, y dataflow.Value, gamma, beta Tensor) dataflow.Value {
	shape := dataflow.Shape{gamma.Size()}
	if len(x.Shape()) == 4 {
		shape = dataflow.Shape{1, x.Shape()[1], 1, 1}
	}
	if gamma.Valid() {
		if flushesToZero(gamma.Data) {
			// γ = 0 (every entry below fp16's normal range): the lowering
			// refuses a multiply by an all-zero constant, and y − y is the
			// same exact zeros (y, a normalized row, is finite).
			y = g.Sub(y, y)
		} else {
			y = g.Mul(y, vector(g, gamma.Name, shape, gamma.Data))
		}
	}
	if beta.Valid() {
		shape = dataflow.Shape{beta.Size()}
		if len(x.Shape()) == 4 {
			shape = dataflow.Shape{1, x.Shape()[1], 1, 1}
		}
		y = g.Add(y, vector(g, beta.Name, shape, beta.Data))
	}
	return y
}

// flushesToZero reports whether vector would make every entry of data 0.
func flushesToZero(data []float64) bool {
	for _, v := range data {
		if math.Abs(v) >= minNormal {
			return false
		}
	}
	return true
}
