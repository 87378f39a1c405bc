package sim

import (
	"github.com/anemone-go/anemone/engine"
	"math"

	"github.com/anemone-go/anemone/fp16"
)

// Bounds of the rounding paths. A float32 x with minNormal ≤ |x| <
// overflowBound rounds to fp16 by Veltkamp's splitting: t = x·(2¹³+1),
// hi = t − (t − x) keeps the 24−13 = 11 leading significant bits of x, rounded
// to nearest even, which is fp16's precision for normal numbers. Below
// minNormal fp16 has fewer bits (subnormals) and at overflowBound it rounds to
// Inf: r16 handles every case, the split only the normal range (and zero).
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

// r16 rounds x to the nearest fp16 (ties to even), bit for bit as
// fp16.Round32 does. Below overflowBound it adds and subtracts c =
// 1.5·2^(E+13), E the larger of x's exponent and −14, as roundSum does
// (subnormals included, without a branch), and gives a zero result x's
// sign; from overflowBound on the result is ±Inf, and a NaN becomes the NaN
// Round32 returns (float32(math.NaN())). The explicit float32 conversion
// keeps the compiler from fusing an operation into the add on targets that
// have fused multiply-adds.
func r16(x float32) float32 {
	b := math.Float32bits(x)
	if b&0x7fffffff < overflowBits {
		c := math.Float32frombits(max(b&0x7f800000, minNormalBits) + (13<<23 | 1<<22))
		return math.Float32frombits(math.Float32bits(float32(x+c)-c) | b&(1<<31))
	}
	if b&0x7fffffff > 0x7f800000 {
		return math.Float32frombits(nanBits)
	}
	return math.Float32frombits(b&(1<<31) | 0x7f800000)
}

// nanBits is the float32 NaN fp16.Round32 returns for every NaN.
const nanBits = 0x7fc00000

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

// The engine's correctness cliffs below fp16's range (the package doc,
// "Cliffs").
const (
	// matmulCliff: a matmul or conv whose accumulated sum exceeds it in
	// magnitude returns ±Inf. It is fp16's largest value halved, itself an
	// fp16 value (the largest below 2¹⁵).
	matmulCliff = engine.Cliff
	// sliceCliff: a slice at a nonzero last-axis offset turns inputs above
	// it in magnitude into ±Inf, on targets with lower.Target.WidthSliceClamp.
	sliceCliff = engine.SliceClamp

	matmulCliffBits = 0x46ffe000 // the float32 bits of matmulCliff
	sliceCliffBits  = 0x457fe000 // the float32 bits of sliceCliff
	infBits         = 0x7f800000
)

// mmRound is the last step of every matmul and conv output: s is the
// accumulated sum (float32 under Wide, an fp16 value under Narrow). When
// |s| > matmulCliff the result is ±Inf with s's sign, otherwise s rounded
// to fp16; a NaN stays NaN. Under Narrow s is an fp16 value and the rule
// reads |s| ≥ 32768.
func mmRound(s float32) float32 {
	b := math.Float32bits(s)
	if a := b & 0x7fffffff; a > matmulCliffBits && a <= infBits {
		return math.Float32frombits(b&(1<<31) | infBits)
	}
	return r16(s)
}

// clampSlice is the width-slice clamp: ±Inf for |x| > sliceCliff, x
// otherwise (NaN included).
func clampSlice(x float32) float32 {
	b := math.Float32bits(x)
	if a := b & 0x7fffffff; a > sliceCliffBits && a < infBits {
		return math.Float32frombits(b&(1<<31) | infBits)
	}
	return x
}
