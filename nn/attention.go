package nn

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
)

// MaskValue is what the causal mask adds to a score a query may not see:
// −2¹⁵. Scores are kept within ±2¹⁴ (Headroom), so a masked score ends
// below every unmasked one and stays finite (≥ −49152); after the max
// subtraction its exponential is exactly 0.
const MaskValue = -(1 << 15)

// AttentionWeights are the four projections of multi-head attention, each
// [D, D] with an optional [D] bias, in PyTorch's layout.
type AttentionWeights struct {
	Q, K, V, O Dense
}

// AttentionOptions are Attention's parameters.
type AttentionOptions struct {
	Heads  int  // number of heads; it must divide D
	Causal bool // query i attends to keys 0…i only
}

// Attention is multi-head self-attention on channel-first x [1, D, 1, T]
// (D features at each of T positions), returning [1, D, 1, T]:
//
//	Q = x·Wqᵀ/√d, K, V likewise without the scale (d = D/heads)
//	P_h = softmax(Q_h·K_hᵀ + mask) over the keys
//	y = concat_h(P_h·V_h)·Woᵀ + bo
//
// It is decomposed (matmul → softmax → matmul; the engine's fused
// scaled_dot_product_attention is not used: its mask is reported ignored
// and it degrades at long sequences). The 1/√d scale is folded into the
// query weights at build time; both matmuls take their operands through
// their transpose flags, so no transpose op is emitted; the softmax
// subtracts the row maximum; the causal mask adds MaskValue, which stays
// finite. The caller keeps |scores| within Headroom (as a pre-norm block
// does: normalized inputs and weights of moderate size).
func Attention(g *dataflow.Graph, x dataflow.Value, w AttentionWeights, opts AttentionOptions) dataflow.Value {
	if !ok(g, x) {
		return dataflow.Value{}
	}
	xs := x.Shape()
	if len(xs) != 4 || xs[0] != 1 || xs[2] != 1 {
		return fail(g, ErrShape, "attention: input of shape %v, want [1, D, 1, T]", xs)
	}
	d, t, h := xs[1], xs[3], opts.Heads
	if h < 1 || d%h != 0 {
		return fail(g, ErrShape, "attention: %d heads do not divide the %d features", h, d)
	}
	for _, p := range []Dense{w.Q, w.K, w.V, w.O} {
		if !consistent(g, "attention", p.W, p.B) {
			return dataflow.Value{}
		}
		if len(p.W.Shape) != 2 || p.W.Shape[0] != d || p.W.Shape[1] != d {
			return fail(g, ErrWeight, "attention: projection %q has shape %v, want [%d %d]", p.W.Name, p.W.Shape, d, d)
		}
	}
	dh := d / h
	scale := 1 / math.Sqrt(float64(dh))
	q := scaledLinear(g, x, w.Q, scale)
	k := Linear(g, x, w.K.W, w.K.B)
	v := Linear(g, x, w.V.W, w.V.B)
	heads := dataflow.Shape{h, dh, t}
	qh, kh, vh := g.Reshape(q, heads), g.Reshape(k, heads), g.Reshape(v, heads)
	// scores[h, i, j] = Σ_c q[h, c, i]·k[h, c, j]: [H, T, T], keys last.
	scores := g.MatMul(qh, kh, true, false)
	if opts.Causal {
		scores = g.Add(scores, causalMask(g, t))
	}
	p := Softmax(g, scores, -1)
	// out[h, c, i] = Σ_j v[h, c, j]·p[h, i, j]: [H, dh, T].
	out := g.Reshape(g.MatMul(vh, p, false, true), dataflow.Shape{1, d, 1, t})
	return Linear(g, out, w.O.W, w.O.B)
}

// scaledLinear is Linear with s folded into the weight and bias.
func scaledLinear(g *dataflow.Graph, x dataflow.Value, p Dense, s float64) dataflow.Value {
	w := Tensor{Name: p.W.Name, Shape: p.W.Shape, Data: scaled(p.W.Data, s)}
	var b Tensor
	if p.B.Valid() {
		b = Tensor{Name: p.B.Name, Shape: p.B.Shape, Data: scaled(p.B.Data, s)}
	}
	return Linear(g, x, w, b)
}

// causalMask is the [T, T] constant with MaskValue above the diagonal
// (key j > query i) and 0 elsewhere, shared by every layer of a graph.
func causalMask(g *dataflow.Graph, t int) dataflow.Value {
	name := fmt.Sprintf("nn_causal_mask%d", t)
	if m, found := g.Lookup(name); found {
		return m
	}
	data := make([]float64, t*t)
	for i := range t {
		for j := i + 1; j < t; j++ {
			data[i*t+j] = MaskValue
		}
	}
	return g.Const(name, dataflow.Shape{t, t}, data)
}

// Embedding maps one-hot tokens to vectors by a matmul with the table
// [V, D] (PyTorch's nn.Embedding weight) — the engine has no
// data-dependent gather. onehot is channel-first [1, V, 1, T] (as OneHot
// lays it out) and gives [1, D, 1, T], or rows [T, V] and gives [T, D].
func Embedding(g *dataflow.Graph, onehot dataflow.Value, table Tensor) dataflow.Value {
	if !ok(g, onehot) {
		return dataflow.Value{}
	}
	if len(table.Shape) != 2 || !table.Valid() {
		return fail(g, ErrWeight, "embedding: table %q has shape %v, want [V, D]", table.Name, table.Shape)
	}
	if !consistent(g, "embedding", table) {
		return dataflow.Value{}
	}
	v, d := table.Shape[0], table.Shape[1]
	xs := onehot.Shape()
	if (len(xs) != 2 && len(xs) != 4) || xs[1] != v {
		return fail(g, ErrShape, "embedding: one-hot input of shape %v does not fit table %q of shape %v: want [T, %d] or [1, %d, 1, T]", xs, table.Name, table.Shape, v, v)
	}
	// Each output is one table entry, so the flush criterion is per
	// token's vector (rows of the [V, D] table), not per conv row.
	if !finite(g, table) {
		return dataflow.Value{}
	}
	e, wd := upscale(table.Data, nil, d)
	var y dataflow.Value
	if len(xs) == 4 {
		wt := make([]float64, v*d)
		for i := range v {
			for j := range d {
				wt[j*v+i] = wd[i*d+j]
			}
		}
		y = g.Conv2D(onehot, constant(g, table.Name, dataflow.Shape{d, v, 1, 1}, wt), dataflow.Conv2DOptions{})
	} else {
		y = g.MatMul(onehot, constant(g, table.Name, dataflow.Shape{v, d}, wd), false, false)
	}
	return unscale(g, y, -e)
}

// OneHot lays token ids out as the channel-first one-hot input of
// Embedding, [1, vocab, 1, len(ids)] row-major: element (v, t) is 1 when
// ids[t] == v. An id outside [0, vocab) is an error wrapping ErrShape.
func OneHot(ids []int, vocab int) ([]float32, error) {
	t := len(ids)
	out := make([]float32, vocab*t)
	for i, id := range ids {
		if id < 0 || id >= vocab {
			return nil, fmt.Errorf("nn: one-hot: token %d is id %d, outside the vocabulary [0, %d): %w", i, id, vocab, ErrShape)
		}
		out[id*t+i] = 1
	}
	return out, nil
}
