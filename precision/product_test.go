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
// accumulators, with its device passes and work, and asserts every row
// against twice its rounding model (limbModel), and the passes and work
// exactly. It logs the table.
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
			// The passes and work columns, exactly: one pass in FP16 mode;
			// otherwise a hi and a lo pass per limb sum s < L (2L passes),
			// each forming the s + 1 limb pairs of its level per term, and
			// the lo pass one product more per output (−hi appended to its
			// contraction): Σ_s (2(s + 1) + 1/k) = L(L + 1) + L/k plain
			// matvecs, the table's 12, 20, … 90.
			if r.mode == FP16 {
				require.Equal(t, 1, mv.Passes())
				require.InDelta(t, 1, mv.Work(), 1e-12)
			} else {
				require.Equal(t, 2*limbs, mv.Passes(), "%s %v %d limbs", name, mv.Mode(), limbs)
				require.InDelta(t, float64(2*pairs)+float64(limbs)/n, mv.Work(), 1e-9, "%s %v %d limbs", name, mv.Mode(), limbs)
			}
			require.NoError(t, mv.Close())
			if i == 0 {
				plain = e
			}
			// Every row, both devices: within twice the rounding model
			// (limbModel, derived from u16, the contraction length k = 1024
			// and the digit split; measured/model is 0.96–1.05 under sim
			// except the float64 floor (Float64 0.85, 12 limbs 0.75), and
			// 0.62–0.78 for the rounding digit sums under sim-narrow, whose
			// model takes each partial sum's ulp as if never rounded before;
			// e.g. sim / sim-narrow: FP16 4.1e-4 (model 4.1e-4) / 4.6e-3
			// (4.7e-3), 4 limbs 6.5e-7 (6.2e-7) / 3.4e-3 (4.4e-3), Float64
			// 1.2e-15 (1.4e-15) / 3.4e-3, 4-bit digits, 8 limbs 3.7e-9
			// (3.6e-9) / 6.1e-5 (9.8e-5), 3-bit 9.6e-7 (9.2e-7) on both.
			model := limbModel(t, a, x, mv.Mode(), bits, limbs, name == "sim-narrow")
			require.LessOrEqual(t, e, 2*model, "%s %v %d×%d bits: error %.3g, model %.3g", name, mv.Mode(), limbs, bits, e, model)
			lines[len(lines)-1] += fmt.Sprintf(" (model %.3g)", model)
			if name == "sim" && r.mode == Compensated && r.bits == 6 && r.limbs <= 6 {
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

// ulp16n is the spacing of fp16 numbers at |v| as if in the normal range
// (the products scale their operands by powers of two, which leave
// relative spacings unchanged), 2u16 at 1; ulp64 is float64's.
func ulp16n(v float64) float64 {
	if v == 0 {
		return 0
	}
	_, e := math.Frexp(v) // |v| ∈ [2^(e−1), 2^e)
	return math.Ldexp(1, e-11)
}

func ulp64(v float64) float64 {
	if v == 0 {
		return 0
	}
	_, e := math.Frexp(v)
	return math.Ldexp(1, e-53)
}

// limbModel is the expected normwise relative error of the matvec A·x in
// the given configuration, derived from the rounding model (every rounding
// of a value v to a grid of spacing q independent, zero mean, variance
// q²/12; q = ulp16n(v) = 2u16·2^⌊log₂|v|⌋ for fp16) and the digit split,
// evaluated on the actual data. Each row i adds the variances of its
// error terms, in true units:
//
//   - FP16 (one pass): the roundings of a_ij, x_j and of every product
//     to fp16; under sim the float32 sum (2⁻²⁴, neglected) and one rounding
//     of y_i; under sim-narrow the fp16 running sum rounds every partial
//     sum P_j = Σ_{j'≤j} a_ij' x_j' instead (k − 1 roundings, which is why
//     it is √(k/2)·0.42 ≈ 10 times worse at k = 1024).
//   - Compensated, L limbs of b bits (scaled â = a·2^−E ∈ (−½, ½), each
//     truncation remainder uniform within ±½ unit of its last digit): the
//     kept pairs l + m ≤ L − 1 drop, per term, â·(x's remainder after L
//     digits), (A's remainder after L digits)·x̂ and the L − 1 products of
//     a lower digit (RMS 2^(−bl)/√12) by the matching remainder (RMS
//     2^(−b(L−l))/√12): variance 2^(−2bL)·(â²/12 + x̂²/12 + (L − 1)/144).
//     The digit sums are exact under sim. Under sim-narrow the fp16 running
//     sum of the integer digit products of level s (A_0·X_s, then
//     A_1·X_(s−1), …, in the contraction's order) rounds each partial sum
//     P past 2048 to a multiple q ≥ 2 of its unit (variance (q² + 2)/12 for
//     integers, ties to even); the lo pass repeats the same rounded sum, so
//     it corrects nothing, and level s weighs 2^(E_i + E_x − b(s+2)).
//   - Every configuration: the float64 reference itself (gonum's MulVec),
//     modelled as a float64 running sum (variance ulp64(P_j)²/12 per
//     partial sum), the floor of the Float64 and 12-limb rows.
//
// The model is an expected value; the measured error of 1024 rows of
// 1024 terms lies within a few per cent of it (rows × terms ≈ 10⁶
// independent roundings), so a bound of twice the model has no run-to-run
// flakiness (the data are seeded).
func limbModel(t testing.TB, a *mat.Dense, x []float64, mode Mode, bits, limbs int, narrow bool) float64 {
	m, k := a.Dims()
	var total, ref2 float64
	if mode == FP16 {
		for i := range m {
			row := a.RawRowView(i)
			var v, p float64
			for j, aij := range row {
				pr := aij * x[j]
				qa, qx, qp := x[j]*ulp16n(aij), aij*ulp16n(x[j]), ulp16n(pr)
				v += (qa*qa + qx*qx + qp*qp) / 12
				p += pr
				if j > 0 {
					if narrow {
						q := ulp16n(p)
						v += q * q / 12
					}
					q := ulp64(p)
					v += q * q / 12
				}
			}
			if !narrow {
				q := ulp16n(p)
				v += q * q / 12
			}
			total += v
			ref2 += p * p
		}
		return math.Sqrt(total / ref2)
	}
	al, err := SplitMatrix(a, limbs, bits)
	require.NoError(t, err)
	xl, err := SplitVector(x, limbs, bits)
	require.NoError(t, err)
	for i := range m {
		row := a.RawRowView(i)
		ea := al.RowExp[i]
		var trunc, floor, p float64
		for j, aij := range row {
			ah, xh := math.Ldexp(aij, -ea), math.Ldexp(x[j], -xl.Exp)
			trunc += ah*ah/12 + xh*xh/12 + float64(limbs-1)/144
			p += aij * x[j]
			if j > 0 {
				q := ulp64(p)
				floor += q * q / 12
			}
		}
		sc := math.Ldexp(1, ea+xl.Exp-bits*limbs)
		v := trunc*sc*sc + floor
		if narrow {
			for s := range limbs {
				var vs, ps float64
				first := true
				for l := 0; l <= s; l++ {
					da, dx := al.Digits[l][i*k:(i+1)*k], xl.Digits[s-l]
					for j, d := range da {
						ps += d * dx[j]
						if !first && math.Abs(ps) >= 2048 {
							q := ulp16n(ps)
							vs += (q*q + 2) / 12
						}
						first = false
					}
				}
				w := math.Ldexp(1, ea+xl.Exp-bits*(s+2))
				v += vs * w * w
			}
		}
		total += v
		ref2 += p * p
	}
	return math.Sqrt(total / ref2)
}
