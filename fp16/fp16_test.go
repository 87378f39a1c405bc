package fp16

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// TestFromFloat32MatchesReference compares every fp16 value, the midpoints
// between neighbours and random float32s with x448/float16's RNE conversion.
func TestFromFloat32MatchesReference(t *testing.T) {
	check := func(x float32) {
		want := uint16(float16.Fromfloat32(x))
		got := uint16(FromFloat32(x))
		if float16.Frombits(want).IsNaN() {
			require.True(t, Bits(got).IsNaN(), "x=%g", x)
			return
		}
		require.Equal(t, want, got, "x=%g (%#x)", x, math.Float32bits(x))
		if r := Round32(x); !(math.IsNaN(float64(r))) {
			require.Equal(t, Bits(want).Float32(), r, "Round32(%g)", x)
		}
	}
	for h := 0; h < 0x7c00; h++ {
		lo := Bits(h).Float32()
		hi := Bits(h + 1).Float32()
		mid := float32((float64(lo) + float64(hi)) / 2) // exact in float32
		for _, x := range []float32{lo, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(x)
			check(-x)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		check(math.Float32frombits(rng.Uint32()))
	}
}

func TestRoundTripAndSpecials(t *testing.T) {
	for h := range 0x10000 {
		b := Bits(h)
		if b.IsNaN() {
			require.True(t, math.IsNaN(b.Float64()))
			continue
		}
		require.Equal(t, b, FromFloat64(b.Float64()), "bits %#x", h)
	}
	require.True(t, FromFloat64(65519.99).Float64() == MaxValue)
	require.True(t, FromFloat64(65520).IsInf(), "65520 rounds to even, which is 2¹⁶: Inf")
	require.True(t, math.IsInf(float64(Round32(65504*2)), 1))
	require.True(t, math.IsInf(float64(Round32(-70000)), -1))
	require.Equal(t, MinSubnormal, FromFloat64(MinSubnormal).Float64())
	require.Equal(t, 0.0, FromFloat64(MinSubnormal/2).Float64(), "tie at half the smallest subnormal goes to even (zero)")
	require.Equal(t, float32(1+Epsilon), Round32(1+UnitRoundoff*1.01))
	require.Equal(t, float32(1), Round32(1+UnitRoundoff), "tie goes to even")
}

func TestEncodeDecode(t *testing.T) {
	xs := []float32{0, 1, -2.5, 65504, 0x1p-24, 1.0 / 3}
	buf := Encode(nil, xs)
	require.Len(t, buf, 12)
	require.Equal(t, []byte{0x00, 0x3c}, buf[2:4], "1.0 is 0x3c00, little-endian")
	got := make([]float32, len(xs))
	Decode(got, buf)
	for i, x := range xs {
		require.Equal(t, Round32(x), got[i])
	}
}

// TestRoundAway: on every midpoint between neighbouring fp16 values (and
// their negatives) RoundAway takes the one farther from zero; off the
// midpoints, and on the fp16 values themselves, it agrees with Round64.
// The midpoint above 65504 overflows to ±Inf.
func TestRoundAway(t *testing.T) {
	for h := 0; h < 0x7bff; h++ {
		lo, hi := Bits(h).Float64(), Bits(h+1).Float64()
		mid := (lo + hi) / 2
		for _, s := range []float64{1, -1} {
			require.Equal(t, s*hi, RoundAway(s*mid), "tie %g", s*mid)
			require.Equal(t, s*lo, RoundAway(s*lo))
			for _, x := range []float64{math.Nextafter(mid, 0), math.Nextafter(mid, 1e9)} {
				require.Equal(t, Round64(s*x), RoundAway(s*x), "x = %g", s*x)
			}
		}
	}
	require.True(t, math.IsInf(RoundAway(65520), 1))
	require.Equal(t, 65504.0, RoundAway(65519.99))
	require.True(t, math.IsNaN(RoundAway(math.NaN())))
	require.Equal(t, 0.0, RoundAway(0))
}
