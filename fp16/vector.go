package fp16

import "math"

// The vector conversions below are the host's side of every dispatch: one
// pass over the data, rounding and range check together. They give the
// same bits as FromFloat64 and Bits.Float64 element by element.

// EncodeScaled writes the fp16 encoding of src[i]·2^exp to dst[i] (rounded
// once, to nearest even) for i < len(dst), and returns the index of the
// first value that rounds to ±Inf or is NaN, or −1 when every value fits.
// Values are written either way. len(src) must be at least len(dst).
func EncodeScaled(dst []uint16, src []float64, exp int) int {
	src = src[:len(dst)]
	scale := math.Ldexp(1, exp)
	exact := exp > -1000 && exp < 1000 // 2^exp is a normal float64
	bad := -1
	for i, v := range src {
		// v·2^exp is exact unless it leaves float64's normal range, where
		// fp16 rounds it to 0 or ±Inf anyway.
		x := v * scale
		if !exact {
			x = math.Ldexp(v, exp)
		}
		h, ok := encodeNormal(x)
		if !ok {
			h = encodeOther(x)
		}
		dst[i] = h
		if bad < 0 && h&0x7c00 == 0x7c00 {
			bad = i
		}
	}
	return bad
}

// EncodeComplexScaled is EncodeScaled for complex sources, their parts
// written apart: re[i] and im[i] are the fp16 encodings of real(src[i])·2^exp
// and imag(src[i])·2^exp, for i < len(re) (len(im) and len(src) at least
// that). It returns the first i whose either part rounds to ±Inf or is NaN,
// or −1.
func EncodeComplexScaled(re, im []uint16, src []complex128, exp int) int {
	src, im = src[:len(re)], im[:len(re)]
	scale := math.Ldexp(1, exp)
	exact := exp > -1000 && exp < 1000
	bad := -1
	for i, v := range src {
		x, y := real(v)*scale, imag(v)*scale
		if !exact {
			x, y = math.Ldexp(real(v), exp), math.Ldexp(imag(v), exp)
		}
		hr, ok := encodeNormal(x)
		if !ok {
			hr = encodeOther(x)
		}
		hi, ok := encodeNormal(y)
		if !ok {
			hi = encodeOther(y)
		}
		re[i], im[i] = hr, hi
		if bad < 0 && (hr&0x7c00 == 0x7c00 || hi&0x7c00 == 0x7c00) {
			bad = i
		}
	}
	return bad
}

// encodeOther is uint16(FromFloat64(x)) off encodeNormal's range, ±0
// (common: sparse operands) first.
func encodeOther(x float64) uint16 {
	if x == 0 {
		return uint16(math.Float64bits(x) >> 48)
	}
	return uint16(FromFloat64(x))
}

// encodeNormal is uint16(FromFloat64(x)) where the result is an fp16
// normal (ok): |x| in [2⁻¹⁴, 65520), the top rounding to 65504 at most.
// It rounds on x's bits: adding 2⁴¹ − 1 plus the kept lowest bit rounds
// the 42 dropped bits to nearest even, a carry moving into the exponent as
// it should. Small enough to inline; callers fall back to FromFloat64.
func encodeNormal(x float64) (h uint16, ok bool) {
	b := math.Float64bits(x)
	a := b &^ (1 << 63)
	return uint16(b>>48&0x8000 | ((a+(1<<41-1)+(a>>42&1))>>42 - (1023-15)<<10)),
		a-0x3f10000000000000 < 0x40effe0000000000-0x3f10000000000000
}

// EncodeScaled32 is EncodeScaled for float32 sources: dst[i] is the fp16
// encoding of src[i]·2^exp, rounded once, the same bits as
// FromFloat64(float64(src[i])·2^exp).
func EncodeScaled32(dst []uint16, src []float32, exp int) int {
	src = src[:len(dst)]
	if exp < -100 || exp > 100 {
		// 2^exp may not be a float32, or the product may leave float32's
		// normal range before fp16's: the float64 path, element by element.
		bad := -1
		for i, v := range src {
			h := FromFloat64(math.Ldexp(float64(v), exp))
			dst[i] = uint16(h)
			if bad < 0 && (h.IsInf() || h.IsNaN()) {
				bad = i
			}
		}
		return bad
	}
	scale := float32(math.Ldexp(1, exp))
	bad := -1
	for i, v := range src {
		// v·2^exp is exact wherever the result is an fp16 normal (a
		// float32 normal too), rounded there as in EncodeScaled.
		f := math.Float32bits(v * scale)
		if a := f &^ (1 << 31); a-0x38800000 < 0x477ff000-0x38800000 {
			dst[i] = uint16(f>>16&0x8000 | ((a+0x0fff+(a>>13&1))>>13 - (127-15)<<10))
			continue
		}
		if v == 0 {
			dst[i] = uint16(math.Float32bits(v) >> 16)
			continue
		}
		h := FromFloat64(math.Ldexp(float64(v), exp))
		dst[i] = uint16(h)
		if bad < 0 && (h.IsInf() || h.IsNaN()) {
			bad = i
		}
	}
	return bad
}

// DecodeScaled writes the value of src[i] times 2^exp to dst[i] for
// i < len(dst); ±Inf and NaN come through as such. len(src) must be at
// least len(dst).
func DecodeScaled(dst []float64, src []uint16, exp int) {
	src = src[:len(dst)]
	scale := math.Ldexp(1, exp)
	exact := exp > -1000 && exp < 1000
	for i, h := range src {
		v := decode32(h)
		if exact {
			dst[i] = float64(v) * scale
		} else {
			dst[i] = math.Ldexp(float64(v), exp)
		}
	}
}

// DecodeTimes returns the value of the finite fp16 h times scale, for
// f = DecodeScale(scale): h's sign, exponent and fraction moved into a
// float32's are its value times 2⁻¹¹² (a float32 subnormal for an fp16
// subnormal), so one product decodes and scales it, without a branch. It
// is exact when scale is a power of two and the result a float64 normal
// (for scale = 2^e: −1000 < e < 900, say); ±Inf and NaN encodings give
// wrong values, so callers check them first (Finite).
func DecodeTimes(h uint16, f float64) float64 {
	return float64(math.Float32frombits(uint32(h&0x8000)<<16|uint32(h&0x7fff)<<13)) * f
}

// DecodeScale is DecodeTimes' factor for scale: scale·2¹¹².
func DecodeScale(scale float64) float64 { return scale * 0x1p112 }

// EncodeFloat32 writes the fp16 encoding of src[i] to dst[i] and returns
// the index of the first value that rounds to ±Inf or is NaN, or −1.
func EncodeFloat32(dst []uint16, src []float32) int {
	src = src[:len(dst)]
	bad := -1
	for i, x := range src {
		a := x
		if a < 0 {
			a = -a
		}
		if a >= MinNormal && a < 65504 {
			// As in Round32: the explicit conversions keep the compiler
			// from fusing the splitter into multiply-adds.
			t := float32(x * 8193)
			h := t - float32(t-x)
			f := math.Float32bits(h)
			dst[i] = uint16(f>>16&0x8000 | ((f&0x7fffffff)>>13 - (127-15)<<10))
			continue
		}
		if x == 0 {
			dst[i] = uint16(math.Float32bits(x) >> 16)
			continue
		}
		h := FromFloat32(x)
		dst[i] = uint16(h)
		if bad < 0 && (h.IsInf() || h.IsNaN()) {
			bad = i
		}
	}
	return bad
}

// DecodeFloat32 writes the value of src[i] to dst[i].
func DecodeFloat32(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = decode32(h)
	}
}

// decode32 is the exact float32 value of h.
func decode32(h uint16) float32 {
	e := h >> 10 & 0x1f
	if e != 0 && e != 0x1f { // normal: rebias the exponent, widen the fraction
		return math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + (127-15)<<23))
	}
	return Bits(h).Float32()
}

// Finite reports the index of the first ±Inf or NaN encoding in src, or −1.
func Finite(src []uint16) int {
	for i, h := range src {
		if h&0x7c00 == 0x7c00 {
			return i
		}
	}
	return -1
}

// ScaleInPlace multiplies every fp16 in h by 2^exp, rounding once (to
// nearest even) where the product leaves the normal range: the bits of
// FromFloat64(Bits(h[i]).Float64()·2^exp). It returns the index of the
// first element that becomes ±Inf or is NaN, or −1. Normal values whose
// product stays normal only move their exponent field.
func ScaleInPlace(h []uint16, exp int) int {
	bad := -1
	for i, v := range h {
		if e := int(v>>10&0x1f) + exp; v&0x7c00 != 0 && v&0x7c00 != 0x7c00 && e >= 1 && e <= 30 {
			h[i] = uint16(int(v) + exp<<10)
			continue
		}
		if v&0x7fff == 0 {
			continue // ±0
		}
		w := FromFloat64(math.Ldexp(Bits(v).Float64(), exp))
		h[i] = uint16(w)
		if bad < 0 && (w.IsInf() || w.IsNaN()) {
			bad = i
		}
	}
	return bad
}
