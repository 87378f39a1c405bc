package precision

import (
	"math"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// isPow2 reports whether v is a positive power of two.
func isPow2(v float64) bool {
	f, _ := math.Frexp(v)
	return v > 0 && f == 0.5
}

// badlyScaled returns D1·G·D2 with G standard normal and D1, D2 diagonal
// with entries 10^U(−8, 8): rows and columns 32 decades apart, far beyond
// fp16's range of about 12 decades.
func badlyScaled(m, n int, seed uint64) *mat.Dense {
	rng := newRNG(seed)
	a := randn(rng, m, n)
	d1 := make([]float64, m)
	for i := range d1 {
		d1[i] = math.Pow(10, 16*rng.Float64()-8)
	}
	for j := range n {
		d2 := math.Pow(10, 16*rng.Float64()-8)
		for i := range m {
			a.Set(i, j, d1[i]*a.At(i, j)*d2)
		}
	}
	a.Set(1, 2, 0) // some exact zeros too
	return a
}

func TestEquilibrate(t *testing.T) {
	for _, dims := range [][2]int{{40, 40}, {30, 50}, {50, 30}} {
		a := badlyScaled(dims[0], dims[1], 3)
		r, c, err := Equilibrate(a)
		require.NoError(t, err)
		require.Len(t, r, dims[0])
		require.Len(t, c, dims[1])
		for _, v := range append(append([]float64{}, r...), c...) {
			require.True(t, isPow2(v), "scale %g is not a power of two", v)
		}
		// B = R·A·C: every |b_ij| ≤ 1, and the largest of each row and
		// each column in (½, 1] (the power-of-two version of the
		// algorithm's "max = 1" guarantee). Products by powers of two are
		// exact, so the checks are exact too.
		m, n := a.Dims()
		rowMax := make([]float64, m)
		colMax := make([]float64, n)
		for i := range m {
			for j := range n {
				b := math.Abs(r[i] * a.At(i, j) * c[j])
				require.Equal(t, b, math.Abs(a.At(i, j))*r[i]*c[j]) // exact
				rowMax[i] = math.Max(rowMax[i], b)
				colMax[j] = math.Max(colMax[j], b)
			}
		}
		for i, v := range rowMax {
			require.True(t, v > 0.5 && v <= 1, "row %d max %g", i, v)
		}
		for j, v := range colMax {
			require.True(t, v > 0.5 && v <= 1, "column %d max %g", j, v)
		}
	}

	// Zero rows and columns keep the factor 1; a power-of-two max maps to 1.
	z := mat.NewDense(3, 3, []float64{0, 0, 0, 0, 4, 0, 0, 0, 0})
	r, c, err := Equilibrate(z)
	require.NoError(t, err)
	require.Equal(t, []float64{1, 0.25, 1}, r)
	require.Equal(t, []float64{1, 1, 1}, c)

	_, _, err = Equilibrate(mat.NewDense(2, 2, []float64{1, math.NaN(), 0, 1}))
	require.ErrorIs(t, err, ErrRange)
	require.ErrorContains(t, err, "a[0][1]")
	_, _, err = Equilibrate(mat.NewDense(1, 2, []float64{1, math.Inf(1)}))
	require.ErrorIs(t, err, ErrRange)
}

func TestSqueezeScale(t *testing.T) {
	a := badlyScaled(30, 30, 4)
	for _, theta := range []float64{0.1, 0.5, 1} {
		r, c, mu, err := SqueezeScale(a, theta)
		require.NoError(t, err)
		require.True(t, isPow2(mu))
		beta := 0.0
		for i := range 30 {
			for j := range 30 {
				beta = math.Max(beta, math.Abs(r[i]*a.At(i, j)*c[j]))
			}
		}
		// μ is the largest power of two with μ·β ≤ θ·xmax.
		require.LessOrEqual(t, mu*beta, theta*fp16.MaxValue)
		require.Greater(t, 2*mu*beta, theta*fp16.MaxValue)
	}
	_, _, mu, err := SqueezeScale(mat.NewDense(2, 2, nil), 0.1)
	require.NoError(t, err)
	require.Equal(t, 1.0, mu)
	for _, theta := range []float64{0, -1, 1.5, math.NaN()} {
		_, _, _, err := SqueezeScale(a, theta)
		require.ErrorIs(t, err, ErrInvalid, "theta %v", theta)
	}
}

// TestNilMatrix: a nil matrix, untyped or a nil *mat.Dense, is an error
// wrapping ErrShape (BackwardError: NaN), never a panic.
func TestNilMatrix(t *testing.T) {
	for _, a := range []mat.Matrix{nil, (*mat.Dense)(nil), (*mat.SymDense)(nil)} {
		_, _, err := Equilibrate(a)
		require.ErrorIs(t, err, ErrShape)
		require.Contains(t, err.Error(), "precision: Equilibrate: nil matrix")
		_, _, _, err = SqueezeScale(a, 0.1)
		require.ErrorIs(t, err, ErrShape)
		_, err = SplitMatrix(a, 3, 5)
		require.ErrorIs(t, err, ErrShape)
		require.True(t, math.IsNaN(BackwardError(a, []float64{1}, []float64{1})))
	}
}
