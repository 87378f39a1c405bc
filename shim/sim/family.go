package sim

import (
	"math"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
)

// The family variants ("sim-m1", "sim-m3", "sim-m5") reproduce what one
// engine family is reported to do differently inside matmul and conv
// (engine.Target): products rounded with ties away from zero, subnormal
// products flushed in the multiply-accumulate, a sum reaching 2¹⁵ returned
// as zero instead of ±Inf, and a matmul whose contraction is not a
// multiple of InnerMultiple returning zeros. Their kernels are plain loops
// over the model — products rounded one by one and summed in float32 in
// their natural order — without the default device's fast paths.

// macRules are a target's multiply-accumulate rules.
type macRules struct {
	tiesAway, flushSub, zeroAt2e15 bool
	innerMultiple                  int
}

func rulesOf(t engine.Target) macRules {
	return macRules{
		tiesAway:      t.Rounding == engine.TiesAway,
		flushSub:      t.FlushSubnormalProducts,
		zeroAt2e15:    t.PartialSumZero,
		innerMultiple: t.InnerMultiple,
	}
}

// changesSums reports rules under which the default kernels' products or
// sums would differ.
func (r macRules) changesSums() bool { return r.tiesAway || r.flushSub || r.zeroAt2e15 }

// product rounds a·b (fp16 values, so a·b is exact in float64) as the
// MAC does.
func (r macRules) product(a, b float32) float32 {
	p := float64(a) * float64(b)
	var h float64
	if r.tiesAway {
		h = fp16.RoundAway(p)
	} else {
		h = float64(r16(float32(p))) // a·b has at most 22 significant bits: exact in float32
	}
	if r.flushSub && math.Abs(h) < minNormal {
		h = 0
	}
	return float32(h)
}

// dot sums the rounded products of x and y (strides sx, sy) in float32 in
// their natural order and rounds the result as the output rule says.
func (r macRules) dot(x []float32, sx int, y []float32, sy int, k int) float32 {
	var s float32
	for i := range k {
		s += r.product(x[i*sx], y[i*sy])
		if r.zeroAt2e15 && (s >= 32768 || s <= -32768) {
			return 0
		}
	}
	return r.output(s)
}

// output rounds an accumulated sum: ±Inf past the cliff, else fp16 by the
// target's rounding.
func (r macRules) output(s float32) float32 {
	if a := math.Abs(float64(s)); a > matmulCliff && !math.IsInf(a, 0) {
		return float32(math.Copysign(math.Inf(1), float64(s)))
	}
	if r.tiesAway {
		return float32(fp16.RoundAway(float64(s)))
	}
	return r16(s)
}

// familyMatmul is the matmul kernel of a family variant: out (batch × m ×
// n) from x and y at the batch offsets, each output a dot of k rounded
// products. A contraction that breaks the inner-multiple rule gives zeros.
func familyMatmul(r macRules, m, n, k int, tx, ty bool, xs, ys int, xoffs, yoffs []int) kernel {
	return func(b [][]float32, out []float32, _ bool) {
		X, Y := b[xs], b[ys]
		if r.innerMultiple > 1 && k%r.innerMultiple != 0 {
			clear(out)
			return
		}
		for bi := range xoffs {
			A, B := X[xoffs[bi]:], Y[yoffs[bi]:]
			C := out[bi*m*n : (bi+1)*m*n]
			for i := range m {
				for j := range n {
					// x is m×k (k×m when transposed), y k×n (n×k).
					xa, sx := A[i*k:], 1
					if tx {
						xa, sx = A[i:], m
					}
					yb, sy := B[j:], n
					if ty {
						yb, sy = B[j*k:], 1
					}
					C[i*n+j] = r.dot(xa, sx, yb, sy, k)
				}
			}
		}
	}
}

// innerRule wraps a default matmul kernel with the inner-multiple rule
// alone (M1: its products and sums are the default model's).
func innerRule(r macRules, k int, run kernel) kernel {
	if r.innerMultiple <= 1 || k%r.innerMultiple == 0 {
		return run
	}
	return func(_ [][]float32, out []float32, _ bool) { clear(out) }
}

// familyConv is the conv kernel of a family variant: each output a dot of
// the weight row with the input patch (zeros in the padding), in the order
// input channel, kernel row, kernel column; the bias added to the rounded
// output as an fp16 add.
func familyConv(r macRules, g *convGeom, x, w, bias, out []float32) {
	cig, cog := g.ci/g.groups, g.co/g.groups
	kc := cig * g.kh * g.kw
	npos := g.oh * g.ow
	patch := make([]float32, kc)
	for img := range g.n {
		for grp := range g.groups {
			for p := range npos {
				im2col(g, x, img, grp*cig, cig, p, 1, patch)
				for co := grp * cog; co < (grp+1)*cog; co++ {
					v := r.dot(w[co*kc:], 1, patch, 1, kc)
					if bias != nil {
						v = mmRound(v + bias[co])
					}
					out[(img*g.co+co)*npos+p] = v
				}
			}
		}
	}
}
