package fp16

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The vector conversions must give FromFloat64's and Float64's bits exactly,
// on every class of value: normals, ties, subnormals, the overflow edge,
// ±Inf and NaN.
func TestVectorConversionsMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var xs []float64
	for range 20000 {
		xs = append(xs, rng.NormFloat64()*math.Ldexp(1, rng.IntN(50)-30))
	}
	for h := range 1 << 16 { // every fp16 value, and the midpoints above it (ties)
		v := Bits(h).Float64()
		next := Bits(h + 1).Float64()
		xs = append(xs, v)
		if !math.IsNaN(v) && !math.IsInf(v, 0) && !math.IsNaN(next) && !math.IsInf(next, 0) && h&0x7fff != 0x7fff {
			xs = append(xs, (v+next)/2)
		}
	}
	xs = append(xs, 65503.9, 65504, 65519.99, 65520, -65520, 1e300, -1e-300, math.Inf(1), math.NaN(), 0, math.Copysign(0, -1))
	exps := []int{0, -3, 7, -1074, 1100}
	if testing.Short() {
		exps = []int{0, 1100} // the exact-scale path and the Ldexp one
	}
	for _, exp := range exps {
		dst := make([]uint16, len(xs))
		bad := EncodeScaled(dst, xs, exp)
		first := -1
		for i, x := range xs {
			want := FromFloat64(math.Ldexp(x, exp))
			require.Equal(t, uint16(want), dst[i], "EncodeScaled(%v, %d)", x, exp)
			if first < 0 && (want.IsInf() || want.IsNaN()) {
				first = i
			}
		}
		require.Equal(t, first, bad, "first non-finite at exp %d", exp)
		// The complex form: xs as real parts, xs reversed as imaginary.
		cs := make([]complex128, len(xs))
		for i := range xs {
			cs[i] = complex(xs[i], xs[len(xs)-1-i])
		}
		re, im := make([]uint16, len(cs)), make([]uint16, len(cs))
		bad = EncodeComplexScaled(re, im, cs, exp)
		first = -1
		for i, c := range cs {
			wr, wi := FromFloat64(math.Ldexp(real(c), exp)), FromFloat64(math.Ldexp(imag(c), exp))
			require.Equal(t, uint16(wr), re[i], "EncodeComplexScaled real(%v), %d", c, exp)
			require.Equal(t, uint16(wi), im[i], "EncodeComplexScaled imag(%v), %d", c, exp)
			if first < 0 && (wr.IsInf() || wr.IsNaN() || wi.IsInf() || wi.IsNaN()) {
				first = i
			}
		}
		require.Equal(t, first, bad, "EncodeComplexScaled: first non-finite at exp %d", exp)
	}
	f32 := make([]float32, len(xs))
	for i, x := range xs {
		f32[i] = float32(x)
	}
	// EncodeScaled32 on float32 values of every class, the ties and their
	// float32 neighbours included, at exponents on its fast path (where
	// 2^exp is a float32) and beyond it.
	var ys []float32
	for _, v := range f32 {
		ys = append(ys, v, math.Nextafter32(v, float32(math.Inf(1))), math.Nextafter32(v, float32(math.Inf(-1))))
	}
	ys = append(ys, math.SmallestNonzeroFloat32, -math.MaxFloat32, 1e-40, 3e38)
	for _, exp := range []int{0, -3, 7, -100, 100, -101, 140} {
		dst := make([]uint16, len(ys))
		bad := EncodeScaled32(dst, ys, exp)
		first := -1
		for i, y := range ys {
			want := FromFloat64(math.Ldexp(float64(y), exp))
			if uint16(want) != dst[i] {
				t.Fatalf("EncodeScaled32(%v, %d) = %#04x, want %#04x", y, exp, dst[i], uint16(want))
			}
			if first < 0 && (want.IsInf() || want.IsNaN()) {
				first = i
			}
		}
		require.Equal(t, first, bad, "EncodeScaled32: first non-finite at exp %d", exp)
	}
	dst := make([]uint16, len(xs))
	EncodeFloat32(dst, f32)
	for i, x := range f32 {
		require.Equal(t, uint16(FromFloat32(x)), dst[i], "EncodeFloat32(%v)", x)
	}
	all := make([]uint16, 1<<16)
	for h := range all {
		all[h] = uint16(h)
	}
	d64 := make([]float64, len(all))
	d32 := make([]float32, len(all))
	DecodeScaled(d64, all, 5)
	DecodeFloat32(d32, all)
	for h := range all {
		want := Bits(h).Float64()
		if math.IsNaN(want) {
			require.True(t, math.IsNaN(d64[h]) && math.IsNaN(float64(d32[h])), "%#04x", h)
			continue
		}
		require.Equal(t, math.Ldexp(want, 5), d64[h], "%#04x", h)
		require.Equal(t, float32(want), d32[h], "%#04x", h)
	}
	require.Equal(t, 2, Finite([]uint16{0, 0x3c00, 0x7c00, 0x7e00}))
	require.Equal(t, -1, Finite([]uint16{0, 0x7bff, 0xfbff}))
}

// Round64's bit-level fast path must give FromFloat64(x).Float64() for
// every class of value, ties and the overflow edge included.
func TestRound64MatchesBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	xs := []float64{0, math.Copysign(0, -1), 65503.9, 65504, 65519.99, 65520, -65520, 1e300, -1e-300, math.Inf(-1), MinNormal, -MinNormal * (1 - 0x1p-30)}
	for h := range 1 << 16 {
		v, next := Bits(h).Float64(), Bits(h+1).Float64()
		xs = append(xs, v)
		if h&0x7fff < 0x7bff {
			xs = append(xs, (v+next)/2, math.Nextafter((v+next)/2, math.Inf(1)), math.Nextafter((v+next)/2, math.Inf(-1)))
		}
	}
	for range 100000 {
		xs = append(xs, rng.NormFloat64()*math.Ldexp(1, rng.IntN(50)-30))
	}
	for _, x := range xs {
		got, want := Round64(x), FromFloat64(x).Float64()
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Round64(%v) = %v, want %v", x, got, want)
		}
	}
	require.True(t, math.IsNaN(Round64(math.NaN())))
}

// ScaleInPlace must give FromFloat64(v·2^exp) for every fp16 v and every
// scale that moves it across the subnormal and overflow edges.
func TestScaleInPlace(t *testing.T) {
	all := make([]uint16, 1<<16)
	for exp := -40; exp <= 40; exp++ {
		for i := range all {
			all[i] = uint16(i)
		}
		bad := ScaleInPlace(all, exp)
		first := -1
		for i, got := range all {
			want := FromFloat64(math.Ldexp(Bits(i).Float64(), exp))
			if want.IsNaN() {
				if !Bits(got).IsNaN() {
					t.Fatalf("ScaleInPlace(%#04x, %d) = %#04x, want a NaN", i, exp, got)
				}
			} else if got != uint16(want) {
				t.Fatalf("ScaleInPlace(%#04x, %d) = %#04x, want %#04x", i, exp, got, uint16(want))
			}
			if first < 0 && (want.IsInf() || want.IsNaN()) {
				first = i
			}
		}
		require.Equal(t, first, bad, "first non-finite at exp %d", exp)
	}
}

// DecodeTimes must give every finite fp16's exact value times 2^e, across
// the exponents its callers use.
func TestDecodeTimes(t *testing.T) {
	for _, e := range []int{-999, -200, -24, 0, 7, 112, 899} {
		f := DecodeScale(math.Ldexp(1, e))
		for h := range 1 << 16 {
			v := Bits(h).Float64()
			if math.IsInf(v, 0) || math.IsNaN(v) {
				continue
			}
			if got, want := DecodeTimes(uint16(h), f), math.Ldexp(v, e); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("DecodeTimes(%#04x, 2^%d) = %v, want %v", h, e, got, want)
			}
		}
	}
}
