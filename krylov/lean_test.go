package krylov

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
)

// cgGeneral runs CG with FastDiagonalization in the general FCG loop.
func cgGeneral(t testing.TB, a Operator, b []float64, s *Settings) Result {
	t.Helper()
	set := s.withDefaults(a.Dims())
	plan, err := planCG(a, set)
	require.NoError(t, err)
	plan.general = true
	res, err := solve(a, b, plan.set, plan.loop)
	require.NoError(t, err)
	return res
}

// TestLeanCG: CG's lean loop for FastDiagonalization reaches Tol = 1e-10
// in the true float64 residual (recomputed here by the reference
// package), with no more dispatches than the general FCG loop, and each
// dispatch moves exactly what the float64 iteration needs:
//
//   - host bytes: the residual in, as n fp16 values, and y out, n fp16
//     values: BytesIn + BytesOut = c·n bytes per dispatch with c = 2 + 2 = 4
//     (nothing else crosses: the sine matrices and M are constants of the
//     program);
//   - passes over the unknowns: three per dispatch (the encoding into
//     the device's surface, the dots with w = Â·z decoding the device's
//     surface in place, the step with the true residual).
func TestLeanCG(t *testing.T) {
	dev := simDevice(t, "sim")
	for _, g := range [][2]int{{64, 64}, {96, 40}, {128, 128}} {
		op := poisson(t, g[0], g[1])
		n := op.Dims()
		for name, b := range map[string][]float64{"random": randVec(n, 3), "smooth": smoothRHS(g[0], g[1])} {
			set := &Settings{Device: dev}
			plan, err := planCG(op, set.withDefaults(n))
			require.NoError(t, err)
			exe, err := plan.program(dev)
			require.NoError(t, err)
			ls, err := takeSession(exe) // the session the solve will use
			require.NoError(t, err)
			sess := ls.sess
			before := sess.Stats()
			giveSession(exe, ls)
			passes := leanPasses.Load()

			res, err := CG(op, b, set)
			require.NoError(t, err, "%v %s", g, name)
			require.True(t, res.Converged)
			rel := reference.RelResidual(hostOp{op}, res.X, b)
			require.LessOrEqual(t, rel, 1e-10, "%v %s: true residual", g, name)
			// The reported residual is the host's float64 one: it agrees
			// with the reference's recomputation to float64 rounding,
			// κ·2⁻⁵² ≈ 1.5e-12 relative to ‖b‖ at 128² (κ ≈ 6.6e3), far below
			// the 1e-12 allowed.
			require.InDelta(t, rel, res.Residual, 1e-12)

			after := sess.Stats()
			d := after.Dispatches - before.Dispatches
			require.Equal(t, res.Dispatches, d)
			bytes := (after.BytesIn - before.BytesIn) + (after.BytesOut - before.BytesOut)
			require.Equal(t, int64(4*n*d), bytes, "%v %s: host bytes", g, name)
			require.Equal(t, int64(3*d), leanPasses.Load()-passes, "%v %s: float64 passes", g, name)

			gen := cgGeneral(t, op, b, set)
			require.LessOrEqual(t, res.Dispatches, gen.Dispatches, "%v %s: dispatches, lean against general", g, name)
			t.Logf("%v %s: %d dispatches (general loop %d), residual %.3g", g, name, res.Dispatches, gen.Dispatches, rel)
		}
	}
}

// copyDevice is a device whose programs copy their input surface to their
// output surface: CG's host loop runs on it unchanged (it neither knows
// nor checks what the device computes), so a benchmark on it measures the
// host's work per dispatch alone, at sizes where the simulator takes
// seconds per dispatch.
type copyDevice struct{ info shim.Info }

type copyExe struct{ p *lower.Program }

func (d *copyDevice) Info() shim.Info { return d.info }
func (d *copyDevice) Compile(p *lower.Program) (shim.Executable, error) {
	return &copyExe{p}, nil
}
func (d *copyDevice) Close() error { return nil }

func (e *copyExe) Program() *lower.Program { return e.p }
func (e *copyExe) Close() error            { return nil }
func (e *copyExe) Run(in [][]float32) ([][]float32, error) {
	return [][]float32{append([]float32(nil), in[0]...)}, nil
}
func (e *copyExe) RunHalf(in, out [][]uint16) error {
	copy(out[0], in[0])
	return nil
}

// benchLeanHost runs lean CG on Poisson n² on copyDevice for a fixed six
// dispatches (before the stagnation window) and reports the measured host
// time per dispatch, the solve's fixed host work included.
func benchLeanHost(b *testing.B, n int) {
	sim := simDevice(b, "sim")
	dev := shim.NewCache(&copyDevice{info: sim.Info()})
	op := poisson(b, n, n)
	rhs := randVec(n*n, 1)
	set := &Settings{Device: dev, MaxDispatches: 6}
	if _, err := CG(op, rhs, set); err == nil {
		b.Fatal("converged on a copying device")
	}
	var res Result
	for b.Loop() {
		res, _ = CG(op, rhs, set)
	}
	b.ReportMetric(float64(res.Host.Microseconds())/1e3/float64(res.Dispatches), "host-ms/dispatch")
	b.ReportMetric(float64(res.Dispatches), "dispatches")
}

// benchGeneralHost is benchLeanHost in the general FCG loop, whose
// float32 Run's conversions and checks (inside Executable.Run, which
// Stats.Device times) are host work too: it reports (Host + Device) per
// dispatch.
func benchGeneralHost(b *testing.B, n int) {
	sim := simDevice(b, "sim")
	dev := shim.NewCache(&copyDevice{info: sim.Info()})
	op := poisson(b, n, n)
	rhs := randVec(n*n, 1)
	set := (&Settings{Device: dev, MaxDispatches: 6}).withDefaults(n * n)
	plan, err := planCG(op, set)
	if err != nil {
		b.Fatal(err)
	}
	plan.general = true
	var res Result
	for b.Loop() {
		res, _ = solve(op, rhs, plan.set, plan.loop)
	}
	b.ReportMetric(float64((res.Host+res.Device).Microseconds())/1e3/float64(res.Dispatches), "host-ms/dispatch")
	b.ReportMetric(float64(res.Dispatches), "dispatches")
}

func BenchmarkCGGeneralHost128(b *testing.B)  { benchGeneralHost(b, 128) }
func BenchmarkCGGeneralHost512(b *testing.B)  { benchGeneralHost(b, 512) }
func BenchmarkCGGeneralHost1024(b *testing.B) { benchGeneralHost(b, 1024) }

func BenchmarkCGLeanHost128(b *testing.B)  { benchLeanHost(b, 128) }
func BenchmarkCGLeanHost256(b *testing.B)  { benchLeanHost(b, 256) }
func BenchmarkCGLeanHost512(b *testing.B)  { benchLeanHost(b, 512) }
func BenchmarkCGLeanHost1024(b *testing.B) { benchLeanHost(b, 1024) }

// TestLeanCGBands: the lean loop split into bands of rows (as on several
// cores; here forced, of every width down to one row, at a size the
// loop would not split) reaches the single band's residuals in as many
// dispatches, moving the same bytes in the same passes.
func TestLeanCGBands(t *testing.T) {
	dev := simDevice(t, "sim")
	op := poisson(t, 48, 40)
	n := op.Dims()
	b := randVec(n, 5)
	set := &Settings{Device: dev}
	one, err := CG(op, b, set)
	require.NoError(t, err)
	defer func(f func(int, int) int) { leanBandCount = f }(leanBandCount)
	for _, k := range []int{2, 3, 7, 40} {
		leanBandCount = func(int, int) int { return k }
		passes := leanPasses.Load()
		res, err := CG(op, b, set)
		require.NoError(t, err, "%d bands", k)
		require.True(t, res.Converged)
		require.Equal(t, one.Dispatches, res.Dispatches, "%d bands", k)
		require.Equal(t, int64(3*res.Dispatches), leanPasses.Load()-passes)
		rel := reference.RelResidual(hostOp{op}, res.X, b)
		require.LessOrEqual(t, rel, 1e-10, "%d bands", k)
		require.InDelta(t, rel, res.Residual, 1e-12)
		// The sums are added in another order: the residuals agree to
		// rounding, not bits.
		require.InEpsilon(t, one.Residual, res.Residual, 1e-3, "%d bands", k)
	}
}
