package linalg

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// frobRelErr is ‖c − ref‖_F/‖ref‖_F (gonum's mat.Norm(·, 2) of a matrix
// is the Frobenius norm).
func frobRelErr(c, ref mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(c, ref)
	return mat.Norm(&d, 2) / mat.Norm(ref, 2)
}

// matMulTol is what each mode promises (MatMul's documentation), for a
// contraction of length k, on a device with a float32 accumulator (wide,
// "sim") or an fp16 one ("sim-narrow"):
//
//   - FP16, wide: each operand is rounded to fp16 once (relative error
//     uniform in ±u16/2·2, RMS u16/√3 per factor) and the float32 sum once
//     more to fp16 (RMS u16/√3): RMS about u16 in all, below the documented
//     u16·√(log₂ k) for every k ≥ 2 (the √(log₂ k) allows for the
//     accumulation order of long sums).
//   - FP16, narrow: every partial sum s_j is rounded to fp16 too, an error
//     of RMS below u16·|s_j|; with |s_j| ≈ √j·σ for random terms the sum's
//     error is u16·σ·√(Σ_j j) ≈ u16·σ·k/√2 against its size σ·√k:
//     u16·√(k/2), plus the u16 of the operand and output roundings.
//   - Compensated: 30 bits of digits (5 limbs of 6 bits; 10 limbs of 3 bits
//     on a narrow device, whose digit sums stay exact for random data),
//     digits exact to 2^(1−30) of each row's and column's largest entry;
//     for normal data the largest entry is ≤ 5 standard deviations, so
//     each digit error is at most 5·2⁻²⁹ standard deviations of each
//     factor, and the product's Frobenius relative error below
//     25·2⁻²⁹ ≈ 4.7e-8 (Compensated promises ≤ 1e-6).
//     On the narrow device that exactness needs every running digit sum
//     below 2¹¹ units; a sum of N digit products (RMS ≈ 6.7 each for
//     3-bit digits) wanders about 6.7·√N, so past k ≈ 2000 (N = 10·k for
//     the longest limb sum) some partial sums pass 2¹¹ and are rounded:
//     there only the documented 1e-6 is claimed (5.3e-8 measured at
//     k = 20000).
//   - Float64 (wide only): 9 limbs, 2^(1−54) per digit: 25·2⁻⁵³ ≈ 3e-15 ≤
//     1e-14.
func matMulTol(mode precision.Mode, k int, wide bool) float64 {
	switch {
	case mode == precision.FP16 && wide:
		return u16 * math.Sqrt(math.Log2(float64(k)))
	case mode == precision.FP16:
		return u16 * (1 + math.Sqrt(float64(k)/2))
	case mode == precision.Compensated && !wide && k > 2048:
		return 1e-6
	case mode == precision.Compensated:
		return 25 * 0x1p-29
	}
	return 1e-14
}

// devices are the two numerics models every accuracy claim is checked
// under: the float32 accumulator of the ANE ("sim") and the pessimistic
// fp16 one ("sim-narrow").
var devices = []struct {
	name string
	wide bool
}{{"sim", true}, {"sim-narrow", false}}

// TestMatMulTable is the README's MatMul table: Frobenius relative error
// against gonum for each device, mode and shape (run with -v to print the
// rows; 256 to 1024 without -short, which takes about 8 minutes on two
// busy cores: Float64 at 1024³, 9 limbs or ≈ 100 plain passes, 1m38s, and
// the narrow device's Compensated at 1024³, 10 limbs of 3 bits or ≈ 120
// passes of its slower kernel, 4m31s). Float64 on the narrow device must
// be ErrUnsupported.
func TestMatMulTable(t *testing.T) {
	type shape struct{ m, k, n int }
	shapes := []shape{{64, 64, 64}, {128, 128, 128}, {64, 200, 96}, {160, 64, 33}}
	if !testing.Short() {
		shapes = append(shapes, shape{256, 256, 256}, shape{512, 512, 512}, shape{300, 1024, 200}, shape{1024, 1024, 1024})
	}
	modes := []precision.Mode{precision.FP16, precision.Compensated, precision.Float64}
	t.Logf("| device | m×k×n | mode | rel. Frobenius error | bound | dispatches | device flops | time |")
	for _, d := range devices {
		dev := openDevice(t, d.name)
		for si, sh := range shapes {
			rng := newRNG(uint64(100 + si))
			a := randn(rng, sh.m, sh.k)
			b := randn(rng, sh.k, sh.n)
			ref, err := reference.MatMul(a, b)
			require.NoError(t, err)
			for _, mode := range modes {
				if testing.Short() && !d.wide && mode == precision.Compensated && sh.m*sh.k*sh.n > 160*64*33 {
					continue // ≈ 120 passes of the slow narrow kernel: keep -short fast
				}
				t.Run(fmt.Sprintf("%s/%dx%dx%d/%v", d.name, sh.m, sh.k, sh.n, mode), func(t *testing.T) {
					var st Stats
					start := time.Now()
					c, err := MatMul(a, b, &Settings{Device: dev, Precision: mode, Stats: &st})
					if !d.wide && mode == precision.Float64 {
						require.ErrorIs(t, err, ErrUnsupported)
						require.Nil(t, c)
						t.Logf("| %s | %d×%d×%d | %v | unsupported (fp16 accumulator) | – | – | – | – |", d.name, sh.m, sh.k, sh.n, mode)
						return
					}
					require.NoError(t, err)
					require.Equal(t, !d.wide, st.Narrow)
					e := frobRelErr(c, ref)
					tol := matMulTol(mode, sh.k, d.wide)
					t.Logf("| %s | %d×%d×%d | %v | %.2e | %.1e | %d | %.3g | %v |", d.name, sh.m, sh.k, sh.n, mode, e, tol, st.Dispatches, float64(st.Flops), time.Since(start).Round(time.Millisecond))
					require.False(t, math.IsNaN(e))
					require.LessOrEqual(t, e, tol)
				})
			}
		}
	}
}

// TestMatMulTiled: products past the simulator's limits (rows of A:
// bands, columns of B: blocks, one dispatch per band and block of one
// program; contraction: chunks in one program) against gonum. Tolerances
// as TestMatMulTable.
func TestMatMulTiled(t *testing.T) {
	for _, d := range devices {
		testMatMulTiled(t, d.name, d.wide)
	}
}

func testMatMulTiled(t *testing.T, name string, wide bool) {
	// The bands, from the simulator's limits (engine.Strict: spatial
	// 16384, channels 65536; height 16384, engine.HeightLimit): a band of
	// r rows has the output Cᵀ with r on its last axis (r ≤ 16384), and
	// in Compensated mode one input holding the band's L limbs stacked
	// along its rows, [L·r, k], whose height L·r ≤ 16384 (also under the
	// 65536 channels, alone and packed with B's 3·L rows). So FP16 bands
	// have up to 16384 rows, Compensated ones ⌊16384/5⌋ = 3276 on sim (5
	// limbs) and ⌊16384/10⌋ = 1638 on sim-narrow (10 limbs of 3 bits).
	// m rows take ⌈m/r⌉ equal bands (the last one overlapping), all of one
	// shape: one program however many dispatches. Float64 (sim only) has 9
	// limbs: bands of ⌊16384/9⌋ = 1820 rows.
	//
	// B's columns are cut the same way once not even one row fits with all
	// of them: B's L limbs are stacked along the rows of its input,
	// [L·c, k], so a block has at most ⌊16384/L⌋ columns (3276, 1638 and
	// 1820; FP16 16384, B's columns being the height of its input and of
	// the output), n columns take ⌈n/c⌉ equal blocks (the last one
	// overlapping) and every band is applied once per block.
	//
	//   - 16400 rows: FP16 2 bands of 8200; Compensated 6 of 2734 on sim
	//     (5·3276 = 16380 < 16400), 11 of 1491 on sim-narrow
	//     (10·1638 = 16380 < 16400).
	//   - 5000 rows: FP16 one band; Compensated 2 of 2500 on sim, 4 of
	//     1250 on sim-narrow.
	//   - 16400 rows: FP16 2 bands of 8200; Compensated 6 of 2734 on sim
	//     (5·3276 = 16380 < 16400), 11 of 1491 on sim-narrow
	//     (10·1638 = 16380 < 16400); Float64 10 of 1640 (9·1820 = 16380).
	//   - 5000 rows: FP16 one band; Compensated 2 of 2500 on sim, 4 of
	//     1250 on sim-narrow; Float64 3 of 1667.
	//   - 4 rows and a contraction of 20000 (two FP16 chunks of ≤ 8192, the
	//     compensated ones of ⌊(16384 − 3)/L⌋): one band, whose inputs need
	//     at most 13·10·(4 + 3) device rows.
	//   - 5000 columns (40 rows): FP16 one block; Compensated 2 blocks of
	//     2500 on sim (2·3276 ≥ 5000), 4 of 1250 on sim-narrow
	//     (3·1638 = 4914 < 5000), Float64 3 of 1667 (2·1820 < 5000); one
	//     band each.
	//   - 1830 rows and columns, Float64 only (sim, not in -short): 2 bands
	//     of 915 times 2 blocks of 915 (1830 > 1820): 4 dispatches, both
	//     axes cut (the shape of Factorize's compensated updates past
	//     n = 3276 on sim; a Compensated 3277² product takes ≈ 20 s here).
	type counts struct{ fp16, comp, narrow, f64 int }
	cases := []struct {
		m, k, n    int
		dispatches counts
		f64Only    bool
	}{
		{16400, 8, 3, counts{2, 6, 11, 10}, false},
		{5000, 8, 3, counts{1, 2, 4, 3}, false},
		{4, 20000, 3, counts{1, 1, 1, 1}, false},
		{40, 8, 5000, counts{1, 2, 4, 3}, false},
		{1830, 8, 1830, counts{f64: 4}, true},
	}
	for _, tc := range cases {
		modes := []precision.Mode{precision.FP16, precision.Compensated}
		if wide {
			modes = append(modes, precision.Float64) // ErrUnsupported on narrow
		}
		if tc.f64Only {
			if !wide || testing.Short() {
				continue
			}
			modes = []precision.Mode{precision.Float64}
		}
		for _, mode := range modes {
			if !wide && mode == precision.Compensated && testing.Short() {
				continue // ≈ 120 passes of the slow narrow kernel: keep -short fast
			}
			want := tc.dispatches.fp16
			switch {
			case mode == precision.Float64:
				want = tc.dispatches.f64
			case mode == precision.Compensated && wide:
				want = tc.dispatches.comp
			case mode == precision.Compensated:
				want = tc.dispatches.narrow
			}
			t.Run(fmt.Sprintf("%s/%dx%dx%d/%v", name, tc.m, tc.k, tc.n, mode), func(t *testing.T) {
				rng := newRNG(7)
				a, b := randn(rng, tc.m, tc.k), randn(rng, tc.k, tc.n)
				var st Stats
				fresh := openDevice(t, name) // so that the compiles are this call's
				c, err := MatMul(a, b, &Settings{Device: fresh, Precision: mode, Stats: &st})
				require.NoError(t, err)
				ref, err := reference.MatMul(a, b)
				require.NoError(t, err)
				require.LessOrEqual(t, frobRelErr(c, ref), matMulTol(mode, tc.k, wide))
				require.Equal(t, 1, st.Programs) // every band and block has one shape
				require.Equal(t, want, st.Dispatches)
				if tc.f64Only {
					return // ≈ 12 s a product: the cache is checked by the others
				}
				// Again on the same device: the program is there already.
				_, err = MatMul(a, b, &Settings{Device: fresh, Precision: mode, Stats: &st})
				require.NoError(t, err)
				require.Zero(t, st.Programs)
				require.Zero(t, st.ModeledCompile)
			})
		}
	}
}

// TestMatMulColumnBlocks: the product TestProductBadInput refused before
// B's columns were cut into blocks (2×2 times 2×(⌊16384/10⌋ + 1) on
// sim-narrow, whose B's 10 limbs stacked along the rows of one input pass
// the height limit engine.HeightLimit for any band of A) is two blocks of
// 820 columns (2·820 ≥ 1639), one program, two dispatches.
func TestMatMulColumnBlocks(t *testing.T) {
	const L = narrowCompensatedLimbs
	n := engine.HeightLimit/L + 1
	rng := newRNG(13)
	a, b := randn(rng, 2, 2), randn(rng, 2, n)
	var st Stats
	c, err := MatMul(a, b, &Settings{Device: openDevice(t, "sim-narrow"), Stats: &st})
	require.NoError(t, err)
	ref, err := reference.MatMul(a, b)
	require.NoError(t, err)
	require.LessOrEqual(t, frobRelErr(c, ref), matMulTol(precision.Compensated, 2, false))
	require.Equal(t, 1, st.Programs)
	require.Equal(t, (n+engine.HeightLimit/L-1)/(engine.HeightLimit/L), st.Dispatches)
}

// TestMatVec against gonum, every mode (tolerances as TestMatMulTable).
func TestMatVec(t *testing.T) {
	dev := openDevice(t, "sim")
	const wide = true
	rng := newRNG(11)
	a := randn(rng, 96, 130)
	x := randn(rng, 130, 1).RawMatrix().Data
	want := make([]float64, 96)
	mat.NewVecDense(96, want).MulVec(a, mat.NewVecDense(130, x))
	for _, mode := range []precision.Mode{0, precision.FP16, precision.Compensated, precision.Float64} {
		y, err := MatVec(a, x, &Settings{Device: dev, Precision: mode})
		require.NoError(t, err)
		m := mode
		if m == 0 {
			m = precision.Compensated
		}
		require.LessOrEqual(t, precision.RelErr(y, want), matMulTol(m, 130, wide), "%v", mode)
	}
}

// TestProductBadInput: every bad input is an error wrapping the sentinel,
// never a panic.
func TestProductBadInput(t *testing.T) {
	dev := openDevice(t, "sim")
	s := &Settings{Device: dev}
	good := mat.NewDense(2, 2, []float64{1, 2, 3, 4})
	nan := mat.NewDense(2, 2, []float64{1, math.NaN(), 3, 4})
	inf := mat.NewDense(2, 2, []float64{1, 2, math.Inf(-1), 4})
	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"shape", func() error { _, err := MatMul(good, mat.NewDense(3, 2, nil), s); return err }, ErrShape},
		{"nil", func() error { _, err := MatMul(nil, good, s); return err }, ErrShape},
		{"nan", func() error { _, err := MatMul(good, nan, s); return err }, ErrRange},
		{"inf", func() error { _, err := MatMul(inf, good, s); return err }, ErrRange},
		{"vec length", func() error { _, err := MatVec(good, []float64{1}, s); return err }, ErrShape},
		{"vec nan", func() error { _, err := MatVec(good, []float64{1, math.NaN()}, s); return err }, ErrRange},
		{"mode", func() error {
			_, err := MatMul(good, good, &Settings{Device: dev, Precision: 7})
			return err
		}, ErrInvalid},
		{"tol", func() error { _, err := MatMul(good, good, &Settings{Device: dev, Tol: -1}); return err }, ErrInvalid},
		{"float64 narrow", func() error {
			_, err := MatMul(good, good, &Settings{Device: openDevice(t, "sim-narrow"), Precision: precision.Float64})
			return err
		}, ErrUnsupported},
		{"contraction past the chunks' limit", func() error {
			// Columns of B no longer limit a product (they are cut into
			// blocks, TestMatMulColumnBlocks), a contraction cut into too
			// many chunks still does: on sim-narrow (10 limbs of 3 bits)
			// each chunk of kc = ⌊min(2^(26−2·3), MaxSpatial − 1)/10⌋ has
			// its own A and B inputs, of 10 device rows each for one row
			// and one column; past ⌊MaxChannels/20⌋ chunks they pass the
			// channel limit of the one packed input surface.
			dev := openDevice(t, "sim-narrow")
			tg := dev.Info().Target
			const L, bits = narrowCompensatedLimbs, narrowBits
			kc := min(1<<(26-2*bits), tg.MaxSpatial-1) / L
			k := (tg.MaxChannels/(2*L) + 1) * kc
			_, err := MatMul(mat.NewDense(1, k, nil), mat.NewDense(k, 1, nil), &Settings{Device: dev})
			if err != nil && (!strings.Contains(err.Error(), "even for one row and one column") || !strings.Contains(err.Error(), "channel limit")) {
				return errors.New("unclear: " + err.Error()) // not the sentinel
			}
			return err
		}, ErrUnsupported},
		{"solve float64 narrow", func() error {
			_, err := Solve(good, []float64{1, 2}, &Settings{Device: openDevice(t, "sim-narrow"), Precision: precision.Float64})
			return err
		}, ErrUnsupported},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.want), "%v", err)
			require.Contains(t, err.Error(), "linalg: ")
		})
	}
}
