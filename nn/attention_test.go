package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
)

// attentionRef is an independent float64 multi-head attention of
// channel-first x [D, T] with an explicit masked softmax: masked scores
// are left out of the max and the sum (no mask value at all). It also
// returns, per output, the absolute-value chain |Wo|·(P·|Wv|·|x|) + the
// same with the bias magnitudes: the scale of the rounding errors.
func attentionRef(x []float64, d, t, heads int, w nn.AttentionWeights, causal bool) (y, scale []float64) {
	proj := func(p nn.Dense, in []float64, abs bool) []float64 {
		out := make([]float64, d*t)
		for o := range d {
			for c := range t {
				s := 0.0
				if p.B.Valid() {
					s = p.B.Data[o]
					if abs {
						s = math.Abs(s)
					}
				}
				for i := range d {
					if abs {
						s += math.Abs(p.W.Data[o*d+i]) * math.Abs(in[i*t+c])
					} else {
						s += p.W.Data[o*d+i] * in[i*t+c]
					}
				}
				out[o*t+c] = s
			}
		}
		return out
	}
	q, k, v := proj(w.Q, x, false), proj(w.K, x, false), proj(w.V, x, false)
	av := proj(w.V, x, true)
	dh := d / heads
	att := make([]float64, d*t)
	aatt := make([]float64, d*t)
	for h := range heads {
		for i := range t {
			keys := t
			if causal {
				keys = i + 1
			}
			s := make([]float64, keys)
			m := math.Inf(-1)
			for j := range keys {
				for c := range dh {
					f := h*dh + c
					s[j] += q[f*t+i] * k[f*t+j]
				}
				s[j] /= math.Sqrt(float64(dh))
				m = math.Max(m, s[j])
			}
			sum := 0.0
			for j := range s {
				s[j] = math.Exp(s[j] - m)
				sum += s[j]
			}
			for j := range s {
				p := s[j] / sum
				for c := range dh {
					f := h*dh + c
					att[f*t+i] += p * v[f*t+j]
					aatt[f*t+i] += p * av[f*t+j]
				}
			}
		}
	}
	return proj(w.O, att, false), proj(w.O, aatt, true)
}

func attentionWeights(rng *rand.Rand, prefix string, d int, sigma float64) nn.AttentionWeights {
	dense := func(n string) nn.Dense {
		return nn.Dense{W: tensor(rng, prefix+n+".weight", sigma, d, d), B: tensor(rng, prefix+n+".bias", 0.1, d)}
	}
	return nn.AttentionWeights{Q: dense("q"), K: dense("k"), V: dense("v"), O: dense("o")}
}

// TestAttention checks multi-head attention, with and without the causal
// mask, against attentionRef. Error model: the value path is three
// contractions (Wv, P·V, Wo), each ≤ (4 + narrow(K))·u of its absolute
// sum, which attentionRef returns as scale; the score path perturbs P by
// a relative ≤ (8 + narrow(dh) + narrow(D))·u·max|s|-class amount. Together
// tol = 2·(12 + narrow(D) + narrow(T) + narrow(D))·u·scale + the same
// relative amount of the score path; a factor 2 covers the score path for
// scores of order 1 (these weights give |s| ≲ 4).
func TestAttention(t *testing.T) {
	const d, tok, heads = 64, 24, 4
	rng := rand.New(rand.NewPCG(21, 22))
	w := attentionWeights(rng, "attn.", d, 1/math.Sqrt(d))
	x := randn(rng, d*tok, 1)
	for _, causal := range []bool{false, true} {
		want, scale := attentionRef(x, d, tok, heads, w, causal)
		for _, dev := range devices {
			g := dataflow.New()
			xv := g.Input("x", dataflow.Shape{1, d, 1, tok})
			g.Output("y", nn.Attention(g, xv, w, nn.AttentionOptions{Heads: heads, Causal: causal}))
			inputs := map[string][]float64{"x": x}
			got := run(t, open(t, dev), g, inputs)["y"]
			tol := make([]float64, len(want))
			for i := range tol {
				tol[i] = 2 * 2 * (12 + 2*narrowK(dev, d) + narrowK(dev, tok)) * u16 * scale[i]
			}
			requireClose(t, got, want, tol, dev)
			// The graph's own float64 evaluation (mask value −2¹⁵ instead
			// of leaving the keys out) agrees with the explicit reference
			// up to the weights nn flushed below fp16's normal range
			// (each row loses at most u of its L1 norm: ≤ u·scale per
			// projection, three on the value path).
			ev := eval(t, g, inputs)["y"]
			etol := make([]float64, len(want))
			for i := range etol {
				etol[i] = 3 * u16 * scale[i]
			}
			requireClose(t, ev, want, etol, "eval")
		}
	}
}

// TestAttentionLargeLogits: query and key weights 64 times larger make
// scores of several hundred (exp would overflow fp16 beyond 11): the max
// subtraction and the finite mask keep the softmax exact to fp16, and the
// causal rows that see one key only (row 0) stay exactly that key's value.
func TestAttentionLargeLogits(t *testing.T) {
	const d, tok, heads = 32, 16, 2
	rng := rand.New(rand.NewPCG(23, 24))
	w := attentionWeights(rng, "a.", d, 1/math.Sqrt(d))
	for _, p := range []*nn.Dense{&w.Q, &w.K} {
		for i := range p.W.Data {
			p.W.Data[i] *= 8
		}
	}
	x := randn(rng, d*tok, 1)
	want, scale := attentionRef(x, d, tok, heads, w, true)
	for _, dev := range devices {
		g := dataflow.New()
		g.Output("y", nn.Attention(g, g.Input("x", dataflow.Shape{1, d, 1, tok}), w, nn.AttentionOptions{Heads: heads, Causal: true}))
		got := run(t, open(t, dev), g, map[string][]float64{"x": x})["y"]
		for _, v := range got {
			require.False(t, math.IsNaN(v) || math.IsInf(v, 0))
		}
		// Scores of size |s| ≲ 300 carry rounding u·300 ≈ 0.15 in the
		// exponent: P moves by up to 15% relative where rows are not
		// one-hot. Bound: 0.3·scale (the value path's magnitude).
		tol := make([]float64, len(want))
		for i := range tol {
			tol[i] = 0.3 * scale[i]
		}
		requireClose(t, got, want, tol, dev)
		require.Greater(t, cosine(got, want), 0.99, dev)
	}
}
