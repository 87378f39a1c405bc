package linalg

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// backwardErrors returns the largest normwise backward error over the
// columns, in the ∞-norm (Solve's stopping rule) and in the 2-norm with
// ‖A‖_F (precision.BackwardError, an independent float64 computation).
func backwardErrors(a mat.Matrix, x, b *mat.Dense) (inf, two float64) {
	n, k := b.Dims()
	normA := mat.Norm(a, math.Inf(1))
	for j := range k {
		xj := mat.Col(nil, j, x)
		bj := mat.Col(nil, j, b)
		r := make([]float64, n)
		mat.NewVecDense(n, r).MulVec(a, mat.NewVecDense(n, xj))
		rn, xn, bn := 0.0, 0.0, 0.0
		for i := range n {
			rn = math.Max(rn, math.Abs(bj[i]-r[i]))
			xn = math.Max(xn, math.Abs(xj[i]))
			bn = math.Max(bn, math.Abs(bj[i]))
		}
		inf = math.Max(inf, rn/(normA*xn+bn))
		two = math.Max(two, precision.BackwardError(a, xj, bj))
		if math.IsNaN(rn) {
			inf, two = math.NaN(), math.NaN()
		}
	}
	return inf, two
}

// TestSolveBadInput: shape mismatch, non-square, singular, NaN and Inf.
func TestSolveBadInput(t *testing.T) {
	dev := openDevice(t, "sim")
	s := &Settings{Device: dev}
	sq := randn(newRNG(5), 8, 8)
	zeroRow := mat.DenseCopyOf(sq)
	zeroRow.SetRow(3, make([]float64, 8))
	// Rank 7: the last column is the sum of the others.
	rank7 := mat.DenseCopyOf(sq)
	for i := range 8 {
		sum := 0.0
		for j := range 7 {
			sum += rank7.At(i, j)
		}
		rank7.Set(i, 7, sum)
	}
	nan := mat.DenseCopyOf(sq)
	nan.Set(2, 2, math.NaN())
	inf := mat.DenseCopyOf(sq)
	inf.Set(1, 5, math.Inf(1))
	b := make([]float64, 8)
	b[0] = 1
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"b length", func() error { _, err := Solve(sq, make([]float64, 7), s); return err }, ErrShape},
		{"non-square", func() error { _, err := Solve(randn(newRNG(1), 8, 6), b, s); return err }, ErrShape},
		{"many rows", func() error { _, err := SolveMany(sq, mat.NewDense(7, 2, nil), s); return err }, ErrShape},
		{"nil", func() error { _, err := Solve(nil, b, s); return err }, ErrShape},
		{"zero row", func() error { _, err := Solve(zeroRow, b, s); return err }, ErrSingular},
		{"rank deficient", func() error { _, err := Solve(rank7, b, s); return err }, ErrSingular},
		{"inverse singular", func() error { _, err := Inverse(rank7, s); return err }, ErrSingular},
		{"nan a", func() error { _, err := Solve(nan, b, s); return err }, ErrRange},
		{"inf a", func() error { _, err := SolveMany(inf, mat.NewDense(8, 1, b), s); return err }, ErrRange},
		{"nan b", func() error { _, err := Solve(sq, []float64{math.NaN(), 0, 0, 0, 0, 0, 0, 0}, s); return err }, ErrRange},
		{"inverse non-square", func() error { _, err := Inverse(randn(newRNG(1), 3, 4), s); return err }, ErrShape},
		{"norm nan", func() error { _, err := Norm2(nan, s); return err }, ErrRange},
		{"budget", func() error { _, err := Solve(sq, b, &Settings{Device: dev, MaxDispatches: -1}); return err }, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.want), "%v", err)
			require.Contains(t, err.Error(), "linalg: ")
		})
	}
	x, err := Solve(sq, make([]float64, 8), s)
	require.NoError(t, err)
	require.Equal(t, make([]float64, 8), x)
}

// TestSolveAblation: with every device output replaced by noise of the
// same norm, Solve, SolveMany and Inverse must fail, not converge, on
// either device; the same problem converges on the honest one.
func TestSolveAblation(t *testing.T) {
	a := randSVD(t, 48, 1e2, 6)
	b := randn(newRNG(7), 48, 4)
	for _, d := range devices {
		dev := newNoiseDevice(openDevice(t, d.name), 99)
		_, err := Solve(a, b.RawMatrix().Data[:48], &Settings{Device: dev})
		require.ErrorIs(t, err, ErrNotConverged, d.name)
		_, err = SolveMany(a, b, &Settings{Device: dev})
		require.ErrorIs(t, err, ErrNotConverged, d.name)
		_, err = Inverse(a, &Settings{Device: dev})
		require.ErrorIs(t, err, ErrNotConverged, d.name)
		_, err = SolveMany(a, b, &Settings{Device: openDevice(t, d.name)})
		require.NoError(t, err, d.name)
	}
}

// TestInverse: ‖I − A·X‖₂ ≤ 1e-12 for κ₂ ≤ 1e4 at n = 128 (with -short
// n = 64 on "sim" and 32 on "sim-narrow"), on both devices. The float64 floor is
// about κ₂·2⁻⁵³·√n ≈ 1.3e-11·… for the correctly rounded inverse in the
// worst direction; in practice the random rounding errors of X give
// ≈ κ·2⁻⁵³·few ≈ 1e-12 at κ = 1e4, the bound this test holds.
func TestInverse(t *testing.T) {
	for _, d := range devices {
		dev := openDevice(t, d.name)
		n := shortSize(128, 64, 32, d.wide)
		for ki, kappa := range []float64{1e2, 1e4} {
			a := randSVD(t, n, kappa, uint64(60+ki))
			var st Stats
			x, err := Inverse(a, &Settings{Device: dev, Stats: &st})
			require.NoError(t, err, d.name)
			var r mat.Dense
			r.Mul(a, x)
			for i := range n {
				r.Set(i, i, r.At(i, i)-1)
			}
			sv := reference.SingularValues(&r)
			t.Logf("%s n=%d κ=%.0e: ‖I − A·X‖₂ = %.2e, mode %v, %d NS steps, %d refinements, %d dispatches, history %.2g", d.name, n, kappa, sv[0], st.Mode, st.NewtonSchulz, st.Refinements, st.Dispatches, st.History)
			require.LessOrEqual(t, sv[0], 1e-12, d.name)
		}
	}
}

// TestNorm2: within 1e-10 relative of gonum's SVD, on both devices. The
// Rayleigh quotient in float64 has error of order u64·√n plus the square
// of the subspace error, (ε_comp/gap)² ≈ (4e-8/0.1)² ≈ 1e-13 (the narrow
// device's 3-bit compensated products have the same 30 bits): 1e-10 leaves
// room. With -short the narrow device gets matrices of a third the size.
func TestNorm2(t *testing.T) {
	for _, d := range devices {
		dev := openDevice(t, d.name)
		n := shortSize(128, 128, 48, d.wide)
		cases := []struct {
			name string
			a    *mat.Dense
		}{
			{fmt.Sprintf("randn %d", n), randn(newRNG(70), n, n)},
			{fmt.Sprintf("randn %dx%d", n*25/32, n*10/32), randn(newRNG(71), n*25/32, n*10/32)},
			{fmt.Sprintf("randsvd %d", n), randSVD(t, n, 1e4, 72)},
		}
		for _, tc := range cases {
			t.Run(d.name+"/"+tc.name, func(t *testing.T) {
				var st Stats
				got, err := Norm2(tc.a, &Settings{Device: dev, Stats: &st})
				require.NoError(t, err)
				want := reference.SingularValues(tc.a)[0]
				t.Logf("σ = %.17g, gonum %.17g, rel %.2e, %d iterations, %d dispatches", got, want, math.Abs(got-want)/want, st.Refinements, st.Dispatches)
				require.InDelta(t, want, got, 1e-10*want)
			})
		}
		got, err := Norm2(mat.NewDense(3, 3, nil), &Settings{Device: dev})
		require.NoError(t, err)
		require.Zero(t, got)
	}
}
