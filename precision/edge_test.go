package precision

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// TestJoinNextToMaxFloat64: a split of ±MaxFloat64 joined to ±Inf (the
// rounded digits sum to ½ at exponent 1025, that is 2¹⁰²⁴); the join of a
// finite x is finite and within the documented bound.
func TestJoinNextToMaxFloat64(t *testing.T) {
	for _, lb := range [][2]int{{1, 6}, {4, 6}, {12, 1}} {
		limbs, bits := lb[0], lb[1]
		v, err := SplitVector([]float64{math.MaxFloat64, -math.MaxFloat64, 1}, limbs, bits)
		require.NoError(t, err)
		y := v.Join()
		require.Equal(t, []float64{math.MaxFloat64, -math.MaxFloat64}, y[:2], "L=%d b=%d", limbs, bits)
		bound := math.Ldexp(1, v.Exp-bits*limbs-1)
		require.LessOrEqual(t, math.Abs(y[2]-1), bound)

		a := mat.NewDense(2, 2, []float64{math.MaxFloat64, 1, 1e-300, -1e-310})
		ml, err := SplitMatrix(a, limbs, bits)
		require.NoError(t, err)
		require.Equal(t, math.MaxFloat64, ml.Join().At(0, 0))
	}
}

// TestScaleExponentExtremes: math.Ldexp adds the shift to the value's own
// exponent in an int, which wraps: 1e300·2^MaxInt came back as 0 with no
// error, and 1e-8·2^MinInt as +Inf with ErrRange.
func TestScaleExponentExtremes(t *testing.T) {
	dst := make([]float32, 1)
	_, err := ScaleToFP16(dst, []float64{1e300}, math.MaxInt)
	require.ErrorIs(t, err, ErrRange)
	require.True(t, math.IsInf(float64(dst[0]), 1))

	c, err := ScaleToFP16(dst, []float64{1e-8}, math.MinInt)
	require.NoError(t, err)
	require.Equal(t, float32(0), dst[0])
	require.Equal(t, 1, c.Underflow)

	y, err := JoinFP16([][]float32{{1}, {1}}, []int{math.MinInt, math.MaxInt})
	require.NoError(t, err)
	require.True(t, math.IsInf(y[0], 1), "1·2^(−MinInt) + 1·2^(−MaxInt) = %v, want +Inf", y[0])
}

// TestTypedNilMatrix: a (*mat.Dense)(nil) is a nil matrix (ErrShape), not
// a nil-pointer panic, for every product entry point.
func TestTypedNilMatrix(t *testing.T) {
	dev := openDevice(t, "sim")
	var nilA *mat.Dense
	one := mat.NewDense(1, 1, []float64{1})
	_, err := NewMatVec(dev, nilA, MatVecOptions{})
	require.ErrorIs(t, err, ErrShape)
	_, err = NewMatMul(dev, nilA, 1, MatMulOptions{})
	require.ErrorIs(t, err, ErrShape)
	_, err = MatMul(dev, nilA, one, MatMulOptions{})
	require.ErrorIs(t, err, ErrShape)
	_, err = MatMul(dev, one, nilA, MatMulOptions{})
	require.ErrorIs(t, err, ErrShape)
	p, err := NewMatMulShape(dev, 1, 1, 1, MatMulOptions{Mode: FP16})
	require.NoError(t, err)
	defer p.Close()
	require.ErrorIs(t, p.SetA(nilA), ErrShape)
	require.NoError(t, p.SetA(one))
	require.ErrorIs(t, p.Apply(&mat.Dense{}, nilA), ErrShape)
}

// TestProductBeyondFloat64: a product whose value is beyond float64's
// range came back as +Inf with no error.
func TestProductBeyondFloat64(t *testing.T) {
	dev := openDevice(t, "sim")
	for _, mode := range []Mode{FP16, Compensated} {
		v, err := NewMatVec(dev, mat.NewDense(1, 2, []float64{1e300, 1e300}), MatVecOptions{Mode: mode})
		require.NoError(t, err)
		y := make([]float64, 1)
		err = v.Apply(y, []float64{1e300, 1e300})
		require.ErrorIs(t, err, ErrRange, "%v", mode)
		require.Contains(t, err.Error(), "beyond float64's range")
		// A large but representable product is fine.
		require.NoError(t, v.Apply(y, []float64{1e-300, 1e-300}))
		require.InDelta(t, 2, y[0], 2*0x1p-10)
		require.NoError(t, v.Close())
	}
}

// TestMetricsAtFloat64Extremes: finite data whose intermediate values
// overflow gave a wrong number: ULPDistance(MaxFloat64, −MaxFloat64) was
// +Inf (it is 2·MaxFloat64/2¹⁰¹³ = (2 − 2⁻⁵²)·2¹¹ units), and BackwardError of A = x = b =
// [1e300] was NaN (η = |1e300 − 1e600|/(1e600 + 1e300) ≈ 1).
func TestMetricsAtFloat64Extremes(t *testing.T) {
	require.Equal(t, (2-0x1p-52)*2048, ULPDistance(math.MaxFloat64, -math.MaxFloat64))
	require.Equal(t, math.Inf(1), ULPDistance(math.Inf(1), 1))

	eta := BackwardError(mat.NewDense(1, 1, []float64{1e300}), []float64{1e300}, []float64{1e300})
	require.InDelta(t, 1, eta, 1e-15)
	eta = BackwardError(mat.NewDense(1, 1, []float64{1e200}), []float64{1e200}, []float64{0})
	require.Equal(t, 1.0, eta)
	eta = BackwardError(mat.NewDense(1, 1, []float64{1e-300}), []float64{1e-300}, []float64{1e300})
	require.Equal(t, 1.0, eta)
	// An exact solution at the extremes has η = 0; NaN is still NaN.
	eta = BackwardError(mat.NewDense(1, 2, []float64{1e300, -1e300}), []float64{1e300, 1e300}, []float64{0})
	require.Equal(t, 0.0, eta)
	require.True(t, math.IsNaN(BackwardError(mat.NewDense(1, 1, []float64{math.NaN()}), []float64{1}, []float64{1})))
	// Ordinary data: the same number as the unscaled formula.
	a := mat.NewDense(2, 2, []float64{3, 1, -2, 5})
	x, b := []float64{0.3, -0.7}, []float64{0.25, -4}
	r0 := b[0] - (3*0.3 + 1*-0.7)
	r1 := b[1] - (-2*0.3 + 5*-0.7)
	want := math.Hypot(r0, r1) / (mat.Norm(a, 2)*math.Hypot(0.3, -0.7) + math.Hypot(0.25, -4))
	require.InDelta(t, want, BackwardError(a, x, b), 1e-16)
}

// TestSplitToFP16NextToMaxFloat64: the largest float64 values round to
// 2¹⁵·2^1009 = 2¹⁰²⁴ in the first limb, so the remainder was −Inf and
// SplitToFP16 refused x = [MaxFloat64, 1] as "beyond the dynamic range".
func TestSplitToFP16NextToMaxFloat64(t *testing.T) {
	x := []float64{math.MaxFloat64, -math.MaxFloat64, 1, -0.5e308}
	limbs, exps, err := SplitToFP16(x, 8)
	require.NoError(t, err)
	y, err := JoinFP16(limbs, exps)
	require.NoError(t, err)
	for i := range x {
		require.LessOrEqual(t, math.Abs(y[i]-x[i]), 0x1p-11*math.Abs(x[i]), "x[%d] = %v, joined %v", i, x[i], y[i])
	}
	require.Equal(t, x[:2], y[:2])
	_, _, err = SplitToFP16([]float64{math.MaxFloat64}, 1)
	require.NoError(t, err)
}

// TestEquilibrateSubnormal: a row or column whose largest magnitude is a
// float64 subnormal below 2⁻¹⁰²⁴ got the factor +Inf (2¹⁰⁷⁴ for 5e-324),
// so diag(r)·A·diag(c) held Inf.
func TestEquilibrateSubnormal(t *testing.T) {
	a := mat.NewDense(2, 2, []float64{5e-324, 0, 1, 1e-320})
	r, c, err := Equilibrate(a)
	require.NoError(t, err)
	require.Equal(t, []float64{0x1p1023, 1}, r)
	require.Equal(t, []float64{1, 0x1p1023}, c)
	for i := range 2 {
		for j := range 2 {
			b := r[i] * a.At(i, j) * c[j]
			require.False(t, math.IsInf(b, 0) || math.IsNaN(b), "b[%d][%d] = %v", i, j, b)
			require.LessOrEqual(t, math.Abs(b), 1.0)
		}
	}
	_, _, mu, err := SqueezeScale(a, 1)
	require.NoError(t, err)
	require.False(t, math.IsInf(mu, 0))
}
