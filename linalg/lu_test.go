package linalg

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// solveTol is the stopping rule, about √n·2⁻⁵³ for n = 256.
const solveTol = 1e-15

// infBackward is the largest ∞-norm normwise backward error over the
// columns, ‖b − A·x‖∞/(‖A‖∞‖x‖∞ + ‖b‖∞), computed here in float64
// independently of the solver.
func infBackward(a mat.Matrix, x, b *mat.Dense) float64 {
	inf, _ := backwardErrors(a, x, b)
	return inf
}

// TestFactorizeTable: nonsymmetric RandSVD (geometric singular values)
// with κ₂ = 1e2 … 1e8, one Factorization each, k = 1, 16, 128
// right-hand sides, on both numerics models; n = 256 without -short, with
// -short n = 64 on "sim" and 32 on "sim-narrow" (k = 1 and 16). The ∞-norm
// backward error must be ≤ 1e-15, the 2-norm one with ‖A‖_F (an
// independent computation, precision.BackwardError) ≤ 2e-15 (another norm
// of the same residual: the two agree within 30 % on these dense
// residuals), and the forward error within what backward stability
// allows, κ₂·1e-15·√n (√n between the norms), against gonum's LU.
func TestFactorizeTable(t *testing.T) {
	t.Logf("| device | n | κ₂ | k | backward error (∞) | (2, F) | forward error | factors | dispatches | GMRES-IR steps | GMRES iterations | Cond (κ₁ est.) |")
	for _, d := range devices {
		dev := openDevice(t, d.name)
		n := shortSize(256, 64, 32, d.wide)
		ks := []int{1, 16, 128}
		if testing.Short() {
			ks = []int{1, 16}
		}
		for ki, kappa := range []float64{1e2, 1e4, 1e6, 1e8} {
			a := randSVD(t, n, kappa, uint64(20+ki))
			var fst Stats
			f, err := Factorize(a, &Settings{Device: dev, Stats: &fst})
			require.NoError(t, err)
			for _, k := range ks {
				t.Run(fmt.Sprintf("%s/n%d/kappa%.0e/k%d", d.name, n, kappa, k), func(t *testing.T) {
					b := randn(newRNG(uint64(40+k)), n, k)
					before := f.Stats()
					var x *mat.Dense
					if k == 1 {
						xs, err := f.Solve(b.RawMatrix().Data)
						require.NoError(t, err)
						x = mat.NewDense(n, 1, xs)
					} else {
						var err error
						x, err = f.SolveMany(b)
						require.NoError(t, err)
					}
					st := f.Stats()
					inf, two := backwardErrors(a, x, b)
					fwd := 0.0
					for j := range k {
						ref, err := reference.Solve(a, mat.Col(nil, j, b))
						require.NoError(t, err)
						fwd = math.Max(fwd, precision.RelErr(mat.Col(nil, j, x), ref))
					}
					t.Logf("| %s | %d | %.0e | %d | %.2e | %.2e | %.2e | %v | %d | %d | %d | %.3g |", d.name, n, kappa, k, inf, two, fwd, st.Mode,
						st.Dispatches, st.Refinements-before.Refinements, st.GMRES-before.GMRES, f.Cond())
					require.LessOrEqual(t, inf, solveTol)
					require.LessOrEqual(t, two, 2*solveTol)
					require.LessOrEqual(t, fwd, kappa*solveTol*math.Sqrt(float64(n)))
				})
			}
			f.Close()
		}
	}
}

// TestFactorizeFloat32Panels: with panels of 256 columns the FP16
// factorization factors them in float32 (getrf32; narrower ones go
// through float64, see panel32Min); at n = 512 on "sim" (two panels, one
// dispatch) the factors stay FP16 and GMRES-IR reaches the same
// backward error (≤ 1e-15) and a forward error within κ₂·1e-15·√n of
// gonum's LU, as the table's float64 panels do.
func TestFactorizeFloat32Panels(t *testing.T) {
	const n = 512
	dev := openDevice(t, "sim")
	for ki, kappa := range []float64{1e2, 1e3} {
		a := randSVD(t, n, kappa, uint64(60+ki))
		b := randn(newRNG(uint64(70+ki)), n, 1)
		var st Stats
		f, err := Factorize(a, &Settings{Device: dev, Stats: &st, Block: panel32Min})
		require.NoError(t, err)
		xs, err := f.Solve(b.RawMatrix().Data)
		require.NoError(t, err)
		st = f.Stats()
		f.Close()
		x := mat.NewDense(n, 1, xs)
		ref, err := reference.Solve(a, b.RawMatrix().Data)
		require.NoError(t, err)
		inf := infBackward(a, x, b)
		fwd := precision.RelErr(xs, ref)
		t.Logf("κ₂ = %.0e: backward error %.2e, forward error %.2e, %v factors, %d dispatches, %d GMRES iterations", kappa, inf, fwd, st.Mode, st.Dispatches, st.GMRES)
		require.Equal(t, precision.FP16, st.Mode, "the float32 panels' factors serve as FP16 factors")
		require.Equal(t, 1, st.Dispatches)
		require.LessOrEqual(t, inf, solveTol)
		require.LessOrEqual(t, fwd, kappa*solveTol*math.Sqrt(n))
	}
}

// scaledGaussian is D₁·G·D₂ for a 50×50 standard normal G and diagonal
// scalings 10^e with exponents e uniform in [−rows, rows] and [−cols,
// cols].
func scaledGaussian(rows, cols float64, seed uint64) *mat.Dense {
	const n = 50
	rng := newRNG(seed)
	g := randn(rng, n, n)
	dr, dc := make([]float64, n), make([]float64, n)
	for i := range n {
		dr[i] = math.Pow(10, rows*(2*rng.Float64()-1))
		dc[i] = math.Pow(10, cols*(2*rng.Float64()-1))
	}
	for i := range n {
		for j := range n {
			g.Set(i, j, dr[i]*g.At(i, j)*dc[j])
		}
	}
	return g
}

// TestSolveBadlyScaled: Gaussian matrices with rows, columns or both
// scaled by up to 10^±4 and 10^±8 solve to the backward error of the
// unscaled matrix (≤ 1e-15), with Solve and with SolveMany, on both
// numerics models, and with the FP16 factors; the iterated equilibration
// removes the scaling up to powers of two. gonum's LU is the reference
// for the forward error, which must lie within a factor 100 of gonum's
// own error bound
// κ∞(B)·2⁻⁵³·n for the equilibrated B (both are backward stable for the
// scaled system).
func TestSolveBadlyScaled(t *testing.T) {
	cases := []struct {
		name       string
		rows, cols float64
	}{
		{"unscaled", 0, 0}, {"rows 1e4", 4, 0}, {"rows 1e5", 5, 0}, {"cols 1e4", 0, 4}, {"both 1e3", 3, 3},
		{"rows 1e8", 8, 0}, {"cols 1e8", 0, 8}, {"both 1e4", 4, 4}, {"both 1e8", 8, 8},
	}
	for _, d := range devices {
		dev := openDevice(t, d.name)
		for ci, tc := range cases {
			t.Run(d.name+"/"+tc.name, func(t *testing.T) {
				a := scaledGaussian(tc.rows, tc.cols, uint64(80+ci))
				n, _ := a.Dims()
				b := randn(newRNG(uint64(90+ci)), n, 2)
				var st Stats
				x, err := SolveMany(a, b, &Settings{Device: dev, Stats: &st})
				require.NoError(t, err)
				inf := infBackward(a, x, b)
				var lu mat.LU
				lu.Factorize(a)
				var xg mat.Dense
				if err := lu.SolveTo(&xg, false, b); err != nil {
					// gonum warns of the scaled matrix's condition number
					// but solves.
					var c mat.Condition
					require.ErrorAs(t, err, &c)
				}
				gon := infBackward(a, &xg, b)
				_, bb, _, _, err := equilibrateIter("test", a)
				require.NoError(t, err)
				condB := reference.Cond2(mat.NewDense(n, n, bb))
				fwd := 0.0
				for j := range 2 {
					fwd = math.Max(fwd, precision.RelErr(mat.Col(nil, j, x), mat.Col(nil, j, &xg)))
				}
				t.Logf("%s: backward error %.2e (gonum %.2e), forward error against gonum %.2e, κ₂(B) = %.3g, %v factors, %d GMRES-IR steps, %d GMRES iterations", tc.name, inf, gon, fwd, condB, st.Mode, st.Refinements, st.GMRES)
				require.LessOrEqual(t, inf, solveTol)
				require.LessOrEqual(t, fwd, 100*condB*u64*float64(n))
				// κ(B)·2⁻¹¹ ≤ 2 here: the FP16 factors of B suffice,
				// however large the scaling makes κ(A).
				require.Equal(t, precision.FP16, st.Mode, "factors")
				xs, err := Solve(a, mat.Col(nil, 0, b), &Settings{Device: dev})
				require.NoError(t, err)
				require.LessOrEqual(t, infBackward(a, mat.NewDense(n, 1, xs), mat.NewDense(n, 1, mat.Col(nil, 0, b))), solveTol)
			})
		}
	}
}

// TestFactorizeBeyondReach: κ₂ = 1e12 at n = 128 (64 with -short on
// sim-narrow) is beyond the compensated factors (κ·4e-8 ≈ 4e4 ≫ 1) and
// beyond what GMRES-IR recovers with a Krylov dimension of n/4: the
// error wraps ErrNotConverged, carries the history and the condition
// estimate, and the x that comes back has no NaN.
func TestFactorizeBeyondReach(t *testing.T) {
	for _, d := range devices {
		n := shortSize(128, 128, 64, d.wide)
		a := randSVD(t, n, 1e12, 3)
		b := randn(newRNG(4), n, 1).RawMatrix().Data
		var st Stats
		x, err := Solve(a, b, &Settings{Device: openDevice(t, d.name), Stats: &st})
		t.Logf("%s n = %d: %v", d.name, n, err)
		require.Error(t, err, d.name)
		require.ErrorIs(t, err, ErrNotConverged)
		require.Contains(t, err.Error(), "history")
		require.Contains(t, err.Error(), "condition estimate")
		require.Greater(t, st.Cond, 1e9, "the estimate sees the ill-conditioning")
		require.Len(t, x, n)
		for _, v := range x {
			require.False(t, math.IsNaN(v))
		}
	}
}

// TestFactorizeEdgeCases: exact answers where there are exact answers,
// clear errors otherwise.
func TestFactorizeEdgeCases(t *testing.T) {
	dev := openDevice(t, "sim")
	s := &Settings{Device: dev}

	// n = 1: x = b/a exactly (one division, correctly rounded).
	x, err := Solve(mat.NewDense(1, 1, []float64{4}), []float64{3}, s)
	require.NoError(t, err)
	require.Equal(t, []float64{0.75}, x)

	// The identity: x = b exactly (the factors are exact: L = U = I).
	const n = 40
	id := mat.NewDense(n, n, nil)
	for i := range n {
		id.Set(i, i, 1)
	}
	b := randn(newRNG(1), n, 1).RawMatrix().Data
	x, err = Solve(id, b, s)
	require.NoError(t, err)
	require.Equal(t, b, x)

	// Zero b: x = 0 exactly.
	a := randSVD(t, n, 10, 2)
	f, err := Factorize(a, s)
	require.NoError(t, err)
	x, err = f.Solve(make([]float64, n))
	require.NoError(t, err)
	require.Equal(t, make([]float64, n), x)
	xm, err := f.SolveMany(mat.NewDense(n, 2, nil))
	require.NoError(t, err)
	require.True(t, mat.Equal(xm, mat.NewDense(n, 2, nil)))
	_, err = f.Solve(make([]float64, n-1))
	require.ErrorIs(t, err, ErrShape)
	_, err = f.SolveMany(mat.NewDense(n+1, 1, nil))
	require.ErrorIs(t, err, ErrShape)
	require.Greater(t, f.Cond(), 1.0)
	f.Close()
	_, err = f.Solve(b)
	require.ErrorIs(t, err, ErrInvalid)

	sq := randn(newRNG(5), 8, 8)
	zeroCol := mat.DenseCopyOf(sq)
	for i := range 8 {
		zeroCol.Set(i, 2, 0)
	}
	nan := mat.DenseCopyOf(sq)
	nan.Set(2, 2, math.NaN())
	cases := []struct {
		name string
		a    mat.Matrix
		want error
	}{
		{"nil", nil, ErrShape},
		{"empty", &mat.Dense{}, ErrShape},
		{"non-square", randn(newRNG(1), 8, 6), ErrShape},
		{"zero column", zeroCol, ErrSingular},
		{"nan", nan, ErrRange},
		// Finite entries whose row sum, ‖A‖∞, is beyond float64.
		{"norm overflows", mat.NewDense(2, 2, []float64{1e308, 1e308, 1e308, -1e308}), ErrRange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
					}
				}()
				_, err = Factorize(tc.a, s)
			}()
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), "linalg: ")
		})
	}
	_, err = Factorize(sq, &Settings{Device: dev, Block: -1})
	require.ErrorIs(t, err, ErrInvalid)

	// Entries near float64's smallest normals, and a solution near its
	// largest: the scaling shares the scale between rows and columns, so
	// nothing overflows on the way; x = A⁻¹·b to a few roundings (κ∞ ≈ 2).
	tiny := mat.NewDense(2, 2, []float64{1e-308, 2e-308, 3e-308, -1e-308})
	x, err = Solve(tiny, []float64{1, 1}, s)
	require.NoError(t, err)
	for i, want := range []float64{3e-308 / 7e-616, 2e-308 / 7e-616} {
		require.InEpsilon(t, want, x[i], 16*0x1p-53, "tiny: x[%d]", i)
	}

	// Exactly singular: two equal rows. The x that comes back has a small
	// backward error but is meaningless, and the error says so.
	dup := mat.DenseCopyOf(randn(newRNG(6), n, n))
	dup.SetRow(7, dup.RawRowView(3))
	_, err = Solve(dup, b, s)
	t.Logf("duplicate rows: %v", err)
	require.ErrorIs(t, err, ErrSingular)
}

// TestFactorizeCompiles: the trailing update's operands are runtime
// inputs, so a factorization compiles at most four programs whatever κ
// (the FP16 update, and the compensated product when the FP16 factors do
// not reach: two here), and a second matrix of the same size none. The
// counts come from a fresh device's cache; the accumulator probe compiles
// one more per device.
func TestFactorizeCompiles(t *testing.T) {
	n := 128
	if testing.Short() {
		n = 64
	}
	for _, kappa := range []float64{1e2, 1e4, 1e8} {
		t.Run(fmt.Sprintf("kappa%g", kappa), func(t *testing.T) {
			dev := openDevice(t, "sim")
			cache := dev.(*shim.Cache)
			b := randn(newRNG(3), n, 1).RawMatrix().Data
			var st Stats
			_, err := Solve(randSVD(t, n, kappa, 11), b, &Settings{Device: dev, Stats: &st})
			require.NoError(t, err)
			first := cache.Stats().Compiles
			t.Logf("n = %d, κ = %g: %d compiles (probe included), %d dispatches, %v factors, modeled compile %v", n, kappa, first, st.Dispatches, st.Mode, st.ModeledCompile)
			require.LessOrEqual(t, first, 4+1)
			require.Equal(t, first-1, st.Programs, "the stats count this call's compiles, not the probe's")
			_, err = Solve(randSVD(t, n, kappa, 12), b, &Settings{Device: dev, Stats: &st})
			require.NoError(t, err)
			require.Equal(t, first, cache.Stats().Compiles, "a second matrix of the same size compiles nothing")
			require.Zero(t, st.Programs)
			require.Zero(t, st.ModeledCompile)
		})
	}
}

// TestFactorizeWork: the device does the O(n³) work. Device flops are
// those of the update program, 3·2·n²·b a panel (W·A, L₂₁·U and the panel
// selection) over n/b panels: 6n³. The host's are the panels (≈ n²·b),
// the multipliers and GMRES-IR (≈ 4n² per GMRES iteration): a ratio of
// about (b + 4·its)/(6n), which falls like 1/n at fixed b and iteration
// count. Asserted: ≤ 0.15 at n = 1024 (b = 128, ~15 GMRES iterations:
// (128 + 60)/6144 ≈ 0.03, 0.043 measured), and at the -short size n = 256
// (b = 64, ≈ 11 iterations: (64 + 44)/1536 ≈ 0.07, 0.13 measured) ≤ 0.5. The host share Host / ModeledTime is
// reported, not asserted (it is a wall-clock measurement).
func TestFactorizeWork(t *testing.T) {
	n, limit := 1024, 0.15
	if testing.Short() {
		n, limit = 256, 0.5
	}
	// κ₂ = 1e2: FP16 factors at every n (at κ₂ = 1e4 and n = 1024 the
	// compensated refactorization runs, whose ratio is 0.005).
	a := randSVD(t, n, 1e2, 8)
	b := randn(newRNG(9), n, 1).RawMatrix().Data
	var st Stats
	_, err := Solve(a, b, &Settings{Device: openDevice(t, "sim"), Stats: &st})
	require.NoError(t, err)
	ratio := float64(st.HostFlops) / float64(st.Flops)
	t.Logf("n = %d, b = %d: device %.3g flops in %d dispatches, host %.3g flops (ratio %.3f), %d GMRES iterations; host %v, modeled engine %v, modeled compile %v, build %v: host share %.2f of the modeled engine time",
		n, st.Block, float64(st.Flops), st.Dispatches, float64(st.HostFlops), ratio, st.GMRES, st.Host, st.ModeledTime, st.ModeledCompile, st.Build, st.Host.Seconds()/st.ModeledTime.Seconds())
	require.Less(t, ratio, limit)
	require.Equal(t, precision.FP16, st.Mode)
}

// TestFactorizeAblation: a device whose outputs are noise of the right
// norm makes the solve fail on both numerics models; the honest device
// converges.
func TestFactorizeAblation(t *testing.T) {
	const n = 64
	a := randSVD(t, n, 1e2, 6)
	b := randn(newRNG(7), n, 2)
	for _, d := range devices {
		var st Stats
		_, err := SolveMany(a, b, &Settings{Device: openDevice(t, d.name), Stats: &st})
		require.NoError(t, err, d.name)
		_, err = SolveMany(a, b, &Settings{Device: newNoiseDevice(openDevice(t, d.name), 99)})
		t.Logf("%s: honest device %d dispatches; noise: %v", d.name, st.Dispatches, err)
		require.Error(t, err, d.name)
		require.True(t, errors.Is(err, ErrNotConverged) || errors.Is(err, ErrRange) || errors.Is(err, ErrSingular), "%v", err)
	}
}
