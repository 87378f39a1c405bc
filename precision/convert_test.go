package precision

import (
	"math"
	"testing"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
)

func TestToFP16(t *testing.T) {
	tests := []struct {
		name    string
		src     []float64
		want    []float32
		conv    Conversion
		wantErr string // substring naming the first bad index, "" for success
	}{
		{name: "exact", src: []float64{0, 1, -2.5, 65504}, want: []float32{0, 1, -2.5, 65504}},
		// 1 + 2⁻¹¹ is a tie between 1 and 1 + 2⁻¹⁰: even wins.
		{name: "ties to even", src: []float64{1 + 0x1p-11, 1 + 3*0x1p-11}, want: []float32{1, 1 + 0x1p-9}},
		{name: "underflow", src: []float64{1e-9, -1e-9, 0}, want: []float32{0, float32(math.Copysign(0, -1)), 0}, conv: Conversion{Underflow: 2}},
		{name: "subnormal", src: []float64{0x1p-20, 0x1p-14}, want: []float32{0x1p-20, 0x1p-14}, conv: Conversion{Subnormal: 1}},
		// 65519 rounds down to 65504; 65520 is the tie that rounds to Inf.
		{name: "largest", src: []float64{65519}, want: []float32{65504}},
		{name: "overflow", src: []float64{1, 65520, -1e6}, conv: Conversion{Overflow: 2}, wantErr: "src[1] = 65520"},
		{name: "inf", src: []float64{math.Inf(-1)}, conv: Conversion{Overflow: 1}, wantErr: "src[0] = -Inf"},
		{name: "nan", src: []float64{2, math.NaN()}, conv: Conversion{NaN: 1}, wantErr: "src[1] = NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]float32, len(tc.src))
			conv, err := ToFP16(dst, tc.src)
			require.Equal(t, tc.conv, conv)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrRange)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, dst)
			for i, v := range dst {
				require.Equal(t, math.Signbit(float64(tc.want[i])), math.Signbit(float64(v)), "sign of dst[%d]", i)
			}
		})
	}
	_, err := ToFP16(make([]float32, 2), []float64{1})
	require.ErrorIs(t, err, ErrShape)
}

func TestPow2Scale(t *testing.T) {
	rng := newRNG(1)
	for trial := range 200 {
		n := 1 + rng.IntN(64)
		x := make([]float64, n)
		base := rng.IntN(600) - 300
		for i := range x {
			// Magnitudes spread over 40 binades around 2^base, both signs.
			x[i] = math.Ldexp(rng.Float64()+0.5, base+rng.IntN(40)-20)
			if rng.IntN(2) == 0 {
				x[i] = -x[i]
			}
		}
		if trial%10 == 0 {
			x[0] = math.Ldexp(1, base) // an exact power of two as the max
			for i := 1; i < n; i++ {
				x[i] = math.Ldexp(x[i], -40)
			}
		}
		e, err := Pow2Scale(x)
		require.NoError(t, err)
		m := 0.0
		for _, v := range x {
			s := math.Ldexp(v, e)
			require.Equal(t, v, math.Ldexp(s, -e), "scaling must be exact") // x·2^e·2^−e == x
			m = math.Max(m, math.Abs(s))
		}
		require.GreaterOrEqual(t, m, math.Ldexp(1, Pow2Target))
		require.Less(t, m, math.Ldexp(2, Pow2Target))
	}
	e, err := Pow2Scale([]float64{0, 0, math.Copysign(0, -1)})
	require.NoError(t, err)
	require.Equal(t, 0, e)
	e, err = Pow2Scale(nil)
	require.NoError(t, err)
	require.Equal(t, 0, e)
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := Pow2Scale([]float64{1, bad})
		require.ErrorIs(t, err, ErrRange)
		require.ErrorContains(t, err, "x[1]")
	}
}

func TestScaleToFP16(t *testing.T) {
	x := []float64{3e6, -1.5e6, 7}
	e, err := Pow2Scale(x)
	require.NoError(t, err)
	dst := make([]float32, len(x))
	_, err = ScaleToFP16(dst, x, e)
	require.NoError(t, err)
	for i, v := range dst {
		// One rounding to fp16: relative error ≤ u16 for normal results.
		require.InDelta(t, x[i], math.Ldexp(float64(v), -e), u16*math.Abs(x[i]), "x[%d]", i)
	}
	_, err = ToFP16(dst, x) // unscaled, 3e6 overflows
	require.ErrorIs(t, err, ErrRange)
	_, err = ScaleToFP16(dst, x, 20)
	require.ErrorIs(t, err, ErrRange)
	require.ErrorContains(t, err, "2^20")
}

// wideRange is the vector of the brief: entries near 1e-7 beside entries
// near 1e6 (43 binades apart), zeros and everything between.
var wideRange = []float64{1e6, -987654.321, 1.234567e-7, -9.87654e-8, 1, 0, 3.14159e-3, -2.71828e2, 1e-7, 65519.5, 5e-8 + 1e-15}

// TestSplitToFP16Device sends wideRange through the simulator as limbs (an
// identity program: output = input) and back, and checks every entry.
func TestSplitToFP16Device(t *testing.T) {
	const k = 3 // 28 + 11·2 = 50 binades ≥ 44 needed
	limbs, exps, err := SplitToFP16(wideRange, k)
	require.NoError(t, err)
	n := len(wideRange)
	flat := make([]float32, 0, k*n)
	for j, limb := range limbs {
		require.Len(t, limb, n)
		m := 0.0
		for _, v := range limb {
			a := math.Abs(float64(v))
			m = math.Max(m, a)
			// Every limb entry is an fp16 normal or zero.
			require.True(t, a == 0 || a >= fp16.MinNormal, "limb %d holds a subnormal %g", j, v)
			require.Equal(t, float32(fp16.Round64(float64(v))), v)
		}
		if m > 0 {
			require.GreaterOrEqual(t, m, 0x1p14, "limb %d", j)
			require.Less(t, m, 0x1p15, "limb %d", j)
		}
		flat = append(flat, limb...)
	}

	for _, name := range []string{"sim", "sim-narrow"} {
		dev := openDevice(t, name)
		g := dataflow.New()
		// x·1: exact, and a program must compute something.
		g.Output("y", g.Mul(g.Input("x", dataflow.Shape{k, n}), g.Const("one", dataflow.Shape{}, []float64{1})))
		exe, err := shim.Build(dev, g)
		require.NoError(t, err)
		out, err := exe.Run([][]float32{flat})
		require.NoError(t, err)
		back := make([][]float32, k)
		for j := range k {
			back[j] = out[0][j*n : (j+1)*n]
		}
		y, err := JoinFP16(back, exps)
		require.NoError(t, err)
		for i, v := range wideRange {
			rel := 0.0
			if v != 0 {
				rel = math.Abs(y[i]-v) / math.Abs(v)
			} else {
				require.Zero(t, y[i])
			}
			t.Logf("%s: x[%2d] = %-14.7g back %-14.7g relative error %.2e", name, i, v, y[i], rel)
			// The brief's requirement; SplitToFP16 guarantees 2⁻¹¹ once an
			// entry lands in a limb's normal range, and checks 2⁻¹⁰.
			require.LessOrEqual(t, rel, 0x1p-10, "x[%d]", i)
		}
		require.NoError(t, exe.Close())
	}

	// One limb covers 28 binades: 1e-7 beside 1e6 is out of reach.
	_, _, err = SplitToFP16(wideRange, 1)
	require.ErrorIs(t, err, ErrRange)
	require.ErrorContains(t, err, "x[2]")
	// Two limbs reach 39 binades below 1e6: 1e-7 is 43 below, still out.
	_, _, err = SplitToFP16(wideRange, 2)
	require.ErrorIs(t, err, ErrRange)
}

func TestSplitToFP16(t *testing.T) {
	rng := newRNG(2)
	// More limbs give a normwise error near 2^(−11·k) of the largest entry:
	// each limb's rounding leaves ≤ 2⁻¹¹ of that limb's largest value.
	x := make([]float64, 200) // magnitudes in [½, 10⁵): 18 binades, one limb covers them
	for i := range x {
		x[i] = (rng.Float64()/2 + 0.5) * math.Pow(10, float64(rng.IntN(5)))
		if rng.IntN(2) == 0 {
			x[i] = -x[i]
		}
	}
	for k := 1; k <= 4; k++ {
		limbs, exps, err := SplitToFP16(x, k)
		require.NoError(t, err)
		y, err := JoinFP16(limbs, exps)
		require.NoError(t, err)
		m, _ := maxAbs("", x)
		for i := range x {
			require.LessOrEqual(t, math.Abs(y[i]-x[i]), math.Ldexp(m, -11*k), "k=%d x[%d]", k, i)
		}
	}
	for _, tc := range []struct {
		name string
		x    []float64
		k    int
		want error
	}{
		{"zero limbs", []float64{1}, 0, ErrInvalid},
		{"too many limbs", []float64{1}, MaxSplitLimbs + 1, ErrInvalid},
		{"nan", []float64{1, math.NaN()}, 2, ErrRange},
		{"inf", []float64{math.Inf(1)}, 2, ErrRange},
		{"beyond reach", []float64{1e300, 1e-300}, 3, ErrRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := SplitToFP16(tc.x, tc.k)
			require.ErrorIs(t, err, tc.want)
		})
	}
	// Once the large entries are exact (53 bits: 5 limbs), later limbs are
	// free for the small ones: 1e-300 beside 1e300 fits in 8.
	limbs, exps, err := SplitToFP16([]float64{1e300, 1e-300}, MaxSplitLimbs)
	require.NoError(t, err)
	y, err := JoinFP16(limbs, exps)
	require.NoError(t, err)
	require.Equal(t, 1e300, y[0])
	require.InEpsilon(t, 1e-300, y[1], u16)

	limbs, exps, err = SplitToFP16([]float64{0, 0}, 2)
	require.NoError(t, err)
	require.Equal(t, []int{0, 0}, exps)
	require.Equal(t, [][]float32{{0, 0}, {0, 0}}, limbs)

	_, err = JoinFP16([][]float32{{1}}, []int{0, 1})
	require.ErrorIs(t, err, ErrShape)
	_, err = JoinFP16([][]float32{{1}, {1, 2}}, []int{0, 1})
	require.ErrorIs(t, err, ErrShape)
}
