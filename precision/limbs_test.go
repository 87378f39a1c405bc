package precision

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// checkDigits asserts that every digit is an integer with |d| ≤ 2^(b−1)
// (so it and every product of two are exact in fp16).
func checkDigits(t *testing.T, digits [][]float64, bits int) {
	t.Helper()
	lim := math.Ldexp(1, bits-1)
	for l, row := range digits {
		for i, d := range row {
			require.Equal(t, math.Trunc(d), d, "digit [%d][%d] = %g is not an integer", l, i, d)
			require.LessOrEqual(t, math.Abs(d), lim, "digit [%d][%d]", l, i)
		}
	}
}

func TestSplitVector(t *testing.T) {
	rng := newRNG(5)
	for bits := 1; bits <= MaxBits; bits++ {
		for _, limbs := range []int{1, 2, 4, MaxLimbs} {
			x := randVec(rng, 300)
			x[7] *= 1e-12 // tiny entries are fine, relative to the max
			x[8] = 0
			v, err := SplitVector(x, limbs, bits)
			require.NoError(t, err)
			require.Equal(t, limbs, v.Limbs())
			require.Equal(t, bits, v.Bits)
			checkDigits(t, v.Digits, bits)
			// max|x|·2^−Exp ∈ [¼, ½).
			m, _ := maxAbs("", x)
			require.GreaterOrEqual(t, math.Ldexp(m, -v.Exp), 0.25)
			require.Less(t, math.Ldexp(m, -v.Exp), 0.5)
			// Each digit rounds the remainder (|t| ≤ ½ after it), so the
			// truncation error is ≤ ½·2^(Exp−b·L), plus float64 rounding of
			// the join (≤ 2⁻⁵² relative to max|x|, 1 ulp per limb added).
			y := v.Join()
			bound := math.Ldexp(1, v.Exp-bits*limbs-1) + float64(limbs)*0x1p-52*m
			for i := range x {
				require.LessOrEqual(t, math.Abs(y[i]-x[i]), bound, "b=%d L=%d x[%d]", bits, limbs, i)
			}
		}
	}
	// Enough limbs reproduce float64 exactly (54 ≥ 53 bits) where an entry
	// lies in the binade of the largest; smaller ones lose the bits below
	// the shared exponent's reach, as the bound above says.
	x := make([]float64, 50)
	for i := range x {
		x[i] = 1 + rng.Float64()
	}
	v, err := SplitVector(x, 9, 6)
	require.NoError(t, err)
	require.Equal(t, x, v.Join())

	v, err = SplitVector([]float64{0, 0}, 3, 6)
	require.NoError(t, err)
	require.Equal(t, 0, v.Exp)
	require.Equal(t, []float64{0, 0}, v.Join())
}

func TestSplitMatrix(t *testing.T) {
	rng := newRNG(6)
	const rows, cols, bits, limbs = 12, 40, 6, 3
	a := randn(rng, rows, cols)
	for i := range rows {
		// Rows 10 binades apart: each gets its own exponent.
		for j := range cols {
			a.Set(i, j, math.Ldexp(a.At(i, j), 10*(i-6)))
		}
	}
	ml, err := SplitMatrix(a, limbs, bits)
	require.NoError(t, err)
	require.Equal(t, rows, ml.Rows)
	require.Equal(t, cols, ml.Cols)
	require.Equal(t, limbs, ml.Limbs())
	checkDigits(t, ml.Digits, bits)
	for i := 1; i < rows; i++ {
		// The same normal rows rescaled by 2¹⁰ differ by about 10 in exponent.
		require.InDelta(t, 10, ml.RowExp[i]-ml.RowExp[i-1], 2, "rows %d, %d", i-1, i)
	}
	j := ml.Join()
	for i := range rows {
		row := mat.Row(nil, i, a)
		m, _ := maxAbs("", row)
		// Relative to each row's own largest entry: ≤ 2^(1−b·L).
		for c := range cols {
			require.LessOrEqual(t, math.Abs(j.At(i, c)-row[c]), math.Ldexp(m, 1-bits*limbs), "a[%d][%d]", i, c)
		}
	}
	require.True(t, (MatrixLimbs{}).Join().IsEmpty())
}

func TestSplitBadInput(t *testing.T) {
	x := []float64{1, 2}
	for _, tc := range []struct {
		name        string
		x           []float64
		limbs, bits int
		want        error
	}{
		{"zero limbs", x, 0, 6, ErrInvalid},
		{"too many limbs", x, MaxLimbs + 1, 6, ErrInvalid},
		{"zero bits", x, 3, 0, ErrInvalid},
		{"bits past exact products", x, 3, 7, ErrInvalid},
		{"nan", []float64{1, math.NaN()}, 3, 6, ErrRange},
		{"inf", []float64{math.Inf(-1)}, 3, 6, ErrRange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SplitVector(tc.x, tc.limbs, tc.bits)
			require.ErrorIs(t, err, tc.want)
			_, err = SplitMatrix(mat.NewDense(1, len(tc.x), tc.x), tc.limbs, tc.bits)
			require.ErrorIs(t, err, tc.want)
		})
	}
}

// TestSplitExtremes covers float64's ends: the shared exponent of a
// subnormal vector is below −1023 and of a huge one above 1023.
func TestSplitExtremes(t *testing.T) {
	for _, x := range [][]float64{
		{5e-324, -1e-320, 0},
		{math.MaxFloat64, -1e300, 1},
		{math.SmallestNonzeroFloat64},
	} {
		v, err := SplitVector(x, 9, 6)
		require.NoError(t, err)
		checkDigits(t, v.Digits, 6)
		m, _ := maxAbs("", x)
		y := v.Join()
		for i := range x {
			require.LessOrEqual(t, math.Abs(y[i]-x[i]), math.Ldexp(m, -50), "%v", x)
		}
		require.Equal(t, x[0], y[0])
	}
}
