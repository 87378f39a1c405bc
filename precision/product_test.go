package precision

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// Tolerances of the products (normwise relative errors on random normal
// data, wide accumulator "sim").
const (
	// A plain fp16 matvec rounds A, x, every product and the result once
	// each. The roundings are independent with zero mean and a relative
	// standard deviation of about 0.72·u16/√3 (uniform within ±½ ulp, the
	// ulp relative to a value falling across its binade); the first three
	// enter every term a_j·x_j, whose random signs make the error of
	// y_i = Σ_j a_j x_j, relative to y_i, about √3 times that; the last
	// adds one more: √4·0.72·u16/√3 ≈ 0.83·u16 (4.1e-4). fp16PlainMax = 4·u16
	// and fp16PlainMin = u16/8 bracket it with a wide margin on both sides;
	// the lower bound fails if the operands were not rounded to fp16 at all.
	fp16PlainMax = 4 * u16
	fp16PlainMin = u16 / 8
	// compensatedTol is the brief's target for the default 4 limbs of 6
	// bits: the rule of thumb 40·2^(−24) ≈ 2.4e-6 (docs/NUMERICS.md §2) is the
	// order; the measured value is 6.3e-7.
	compensatedTol = 1e-6
	// maxLimbsTol is the target with the most limbs (MaxLimbs = 12, i.e. 72
	// bits: the limb truncation is far below float64's rounding, so what is
	// left is the host's float64 sum, ~1e-15); 1e-9 is the brief's target.
	maxLimbsTol = 1e-9
)

// smallTarget wraps a device and reports a target with a smaller
// contraction limit, to exercise chunking; the simulator still runs the
// program (a program that fits a smaller limit fits its own).
type smallTarget struct {
	shim.Device
	maxSpatial int
}

func (s smallTarget) Info() shim.Info {
	in := s.Device.Info()
	in.Target.MaxSpatial = s.maxSpatial
	return in
}

func runMatVec(t testing.TB, dev shim.Device, a mat.Matrix, x []float64, opts MatVecOptions) (*MatVec, []float64) {
	t.Helper()
	mv, err := NewMatVec(dev, a, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mv.Close() })
	m, _ := a.Dims()
	y := make([]float64, m)
	require.NoError(t, mv.Apply(y, x))
	return mv, y
}

func TestFP16MatVec1024(t *testing.T) {
	rng := newRNG(10)
	const n = 1024
	a := randn(rng, n, n)
	x := randVec(rng, n)
	ref := mulVec(a, x)
	mv, y := runMatVec(t, openDevice(t, "sim"), a, x, MatVecOptions{Mode: FP16})
	e := RelErr(y, ref)
	t.Logf("plain fp16 matvec %d×%d (sim): relative error %.3g = %.2f·u16, %d pass(es)", n, n, e, e/u16, mv.Passes())
	require.LessOrEqual(t, e, fp16PlainMax)
	require.GreaterOrEqual(t, e, fp16PlainMin)
	require.Equal(t, 1, mv.Passes())
	require.Equal(t, FP16, mv.Mode())
}

func TestCompensatedMatVec(t *testing.T) {
	dev := openDevice(t, "sim")
	rng := newRNG(11)
	const n = 1024
	a := randn(rng, n, n)
	x := randVec(rng, n)
	xCopy := append([]float64(nil), x...)
	ref := mulVec(a, x)

	mv, y := runMatVec(t, dev, a, x, MatVecOptions{})
	e := RelErr(y, ref)
	limbs, bits := mv.Limbs()
	t.Logf("compensated (default %d limbs × %d bits) %d×%d (sim): relative error %.3g, %d passes, work %.1f× plain",
		limbs, bits, n, n, e, mv.Passes(), mv.Work())
	require.LessOrEqual(t, e, compensatedTol)
	require.Equal(t, Compensated, mv.Mode())
	require.Equal(t, DefaultLimbs, limbs)
	require.Equal(t, DefaultBits, bits)
	require.Equal(t, 2*DefaultLimbs, mv.Passes())
	require.Equal(t, xCopy, x, "x must not be modified")

	// A second Apply on another vector reuses the program.
	x2 := randVec(rng, n)
	y2 := make([]float64, n)
	require.NoError(t, mv.Apply(y2, x2))
	require.LessOrEqual(t, RelErr(y2, mulVec(a, x2)), compensatedTol)
	require.Equal(t, 2, mv.Dispatches())

	// The most limbs: 12 of 6 bits. 1024 in the long run, 512 under -short.
	size := n
	if testing.Short() {
		size = 512
	}
	as := a.Slice(0, size, 0, size)
	xs := x[:size]
	mv, y = runMatVec(t, dev, as, xs, MatVecOptions{Limbs: MaxLimbs})
	e = RelErr(y, mulVec(as, xs))
	t.Logf("compensated (%d limbs × 6 bits) %d×%d (sim): relative error %.3g, %d passes", MaxLimbs, size, size, e, mv.Passes())
	require.LessOrEqual(t, e, maxLimbsTol)

	// Float64 mode: 9 limbs cover float64's significand; what remains is
	// float64 rounding, a few 1e-16 times the cancellation ratio
	// ‖|A||x|‖/‖Ax‖ (~25 for normal data).
	mv, y = runMatVec(t, dev, as, xs, MatVecOptions{Mode: Float64})
	e = RelErr(y, mulVec(as, xs))
	limbs, _ = mv.Limbs()
	t.Logf("Float64 mode (%d limbs) %d×%d (sim): relative error %.3g", limbs, size, size, e)
	require.Equal(t, 9, limbs)
	require.LessOrEqual(t, e, 1e-13)
}

// TestMatVecChunked forces contraction chunks and non-square shapes through
// a target with a contraction limit of 512.
func TestMatVecChunked(t *testing.T) {
	dev := smallTarget{openDevice(t, "sim"), 512}
	rng := newRNG(12)
	a := randn(rng, 200, 700) // 4 limbs: chunks of ≤ 127 columns
	x := randVec(rng, 700)
	for _, tc := range []struct {
		opts   MatVecOptions
		tol    float64
		passes int
	}{
		{MatVecOptions{}, compensatedTol, 2 * 4 * 6},         // 4·kc ≤ 511: ⌈700/127⌉ = 6 chunks
		{MatVecOptions{Mode: FP16}, fp16PlainMax, 2},         // kc ≤ 512: 2 chunks
		{MatVecOptions{Limbs: 2, Bits: 6}, 64 * 0x1p-12, 12}, // 2·kc ≤ 511: 3 chunks; 40·2^(−12) rule, ×1.6 margin
	} {
		mv, y := runMatVec(t, dev, a, x, tc.opts)
		e := RelErr(y, mulVec(a, x))
		t.Logf("%v limbs %d: relative error %.3g, %d passes", mv.Mode(), tc.opts.Limbs, e, mv.Passes())
		require.LessOrEqual(t, e, tc.tol)
		require.Equal(t, tc.passes, mv.Passes())
	}
}

func TestMatMul256(t *testing.T) {
	dev := openDevice(t, "sim")
	rng := newRNG(13)
	const n = 256
	a, b := randn(rng, n, n), randn(rng, n, n)
	var ref mat.Dense
	ref.Mul(a, b)

	c, err := MatMul(dev, a, b, MatMulOptions{})
	require.NoError(t, err)
	e := frobRelErr(c, &ref)
	t.Logf("compensated matrix product %d×%d (sim): Frobenius relative error %.3g", n, n, e)
	require.LessOrEqual(t, e, compensatedTol)

	c, err = MatMul(dev, a, b, MatMulOptions{Mode: FP16})
	require.NoError(t, err)
	e = frobRelErr(c, &ref)
	t.Logf("plain fp16 matrix product %d×%d (sim): Frobenius relative error %.3g", n, n, e)
	require.LessOrEqual(t, e, fp16PlainMax)
	require.GreaterOrEqual(t, e, fp16PlainMin)
}

// TestMatMulPlan covers column blocks (more than 256 columns of B),
// rectangular shapes and reuse.
func TestMatMulPlan(t *testing.T) {
	dev := openDevice(t, "sim")
	rng := newRNG(14)
	a := randn(rng, 40, 60)
	mp, err := NewMatMul(dev, a, 300, MatMulOptions{Limbs: 3})
	require.NoError(t, err)
	defer mp.Close()
	m, k, n := mp.Dims()
	require.Equal(t, [3]int{40, 60, 300}, [3]int{m, k, n})
	require.Equal(t, 2*3*2, mp.Passes()) // two column blocks of 150
	for range 2 {
		b := randn(rng, 60, 300)
		var c, ref mat.Dense
		require.NoError(t, mp.Apply(&c, b))
		ref.Mul(a, b)
		e := frobRelErr(&c, &ref)
		// 3 limbs: 40·2^(−18) ≈ 1.5e-4 by the rule; measured ~3e-5 at 1024.
		require.LessOrEqual(t, e, 40*0x1p-18)
	}
	require.Equal(t, 2, mp.Dispatches())
	require.Equal(t, Compensated, mp.Mode())
	require.Greater(t, mp.Work(), 12.0)
}

func TestProductBadInput(t *testing.T) {
	dev := openDevice(t, "sim")
	a := mat.NewDense(3, 4, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	nanA := mat.NewDense(2, 2, []float64{1, math.NaN(), 0, 1})
	for _, tc := range []struct {
		name string
		dev  shim.Device
		a    mat.Matrix
		opts MatVecOptions
		want error
	}{
		{"nil device", nil, a, MatVecOptions{}, shim.ErrNoDevice},
		{"nil matrix", dev, nil, MatVecOptions{}, ErrShape},
		{"empty matrix", dev, &mat.Dense{}, MatVecOptions{}, ErrShape},
		{"unknown mode", dev, a, MatVecOptions{Mode: 7}, ErrInvalid},
		{"negative mode", dev, a, MatVecOptions{Mode: -1}, ErrInvalid},
		{"too many limbs", dev, a, MatVecOptions{Limbs: MaxLimbs + 1}, ErrInvalid},
		{"negative limbs", dev, a, MatVecOptions{Limbs: -1}, ErrInvalid},
		{"digits too wide", dev, a, MatVecOptions{Bits: 7}, ErrInvalid},
		{"nan compensated", dev, nanA, MatVecOptions{}, ErrRange},
		{"nan fp16", dev, nanA, MatVecOptions{Mode: FP16}, ErrRange},
		{"past the target", smallTarget{dev, 64}, mat.NewDense(100, 4, nil), MatVecOptions{}, lower.ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewMatVec(tc.dev, tc.a, tc.opts)
			require.ErrorIs(t, err, tc.want)
			require.True(t, strings.HasPrefix(err.Error(), "precision: "), err.Error())
		})
	}

	mv, err := NewMatVec(dev, a, MatVecOptions{})
	require.NoError(t, err)
	require.ErrorIs(t, mv.Apply(make([]float64, 3), make([]float64, 3)), ErrShape)
	require.ErrorIs(t, mv.Apply(make([]float64, 4), make([]float64, 4)), ErrShape)
	require.ErrorIs(t, mv.Apply(make([]float64, 3), []float64{1, math.Inf(1), 0, 0}), ErrRange)
	require.NoError(t, mv.Close())
	require.ErrorIs(t, mv.Apply(make([]float64, 3), make([]float64, 4)), ErrInvalid)
	require.NoError(t, mv.Close(), "Close is idempotent")

	_, err = MatMul(dev, a, mat.NewDense(3, 2, nil), MatMulOptions{})
	require.ErrorIs(t, err, ErrShape)
	mp, err := NewMatMul(dev, a, 2, MatMulOptions{Mode: FP16})
	require.NoError(t, err)
	defer mp.Close()
	require.ErrorIs(t, mp.Apply(&mat.Dense{}, mat.NewDense(4, 3, nil)), ErrShape)
	require.ErrorIs(t, mp.Apply(mat.NewDense(2, 2, nil), mat.NewDense(4, 2, nil)), ErrShape)
	require.ErrorIs(t, mp.Apply(nil, mat.NewDense(4, 2, nil)), ErrShape)
	_, err = NewMatMul(dev, a, 0, MatMulOptions{})
	require.ErrorIs(t, err, ErrShape)
}

// TestMatVecConcurrent runs Apply from several goroutines on one MatVec.
func TestMatVecConcurrent(t *testing.T) {
	dev := openDevice(t, "sim")
	rng := newRNG(15)
	a := randn(rng, 64, 64)
	mv, err := NewMatVec(dev, a, MatVecOptions{})
	require.NoError(t, err)
	defer mv.Close()
	xs := make([][]float64, 8)
	for i := range xs {
		xs[i] = randVec(rng, 64)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(xs))
	ys := make([][]float64, len(xs))
	for i := range xs {
		wg.Go(func() {
			ys[i] = make([]float64, 64)
			errs[i] = mv.Apply(ys[i], xs[i])
		})
	}
	wg.Wait()
	for i := range xs {
		require.NoError(t, errs[i])
		require.LessOrEqual(t, RelErr(ys[i], mulVec(a, xs[i])), compensatedTol)
	}
	require.Equal(t, len(xs), mv.Dispatches())
}

// TestLimbTable measures, for a random 1024×1024 matvec, the error each
// limb configuration reaches under the wide (sim) and narrow (sim-narrow)
// accumulators, with its device passes and work. It logs the table.
func TestLimbTable(t *testing.T) {
	if testing.Short() {
		t.Skip("1024×1024 sweep over limb counts and two devices")
	}
	rng := newRNG(16)
	const n = 1024
	a := randn(rng, n, n)
	x := randVec(rng, n)
	ref := mulVec(a, x)
	type row struct {
		mode        Mode
		bits, limbs int
	}
	rows := []row{{FP16, 0, 0}}
	for l := 1; l <= 6; l++ {
		rows = append(rows, row{Compensated, 6, l})
	}
	rows = append(rows, row{Float64, 0, 0}, row{Compensated, 6, MaxLimbs}, row{Compensated, 5, 5}, row{Compensated, 5, 7},
		row{Compensated, 4, 6}, row{Compensated, 4, 8}, row{Compensated, 3, 8})
	var lines []string
	lines = append(lines, "device     | mode        | bits | limbs | pairs | passes | work | relative error",
		"-----------|-------------|------|-------|-------|--------|------|---------------")
	for _, name := range []string{"sim", "sim-narrow"} {
		dev := openDevice(t, name)
		var prev, plain float64
		for i, r := range rows {
			mv, y := runMatVec(t, dev, a, x, MatVecOptions{Mode: r.mode, Bits: r.bits, Limbs: r.limbs})
			e := RelErr(y, ref)
			limbs, bits := mv.Limbs()
			pairs := limbs * (limbs + 1) / 2
			split := fmt.Sprintf("%4d | %5d | %5d", bits, limbs, pairs)
			if r.mode == FP16 {
				split = "   – |     – |     –"
			}
			lines = append(lines, fmt.Sprintf("%-10s | %-11v | %s | %6d | %4.0f | %.3g",
				name, mv.Mode(), split, mv.Passes(), mv.Work(), e))
			require.False(t, math.IsNaN(e))
			require.NoError(t, mv.Close())
			if i == 0 {
				plain = e
			}
			if name == "sim" && r.mode == Compensated && r.bits == 6 && r.limbs <= 6 {
				// The rule of thumb 40·2^(−b·L), within a factor 4.
				require.LessOrEqual(t, e, 160*math.Ldexp(1, -6*limbs), "%d limbs", limbs)
				if r.limbs > 1 {
					require.Less(t, e, prev/16, "each limb must gain at least 4 bits")
				}
				prev = e
			}
			if name == "sim-narrow" && limbs >= 3 {
				// An fp16 accumulator breaks the exactness, but the split
				// must not make matters worse than a plain pass.
				require.LessOrEqual(t, e, plain)
			}
		}
	}
	t.Log("random normal 1024×1024 matvec\n" + strings.Join(lines, "\n"))
}
