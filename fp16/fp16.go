package fp16

import "math"

// Bits is the binary16 encoding of a value.
type Bits uint16

const (
	// MaxValue is the largest finite fp16 value, 65504.
	MaxValue = 65504.0
	// MinNormal is the smallest positive normal fp16 value, 2⁻¹⁴.
	MinNormal = 0x1p-14
	// MinSubnormal is the smallest positive fp16 value, 2⁻²⁴.
	MinSubnormal = 0x1p-24
	// UnitRoundoff is u = 2⁻¹¹, half the distance from 1 to the next fp16.
	UnitRoundoff = 0x1p-11
	// Epsilon is the distance from 1 to the next fp16, 2⁻¹⁰.
	Epsilon = 0x1p-10
	// overflowBound is the smallest magnitude that rounds to Inf:
	// halfway between MaxValue and 2¹⁶, ties to even go up.
	overflowBound = 65520.0
)

// FromFloat64 rounds x to the nearest fp16, ties to even.
func FromFloat64(x float64) Bits {
	b := math.Float64bits(x)
	sign := Bits(b>>48) & 0x8000
	a := math.Abs(x)
	switch {
	case a != a: // NaN
		return sign | 0x7e00
	case a >= overflowBound:
		return sign | 0x7c00
	case a < MinNormal:
		// Subnormal or zero: the value is m·2⁻²⁴ with m in [0, 1024].
		// Scaling by 2²⁴ is exact, and RoundToEven rounds m once.
		m := math.RoundToEven(a * 0x1p24)
		return sign | Bits(m)
	}
	// Normal: keep 10 fraction bits of the 52, round to nearest even.
	e := int(b>>52&0x7ff) - 1023 // in [-14, 15]
	frac := b & (1<<52 - 1)
	const drop = 52 - 10
	m := frac >> drop
	rest := frac & (1<<drop - 1)
	half := uint64(1) << (drop - 1)
	if rest > half || (rest == half && m&1 == 1) {
		m++
	}
	v := uint64(e+15)<<10 + m // a carry out of m bumps the exponent, as it should
	if v >= 0x7c00 {
		return sign | 0x7c00
	}
	return sign | Bits(v)
}

// FromFloat32 rounds x to the nearest fp16, ties to even.
// Converting float32 to float64 is exact, so this rounds once.
func FromFloat32(x float32) Bits { return FromFloat64(float64(x)) }

// Float64 returns the exact value of h.
func (h Bits) Float64() float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return sign * m * 0x1p-24
	case 0x1f:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

// Float32 returns the exact value of h.
func (h Bits) Float32() float32 { return float32(h.Float64()) }

// IsInf reports whether h is an infinity.
func (h Bits) IsInf() bool { return h&0x7fff == 0x7c00 }

// IsNaN reports whether h is a NaN.
func (h Bits) IsNaN() bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }

// RoundAway returns the value of the fp16 nearest to x with ties rounded
// away from zero (the rounding reported inside the M3 and M5 engines'
// multiply-accumulate), as a float64; overflow is ±Inf, NaN stays NaN.
func RoundAway(x float64) float64 {
	a := math.Abs(x)
	if a != a || a == 0 {
		return x
	}
	if a >= 65520 { // the tie between 65504 and 2¹⁶ goes away: Inf
		return math.Copysign(math.Inf(1), x)
	}
	e := max(math.Ilogb(a), -14) // subnormals share the exponent of the smallest normal
	ulp := math.Ldexp(1, e-10)
	return math.Copysign(math.Round(a/ulp)*ulp, x) // a/ulp is exact; Floor(a/ulp+0.5) would round 0.5−2⁻⁵⁴ up
}

// Round64 returns the value of the fp16 nearest to x (ties to even), as a float64.
func Round64(x float64) float64 {
	// Where the result is an fp16 normal, round x's significand to 11
	// bits on its bits, as encodeNormal does, and keep the exponent.
	b := math.Float64bits(x)
	if a := b &^ (1 << 63); a-0x3f10000000000000 < 0x40effe0000000000-0x3f10000000000000 {
		return math.Float64frombits(b&(1<<63) | (a+(1<<41-1)+(a>>42&1))&^(1<<42-1))
	}
	return FromFloat64(x).Float64()
}

// Round32 returns the value of the fp16 nearest to x (ties to even), as a float32.
// It is the hot path of the simulator, so it avoids the bit-level conversion for
// values in the normal range: adding and subtracting a power of two rounds
// the float32 significand to fp16's 11 bits in the current rounding mode (to
// nearest even), in three flops.
func Round32(x float32) float32 {
	a := x
	if a < 0 {
		a = -a
	}
	if a >= MinNormal && a < overflowBound {
		// c = 2^(e+13) where 2^e ≤ a: (x + c) − c keeps 11 significant bits.
		// Veltkamp's splitter does the same without reading the exponent:
		// t = x·(2¹³+1); hi = t − (t − x) rounds x to 24−13 = 11 bits.
		// The explicit conversions force each product and difference to
		// round to float32: without them the compiler may fuse the
		// expression into fused multiply-adds (it does on arm64), and
		// then hi == x.
		t := float32(x * 8193)
		hi := t - float32(t-x)
		if hi >= -MaxValue && hi <= MaxValue {
			return hi
		}
		return float32(math.Inf(int(sign32(x))))
	}
	return FromFloat32(x).Float32()
}

func sign32(x float32) float32 {
	if x < 0 {
		return -1
	}
	return 1
}

// Encode appends the fp16 encodings of xs, little-endian, to dst.
func Encode(dst []byte, xs []float32) []byte {
	for _, x := range xs {
		h := FromFloat32(x)
		dst = append(dst, byte(h), byte(h>>8))
	}
	return dst
}

// Decode reads little-endian fp16 values from src into dst, which must have
// len(src)/2 elements.
func Decode(dst []float32, src []byte) {
	for i := range dst {
		dst[i] = Bits(uint16(src[2*i]) | uint16(src[2*i+1])<<8).Float32()
	}
}
