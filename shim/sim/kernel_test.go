package sim

import (
	"math"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/stretchr/testify/require"
)

// same reports bitwise-equal values, NaNs equal to each other.
func same(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func TestR16MatchesRound32(t *testing.T) {
	// Every fp16 value, the midpoints between neighbours and their float32
	// neighbours, and random float32s, through the inlined fast path.
	check := func(x float32) {
		require.True(t, same(fp16.Round32(x), r16(x)), "x = %g (%#x): r16 %g, Round32 %g", x, math.Float32bits(x), r16(x), fp16.Round32(x))
	}
	for h := 0; h < 0x7c00; h++ {
		lo, hi := fp16.Bits(h).Float32(), fp16.Bits(h+1).Float32()
		mid := float32((float64(lo) + float64(hi)) / 2)
		for _, x := range []float32{lo, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(x)
			check(-x)
		}
	}
	rng := newRNG(9)
	for range 100000 {
		check(math.Float32frombits(rng.Uint32()))
	}
	check(float32(math.Inf(1)))
	check(float32(math.NaN()))
}

// mixed returns fp16 values of every kind the kernels must handle: normal
// values of varied magnitude, zeros, values whose products are subnormal or
// overflow, and a few infinities and NaNs when specials is set.
func mixed(n int, seed uint64, specials bool) []float32 {
	rng := newRNG(seed)
	xs := make([]float32, n)
	for i := range xs {
		var v float64
		switch r := rng.IntN(20); {
		case r == 0:
			v = 0
		case r == 1:
			v = rng.NormFloat64() * 0x1p-9 // products with each other are subnormal
		case r == 2:
			v = rng.NormFloat64() * 300 // products with each other overflow
		case r == 3 && specials:
			v = math.Inf(1 - 2*rng.IntN(2))
		case r == 4 && specials && rng.IntN(4) == 0:
			v = math.NaN()
		default:
			v = rng.NormFloat64()
		}
		xs[i] = float32(fp16.Round64(v))
	}
	return xs
}

func TestDotBlockMatchesExact(t *testing.T) {
	// Every output of the blocked kernels, whichever path they take (fast
	// tile, checked tile, bail-out), equals dotExact bit for bit.
	cases := []struct {
		m, n, k  int
		specials bool
		scale    float32
	}{
		{7, 9, 33, false, 1},
		{8, 6, 50, true, 1},
		{5, 5, 200, false, 64},     // large partial sums: Narrow overflow
		{6, 4, 300, false, 0x1p-6}, // sums near the subnormal range
		{1, 1, 1, false, 1},
		{2, 3, 4096, false, 1},
	}
	for ci, c := range cases {
		a := mixed(c.m*c.k, uint64(10+ci), c.specials)
		b := mixed(c.n*c.k, uint64(20+ci), c.specials)
		for i := range a {
			a[i] = fp16.Round32(a[i] * c.scale)
		}
		ta, tb := smallThresholds(maxAbs(a), maxAbs(b))
		ao, bo := newOperand(c.m, c.k, a, c.k), newOperand(c.n, c.k, b, c.k)
		ao.markSmall(c.k, ta)
		bo.markSmall(c.k, tb)
		for _, narrow := range []bool{false, true} {
			got := make([]float32, c.m*c.n)
			dotBlock(c.m, c.n, c.k, ao, bo, got, c.n, narrow, nil)
			jobs := []gemmJob{{m: c.m, n: c.n, k: c.k, a: ao, b: bo, c: make([]float32, c.m*c.n), ldc: c.n}}
			runGemms(jobs, narrow)
			for i := range c.m {
				for j := range c.n {
					want := dotExact(a[i*c.k:(i+1)*c.k], b[j*c.k:(j+1)*c.k], narrow)
					require.True(t, same(want, got[i*c.n+j]), "case %d narrow %v (%d,%d): got %g want %g", ci, narrow, i, j, got[i*c.n+j], want)
					require.True(t, same(want, jobs[0].c[i*c.n+j]), "runGemms case %d narrow %v (%d,%d)", ci, narrow, i, j)
				}
			}
		}
	}
}

func TestSmallThresholds(t *testing.T) {
	// τ_A·τ_B = 2⁻¹⁴, so two elements that are not small multiply to at
	// least the smallest normal; the split follows the operands' scales.
	for _, c := range []struct{ a, b, ta, tb float64 }{
		{1, 1, 0x1p-7, 0x1p-7},
		{0x1p-6, 0x1p6, 0x1p-13, 0x1p-1},
		{0, 5, 0x1p-7, 0x1p-7},
		{math.Inf(1), 1, 0x1p-7, 0x1p-7},
		{0x1p-30, 0x1p30, 0x1p-14, 0x1p0},
	} {
		ta, tb := smallThresholds(c.a, c.b)
		require.Equal(t, float32(c.ta), ta, "%g %g", c.a, c.b)
		require.Equal(t, float32(c.tb), tb, "%g %g", c.a, c.b)
		require.Equal(t, 0x1p-14, float64(ta)*float64(tb))
	}
	o := newOperand(1, 70, append(append(make([]float32, 0, 70), 0, 0x1p-8, -0x1p-8, 0x1p-7), make([]float32, 66)...), 70)
	o.data[64], o.data[65], o.data[66] = -0x1p-24, float32(math.NaN()), float32(math.Inf(-1))
	o.markSmall(70, 0x1p-7)
	require.Equal(t, []uint64{0b110, 1}, o.mask, "0 is not small, ±2⁻⁸ and −2⁻²⁴ are, 2⁻⁷, NaN and Inf are not")
	require.Equal(t, 3.0, maxAbs([]float32{1, -3, 2}))
	require.True(t, math.IsInf(maxAbs([]float32{1, float32(math.NaN())}), 1))
}

func TestElementwiseCorrectlyRounded(t *testing.T) {
	// add, sub, mul and real_div in float32 followed by a rounding to fp16
	// equal the exact result rounded once (24 ≥ 2·11 + 2), and so does sqrt
	// through float64 and float32: checked on random pairs of fp16 values of
	// every magnitude (subnormals included) and on every fp16 value for sqrt.
	rng := newRNG(16)
	const n = 200000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = fp16.Bits(rng.IntN(0x7c00) | rng.IntN(2)<<15).Float32()
		y[i] = fp16.Bits(rng.IntN(0x7c00) | rng.IntN(2)<<15).Float32()
		if i%4 == 0 { // close magnitudes: cancellation and ties
			y[i] = fp16.Round32(x[i] * (1 + float32(rng.NormFloat64())*0x1p-8))
		}
	}
	out := make([]float32, n)
	ops := []struct {
		k string
		f func(a, b float64) float64
	}{
		{"add", func(a, b float64) float64 { return a + b }},
		{"sub", func(a, b float64) float64 { return a - b }},
		{"mul", func(a, b float64) float64 { return a * b }},
		{"real_div", func(a, b float64) float64 { return a / b }},
	}
	for _, op := range ops {
		binaryOps[op.k].apply(out, x, 1, y, 1, false)
		for i := range out {
			want := float32(fp16.Round64(op.f(float64(x[i]), float64(y[i]))))
			require.True(t, same(want, out[i]), "op %s: %g, %g: got %g want %g", op.k, x[i], y[i], out[i], want)
		}
	}
	all := make([]float32, 0x7c00)
	for h := range all {
		all[h] = fp16.Bits(h).Float32()
	}
	out = make([]float32, len(all))
	unaryOps["sqrt"].apply(out, all, &unaryArgs{}, false)
	for i, v := range all {
		require.Equal(t, float32(fp16.Round64(math.Sqrt(float64(v)))), out[i], "sqrt(%g)", v)
	}
}
