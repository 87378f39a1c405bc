package krylov

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
)

// withDenseRowLimit lowers the row length past which Dense vectors are
// channel blocks, for the test's duration.
func withDenseRowLimit(t *testing.T, limit int) {
	old := denseRowLimit
	denseRowLimit = limit
	t.Cleanup(func() { denseRowLimit = old })
}

// TestDenseShape: channel blocks [1, n/w, 1, w] with w the largest divisor
// of n within the row limit.
func TestDenseShape(t *testing.T) {
	require.Equal(t, []int{1, 16384}, []int(denseShape(16384)))
	require.Equal(t, []int{1, 2, 1, 8200}, []int(denseShape(16400)))
	require.Equal(t, []int{1, 4, 1, 16384}, []int(denseShape(65536)))
	require.Equal(t, []int{1, 16411, 1, 1}, []int(denseShape(16411)), "a prime: one value per channel")
	_, err := Dense(mat.NewDiagDense(MaxDenseUnknowns+1, nil))
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorContains(t, err, "at most 32767")
}

// TestMaxDenseUnknownsFitsWeightFile: MaxDenseUnknowns is the largest n
// whose fp16 matrix (2·n² bytes) leaves room in the engine's weight file
// for the file's header, the bands' records and the program's other
// constants (at least 64 KiB); one more unknown would not fit at all.
func TestMaxDenseUnknownsFitsWeightFile(t *testing.T) {
	bytes := func(n int64) int64 { return 2 * n * n }
	room := int64(engine.WeightFileLimit) - bytes(MaxDenseUnknowns)
	require.GreaterOrEqual(t, room, int64(64<<10), "room left beside the matrix")
	require.GreaterOrEqual(t, bytes(MaxDenseUnknowns+1), int64(engine.WeightFileLimit), "one more unknown must not fit with any header")
}

// TestCGDenseChannelBlocks: with the row limit lowered to 64, a dense SPD
// matrix of 300 unknowns runs in channel blocks [1, 5, 1, 60] with its
// product split into five bands of at most 64 input channels. The device
// product matches float64 within its fp16 bound; CG reaches
// 1e-10 against gonum's solve, in the dispatches of the one-row layout
// within one (the two sum the same products in other orders), every conv
// of the program contracts at most 64 channels, the noise device fails,
// the host share is logged, and the identity solves to x = b.
// Compensated mode is refused past the row limit.
func TestCGDenseChannelBlocks(t *testing.T) {
	const n = 300
	rng := rand.New(rand.NewPCG(300, 7))
	a, err := reference.RandSVD(n, 100, 3, true, rng)
	require.NoError(t, err)
	b := randVec(n, 4)
	var want mat.VecDense
	require.NoError(t, want.SolveVec(a, mat.NewVecDense(n, b)))
	dev := simDevice(t, "sim")

	row, err := CG(denseOf(t, a), b, &Settings{Device: dev})
	require.NoError(t, err)

	withDenseRowLimit(t, 64)
	op := denseOf(t, a)
	require.Equal(t, []int{1, 5, 1, 60}, []int(denseShape(n)))
	res, err := CG(op, b, &Settings{Device: dev})
	require.NoError(t, err)
	require.LessOrEqual(t, res.Residual, DefaultTol)
	require.InDelta(t, 0, reference.RelErr(res.X, want.RawVector().Data), 1e-8, "κ = 100: error ≤ κ·Tol")
	t.Logf("channel blocks: %d dispatches; one row: %d", res.Dispatches, row.Dispatches)
	require.InDelta(t, row.Dispatches, res.Dispatches, 1)

	// The blocked product itself against float64: each of the five bands'
	// convs rounds its weights and products to fp16 (u/2 each) and its sum
	// once; the four adds round once each. So ‖y − A·x‖₂ ≤ 4u·‖|A|·|x|‖₂.
	g := dataflow.New()
	xin := g.Input("x", denseShape(n))
	g.Output("y", op.DeviceApply(g, xin, 0))
	prog, err := lower.Lower(g, lower.TargetSim)
	require.NoError(t, err)
	exe, err := dev.Compile(prog)
	require.NoError(t, err)
	xv := roundFP16(func() []float32 {
		v := make([]float32, n)
		for i, f := range randVec(n, 8) {
			v[i] = float32(f)
		}
		return v
	}())
	out, err := exe.Run([][]float32{xv})
	require.NoError(t, err)
	var diff, bound float64
	for i := range n {
		s, sa := 0.0, 0.0
		for j := range n {
			s += a.At(i, j) * float64(xv[j])
			sa += math.Abs(a.At(i, j) * float64(xv[j]))
		}
		diff += (float64(out[0][i]) - s) * (float64(out[0][i]) - s)
		bound += sa * sa
	}
	t.Logf("blocked product: ‖y − A·x‖ = %.2f u of ‖|A|·|x|‖", math.Sqrt(diff/bound)/0x1p-11)
	require.Less(t, math.Sqrt(diff/bound), 4*0x1p-11)

	p, err := CGProgram(op, nil)
	require.NoError(t, err)
	c, err := lower.Estimate(p, "")
	require.NoError(t, err)
	convs := 0
	for _, nd := range c.PerNode {
		if nd.Op == "conv" {
			convs++
			// flops = 2·(output elements)·(contraction): n outputs.
			require.LessOrEqual(t, nd.Flops, int64(2*n*64), "%s contracts more than 64 channels", nd.Name)
		}
	}
	require.Equal(t, 5*DefaultUnroll, convs, "five bands per application")

	abl, err := CG(op, b, &Settings{Device: newNoiseDevice(t), MaxDispatches: 2 * res.Dispatches})
	require.ErrorIs(t, err, ErrNotConverged, "device noise must make the blocked solve fail")
	require.Greater(t, abl.Residual, 100*DefaultTol)
	share := bestHostShare(t, func() (Result, error) { return CG(op, b, &Settings{Device: dev}) })
	t.Logf("host share %.3f (wall-clock: logged, not asserted)", share)

	// The identity in blocks [1, 5, 1, 26]: x = b. Each dispatch gains
	// about the polynomial's rounding, 3·k·u ≈ 1/40 at k = 16 (see
	// TestChebyshevDeviceMatchesHost), so 1e-10 takes about 7, as in the
	// one-row layout.
	eye := denseOf(t, mat.NewDiagDense(130, ones(130)))
	require.Equal(t, []int{1, 5, 1, 26}, []int(denseShape(130)))
	be := randVec(130, 6)
	res, err = CG(eye, be, &Settings{Device: dev})
	require.NoError(t, err)
	require.LessOrEqual(t, res.Dispatches, 8)
	require.InDeltaSlice(t, be, res.X, 2*DefaultTol*norm2(be))

	_, err = CG(op, b, &Settings{Device: dev, Precision: precision.Compensated})
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorContains(t, err, "at most 64 unknowns")
}

// TestCGDensePastOneRow solves a dense SPD system of 16,400 unknowns (past
// one device row: channel blocks [1, 2, 1, 8200], two contraction bands)
// in FP16 mode to 1e-10. A = I + E with E symmetric, its entries
// uniform of standard deviation 1/(4√n), so that E's spectrum lies in
// about [−½, ½] (κ(A) ≈ 3) while its entries, about 2⁻⁹, stay far above
// the fp16 resolution of the device's weights (a diagonally dominant E of
// entries 1/n would be flushed to zero beside the diagonal, and the device
// would apply I). It needs about 12 GB of memory (the float64 matrix, its
// scaled copies and the fp16 weights, 2·n² bytes = 538 MB) and minutes,
// so it runs with ANEMONE_LONG=1 only.
func TestCGDensePastOneRow(t *testing.T) {
	if os.Getenv("ANEMONE_LONG") == "" {
		t.Skip("a 16400² dense solve needs about 12 GB and minutes; set ANEMONE_LONG=1")
	}
	const n = 16400
	rng := rand.New(rand.NewPCG(16400, 1))
	a := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i + 1; j < n; j++ {
			v := (rng.Float64()*2 - 1) * math.Sqrt(3) / (4 * math.Sqrt(n))
			a.SetSym(i, j, v)
		}
		a.SetSym(i, i, 1)
	}
	b := randVec(n, 5)
	runtime.GC()
	start := time.Now()
	op, err := Dense(a)
	require.NoError(t, err)
	a = nil
	runtime.GC()
	res, err := CG(op, b, &Settings{Device: simDevice(t, "sim")})
	wall := time.Since(start)
	require.NoError(t, err)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	relres := reference.RelResidual(hostOp{op}, res.X, b)
	t0 := time.Now()
	ref, err := reference.CG(hostOp{op}, b, reference.CGSettings{Tol: 1e-10, MaxIter: 1000})
	refTime := time.Since(t0)
	require.NoError(t, err)
	t.Logf("dense %d: %d dispatches, %d iterations, residual %.2g; wall %v (build %v, device %v, host %v, host share %.2f against the modeled engine); modeled M1 engine %v, compile %v, end to end %v; %.0f device B/unknown per iteration; peak heap %.1f GB; float64 CG (gonum Dgemv) %d iterations, %v; ‖A‖∞ = %.1f (Gershgorin; the polynomial's interval is Lanczos's)",
		n, res.Dispatches, res.Iterations, relres, wall, res.Build, res.Device, res.Host, res.Host.Seconds()/res.ModeledTime.Seconds(), res.ModeledTime, res.ModeledCompile, res.ModeledTotal,
		float64(res.DeviceBytes)/float64(n)/float64(res.Iterations), float64(ms.HeapSys)/1e9, ref.Iterations, refTime, op.NormInf())
	require.LessOrEqual(t, relres, 1e-10)
	require.False(t, math.IsNaN(relres))
	// The device's work is the weights, 2·n bytes per unknown per product,
	// plus a few vector passes; the host's, two float64 products per
	// dispatch against the device's sixteen.
	perIter := float64(res.DeviceBytes) / float64(n) / float64(res.Iterations)
	require.InDelta(t, 2*n, perIter, 200, "device bytes per unknown per iteration")
}

// TestGMRESDenseChannelBlocks: GMRES on a dense nonsymmetric matrix of
// 1100 unknowns (past Newton–Schulz's size, so its preconditioner is the
// device polynomial) in channel blocks [1, 20, 1, 55] with the row limit
// lowered to 64, to 1e-10, in both modes (past Newton–Schulz's size
// Compensated GMRES runs the same fp16 polynomial), with the host share
// logged, and the noise device fails.
func TestGMRESDenseChannelBlocks(t *testing.T) {
	const n = 1100
	rng := rand.New(rand.NewPCG(1100, 2))
	a := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			a.Set(i, j, (rng.Float64()*2-1)/float64(2*n))
		}
		a.Set(i, i, 1+float64(i%7)/7)
	}
	b := randVec(n, 9)
	withDenseRowLimit(t, 64)
	op := denseOf(t, a)
	require.Equal(t, []int{1, 20, 1, 55}, []int(denseShape(n)))
	dev := simDevice(t, "sim")
	res, err := GMRES(op, b, &Settings{Device: dev})
	require.NoError(t, err)
	require.LessOrEqual(t, reference.RelResidual(hostOp{op}, res.X, b), DefaultTol)
	t.Logf("GMRES on channel blocks: %d dispatches, residual %.2g", res.Dispatches, res.Residual)
	share := bestHostShare(t, func() (Result, error) { return GMRES(op, b, &Settings{Device: dev}) })
	t.Logf("host share %.3f (wall-clock: logged, not asserted)", share)
	noisy := &gmresNoiseDevice{Device: dev, rng: rand.New(rand.NewPCG(3, 4))}
	abl, err := GMRES(op, b, &Settings{Device: noisy})
	require.ErrorIs(t, err, ErrNotConverged, "device noise must make the blocked solve fail")
	require.Greater(t, abl.Residual, 1e3*gmresTol)
	res, err = GMRES(op, b, &Settings{Device: dev, Precision: precision.Compensated})
	require.NoError(t, err)
	require.LessOrEqual(t, reference.RelResidual(hostOp{op}, res.X, b), DefaultTol)
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
