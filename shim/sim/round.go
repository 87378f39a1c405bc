package sim

import (
	"math"

	"github.com/anemone-go/anemone/fp16"
)

// Bounds of the fast rounding path. A float32 x with minNormal ≤ |x| <
// overflowBound rounds to fp16 by Veltkamp's splitting: t = x·(2¹³+1),
// hi = t − (t − x) keeps the 24−13 = 11 leading significant bits of x, rounded
// to nearest even, which is fp16's precision for normal numbers. Below
// minNormal fp16 has fewer bits (subnormals) and at overflowBound it rounds to
// Inf: those take fp16.Round32's exact path.
const (
	minNormal     = fp16.MinNormal
	overflowBound = 65520 // the smallest magnitude that rounds to Inf
	maxHalf       = fp16.MaxValue

	// The float32 bit patterns of minNormal and overflowBound, for a range
	// check on |x|'s bits: bits(|x|) − minNormalBits < fastSpan.
	minNormalBits = 0x38800000
	overflowBits  = 0x477ff000
	fastSpan      = overflowBits - minNormalBits
)

// r16 rounds x to the nearest fp16 (ties to even), as fp16.Round32 does.
// The explicit float32 conversions keep the compiler from fusing the split
// into a multiply-add on targets that have one.
func r16(x float32) float32 {
	if math.Float32bits(x)&0x7fffffff-minNormalBits < fastSpan {
		return split(x)
	}
	return r16slow(x)
}

//go:noinline
func r16slow(x float32) float32 {
	if x == 0 {
		return x
	}
	return fp16.Round32(x)
}

// split rounds x to 11 significant bits without a range check: r16 for
// minNormal ≤ |x| < overflowBound, and exact for x = 0 and for any x with at
// most 11 significant bits (so for the sum of two fp16 values whose magnitude
// is below minNormal, which is a multiple of 2⁻²⁴ and so exact).
func split(x float32) float32 {
	t := float32(x * 8193)
	return t - float32(t-x)
}

// isHalfFinite reports whether x (an fp16 value) is finite.
func isHalfFinite(x float32) bool { return x >= -maxHalf && x <= maxHalf }

// round64 rounds a float64 to the nearest fp16, as a float32.
func round64(x float64) float32 { return float32(fp16.Round64(x)) }
