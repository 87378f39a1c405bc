package selftest

import (
	"math"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
)

// The simulator's model of the device's target, as the probes' expected
// column states it. Every prediction below is computed from the target's
// fields (engine.Target: Accumulator, Rounding, FlushSubnormalProducts,
// PartialSumZero, InnerMultiple, MinSurfaceBytes, FlushSubnormals,
// TableError, WidthSliceClamp, PackedIO, CompileBudget), never from the
// device's name: on hardware the target is the chip family's, on the
// simulator the one its variant simulates.

// narrow reports whether the target's matmul/conv running sum is fp16.
func (e *env) narrow() bool { return e.t.Accumulator == engine.Narrow }

// modelDot is the model of a K-term dot product of v with ones inside a
// matmul or conv: modelDotVec's. (Its narrow branch once checked the last
// partial sum against the cliff before rounding it, which the simulator
// does not: 6 × 5460, whose fp16 running sum ends at 32756 → 32752, was
// modeled +Inf.)
func (e *env) modelDot(v float64, k int) float64 {
	return e.modelDotVec(repeat(k, v), nil)
}

// modelDotVec is the model of Σ x[i]·y[i] inside a matmul or conv on the
// device's target (y nil means ones). Wide: each product rounded to fp16
// by the target's Rounding (and flushed to zero when it is subnormal under
// FlushSubnormalProducts), summed in float32 in index order, zero as soon
// as the running sum reaches 2¹⁵ under PartialSumZero, ±Inf past the
// output cliff, the sum rounded to fp16 by the target's Rounding. Narrow:
// an fp16 running sum of products rounded to fp16, ±Inf past the cliff,
// and a subnormal result flushed under FlushSubnormals. The contraction's
// InnerMultiple rule is not here: the lowering pads every contraction to
// it, and the one probe that breaks it (innerDim) models it itself.
func (e *env) modelDotVec(x, y []float64) float64 {
	t := e.t
	round := fp16.Round64
	if t.Rounding == engine.TiesAway {
		round = fp16.RoundAway
	}
	if e.narrow() {
		var s16 float64
		for i, xi := range x {
			yi := 1.0
			if y != nil {
				yi = y[i]
			}
			s16 = fp16.Round64(s16 + fp16.Round64(xi*yi))
		}
		if math.Abs(s16) > cliff {
			return math.Copysign(math.Inf(1), s16)
		}
		if t.FlushSubnormals && math.Abs(s16) < fp16.MinNormal {
			return 0
		}
		return s16 // an fp16 value already
	}
	var s float32
	for i, xi := range x {
		yi := 1.0
		if y != nil {
			yi = y[i]
		}
		p := round(xi * yi) // fp16 operands: xi·yi is exact in float64
		if t.FlushSubnormalProducts && math.Abs(p) < fp16.MinNormal {
			p = 0
		}
		s += float32(p)
		if t.PartialSumZero && math.Abs(float64(s)) >= 1<<15 {
			return 0
		}
	}
	if a := math.Abs(float64(s)); a > cliff {
		return math.Copysign(math.Inf(1), float64(s))
	}
	return round(float64(s))
}

// innerZeros reports whether the target's matmul returns zeros for a
// contraction of k (InnerMultiple).
func (e *env) innerZeros(k int) bool {
	return e.t.InnerMultiple > 1 && k%e.t.InnerMultiple != 0
}

// surfaceRefused reports whether the target fails a surface of the given
// size in bytes (MinSurfaceBytes).
func (e *env) surfaceRefused(bytes int) bool {
	return e.t.MinSurfaceBytes > 0 && bytes < e.t.MinSurfaceBytes
}

// channels is the channel count of a [1, C, 1, w] fp16 surface that meets
// the target's MinSurfaceBytes: at least least, and more where the
// minimum asks for them. Probes pad their hand-built surfaces with such
// channels, each computing the same as the first, so that every family
// runs them; only surface-minimum-size hands the engine smaller ones.
func (e *env) channels(w, least int) int {
	c := (e.t.MinSurfaceBytes + 2*w - 1) / (2 * w)
	return max(c, least, 1)
}
