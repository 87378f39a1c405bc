package krylov

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
)

// The solvers as the tests call them: name, solver, precision.
var solvers = []struct {
	name  string
	solve func(Operator, []float64, *Settings) (Result, error)
	mode  precision.Mode
}{
	{"CG FP16", CG, precision.FP16},
	{"CG Compensated", CG, precision.Compensated},
	{"GMRES FP16", GMRES, precision.FP16},
	{"GMRES Compensated", GMRES, precision.Compensated},
}

func diagOp(t testing.TB, d ...float64) Operator {
	t.Helper()
	return denseOf(t, mat.NewDiagDense(len(d), d))
}

// trueResidual is ‖b − A·x‖₂/‖b‖₂ computed exactly as the solvers compute
// it (the same operations in the same order), so that it is bitwise equal
// to a residual the solver recomputed for x.
func trueResidual(a Operator, x, b []float64) float64 {
	r := make([]float64, len(b))
	return residual(r, a, x, b) / norm2(b)
}

// TestTrivialSystems: the first systems a user tries. fp16 CG solves a
// multiple of the identity exactly inside one dispatch, so its last search
// direction is zero: that is convergence, not breakdown. For a diagonal A
// with κ ≤ 2, ‖x − x*‖/‖x*‖ ≤ κ·‖r‖/‖b‖ ≤ 2·Tol.
func TestTrivialSystems(t *testing.T) {
	dev := simDevice(t, "sim")
	identity, err := Stencil2D(8, 8, [3][3]float64{{0, 0, 0}, {0, 1, 0}, {0, 0, 0}})
	require.NoError(t, err)
	systems := []struct {
		name string
		op   Operator
		diag []float64 // A's diagonal (A is diagonal)
	}{
		{"I", diagOp(t, 1, 1, 1, 1), []float64{1, 1, 1, 1}},
		{"4·I", diagOp(t, 4, 4, 4, 4), []float64{4, 4, 4, 4}},
		{"diag(1, 2, 1, 2)", diagOp(t, 1, 2, 1, 2), []float64{1, 2, 1, 2}},
		{"1×1 (3)", diagOp(t, 3), []float64{3}},
		{"1×1 (1e-3)", diagOp(t, 1e-3), []float64{1e-3}},
		{"identity stencil 8×8", identity, identity.Diagonal()},
	}
	for _, sys := range systems {
		for _, sv := range solvers {
			t.Run(sys.name+"/"+sv.name, func(t *testing.T) {
				n := sys.op.Dims()
				b := randVec(n, uint64(n))
				res, err := sv.solve(sys.op, b, &Settings{Device: dev, Precision: sv.mode})
				require.NoError(t, err)
				require.True(t, res.Converged)
				require.LessOrEqual(t, res.Residual, DefaultTol)
				for i, v := range res.X {
					want := b[i] / sys.diag[i]
					require.InDelta(t, want, v, 2*DefaultTol*norm2(b)/sys.diag[i]+1e-300, "x[%d]", i)
				}
			})
		}
	}
}

// nanDense is a dense operator (with its compensated form) whose host
// product returns NaN from call `after` on.
type nanDense struct {
	*denseOp
	after, calls int
}

func (o *nanDense) MulVecTo(dst, x []float64) {
	o.denseOp.MulVecTo(dst, x)
	if o.calls++; o.calls > o.after {
		dst[0] = math.NaN()
	}
}

// TestNonFiniteNeverConverged: a NaN or infinite residual fails the solve,
// in every solver and mode: at the start (X0 whose image overflows, an
// operator whose MulVecTo returns NaN) as ErrInput, later as
// ErrNotConverged with the best finite iterate.
func TestNonFiniteNeverConverged(t *testing.T) {
	dev := simDevice(t, "sim")
	const n = 16
	base := denseOf(t, mustPoissonDense(t, 4)).(*denseOp)
	b := randVec(n, 3)
	huge := make([]float64, n)
	for i := range huge {
		huge[i] = 1e307 // A·X0 overflows: the diagonal is 4·(4+1)² = 100
	}
	for _, sv := range solvers {
		t.Run(sv.name, func(t *testing.T) {
			cases := []struct {
				name string
				op   Operator
				x0   []float64
				want error
			}{
				{"X0 image overflows", base, huge, ErrInput},
				{"MulVecTo NaN at once", &nanDense{denseOp: base}, nil, ErrInput},
				{"MulVecTo NaN after two products", &nanDense{denseOp: base, after: 2}, nil, ErrNotConverged},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					res, err := sv.solve(c.op, b, &Settings{Device: dev, Precision: sv.mode, X0: c.x0})
					require.ErrorIs(t, err, c.want)
					require.False(t, res.Converged)
					if c.want == ErrNotConverged {
						// The best iterate met: finite, and no worse than x = 0.
						_, _, bad := firstNonFinite(res.X)
						require.False(t, bad, "x is finite")
						require.LessOrEqual(t, res.Residual, 1.0)
						require.Equal(t, trueResidual(base, res.X, b), res.Residual)
					}
				})
			}
		})
	}
}

// userNorm is an operator with a NormInf of the test's choosing.
type userNorm struct {
	Operator
	norm float64
}

func (u *userNorm) NormInf() float64 { return u.norm }

// TestSentinels: one sentinel per kind of failure, the same in every
// solver and mode.
func TestSentinels(t *testing.T) {
	dev := simDevice(t, "sim")
	p := poisson(t, 4, 4)
	b := randVec(16, 1)
	for _, sv := range solvers {
		t.Run(sv.name, func(t *testing.T) {
			for _, v := range []float64{math.NaN(), math.Inf(1), -1} {
				_, err := sv.solve(&userNorm{p, v}, b, &Settings{Device: dev, Precision: sv.mode})
				require.ErrorIs(t, err, ErrInput, "NormInf() = %g", v)
				require.Contains(t, err.Error(), "NormInf()")
			}
		})
	}
	// Negative curvature with a positive diagonal: blocks [[2, 3], [3, 2]]
	// have eigenvalues 5 and −1, and only the iteration can find out.
	a := mat.NewDense(8, 8, nil)
	for k := 0; k < 8; k += 2 {
		a.Set(k, k, 2)
		a.Set(k+1, k+1, 2)
		a.Set(k, k+1, 3)
		a.Set(k+1, k, 3)
	}
	for _, mode := range []precision.Mode{precision.FP16, precision.Compensated} {
		_, err := CG(denseOf(t, a), randVec(8, 2), &Settings{Device: dev, Precision: mode})
		require.ErrorIs(t, err, ErrNotSPD, "mode %v", mode)
		require.NotContains(t, err.Error(), "Compensated")
	}
	// An indefinite diagonal is ErrNotSPD at once in both modes, with no
	// advice to try the other one.
	for _, mode := range []precision.Mode{precision.FP16, precision.Compensated} {
		res, err := CG(diagOp(t, 1, -2, 3, 4, 5, 6, 7, 8), randVec(8, 2), &Settings{Device: dev, Precision: mode})
		require.ErrorIs(t, err, ErrNotSPD)
		require.Contains(t, err.Error(), "diagonal entry 1 is -2")
		require.NotContains(t, err.Error(), "Compensated")
		require.Zero(t, res.Dispatches)
	}
	// ‖A‖∞ beyond float64: refused when the operator is built.
	_, err := Dense(mat.NewDense(2, 2, []float64{1e308, 1e308, 0, 1}))
	require.ErrorIs(t, err, ErrInput)
	require.Contains(t, err.Error(), "overflows")
	_, err = Stencil2D(4, 4, [3][3]float64{{1e308, 1e308, 0}, {0, 1, 0}, {0, 0, 0}})
	require.ErrorIs(t, err, ErrInput)
	// The zero operator: not SPD for CG, singular for GMRES.
	_, err = CG(gmresZeroOp{4}, randVec(4, 1), &Settings{Device: dev})
	require.ErrorIs(t, err, ErrNotSPD)
	_, err = GMRES(gmresZeroOp{4}, randVec(4, 1), &Settings{Device: dev})
	require.ErrorIs(t, err, ErrInput)
}

// TestSettingsPerSolver: a field a solver does not use is not an error;
// a field it would have to ignore is refused; absurd sizes are refused
// with the maximum, before anything is built.
func TestSettingsPerSolver(t *testing.T) {
	dev := simDevice(t, "sim")
	p := poisson(t, 8, 8)
	b := randVec(64, 1)
	pre, err := Jacobi(p)
	require.NoError(t, err)

	res, err := CG(p, b, &Settings{Device: dev, Restart: -1})
	require.NoError(t, err, "CG does not use Restart")
	require.True(t, res.Converged)
	res, err = GMRES(p, b, &Settings{Device: dev, Unroll: -1, Restart: 20})
	require.NoError(t, err, "GMRES does not use Unroll")
	require.True(t, res.Converged)

	big := poisson(t, 20, 20)
	for _, c := range []struct {
		name  string
		solve func(Operator, []float64, *Settings) (Result, error)
		op    Operator
		s     Settings
		says  string
	}{
		{"GMRES with Precond", GMRES, p, Settings{Precond: pre}, "does not apply Settings.Precond"},
		{"CG Unroll 10000", CG, p, Settings{Unroll: 10000}, "use 1 … 256 iterations per dispatch"},
		{"CG Unroll −1", CG, p, Settings{Unroll: -1}, "Unroll -1 is out of range"},
		{"GMRES Restart 300 on n = 400", GMRES, big, Settings{Restart: 300}, "use 1 … 32 Arnoldi steps"},
		{"GMRES Restart −1", GMRES, p, Settings{Restart: -1}, "Restart -1 is out of range"},
		{"MaxDispatches −1", CG, p, Settings{MaxDispatches: -1}, "MaxDispatches -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			s.Device = dev
			builds := graphBuilds.Load()
			res, err := c.solve(c.op, randVec(c.op.Dims(), 1), &s)
			require.ErrorIs(t, err, ErrInput)
			require.Contains(t, err.Error(), c.says)
			require.Zero(t, res.Dispatches)
			require.Equal(t, builds, graphBuilds.Load(), "refused before any graph is built")
		})
	}
	// GMRES's m is min(Restart, n): a long Restart on a small system is fine.
	res, err = GMRES(diagOp(t, 1, 2, 3), randVec(3, 1), &Settings{Device: dev, Restart: 10000})
	require.NoError(t, err)
	require.True(t, res.Converged)
}

// TestSingularBestIterate: diag(1, 2, 0, 3)·x = b has no solution; a solve
// must end with ErrNotConverged and the best iterate it met, whose residual
// is at most that of x = 0 and is reported truthfully.
func TestSingularBestIterate(t *testing.T) {
	dev := simDevice(t, "sim")
	op := diagOp(t, 1, 2, 0, 3)
	b := []float64{1, 1, 1, 1}
	for _, sv := range solvers {
		t.Run(sv.name, func(t *testing.T) {
			res, err := sv.solve(op, b, &Settings{Device: dev, Precision: sv.mode, MaxDispatches: 40})
			require.ErrorIs(t, err, ErrNotConverged)
			require.False(t, res.Converged)
			require.LessOrEqual(t, res.Residual, 1.0, "no worse than x = 0")
			// The least-squares residual is |b₂|/‖b‖ = ½: nothing does better.
			require.GreaterOrEqual(t, res.Residual, 0.5*(1-1e-12))
			require.Equal(t, trueResidual(op, res.X, b), res.Residual)
			for _, h := range res.History {
				require.GreaterOrEqual(t, h, res.Residual)
			}
		})
	}
}

// skewedDevice applies 0.4·A on the device while the host multiplies by A:
// every FP16 GMRES step d ≈ (0.4·A)⁻¹·r overshoots 2.5-fold, so the full
// step's residual, about r − 2.5·r = −1.5·r, is larger than r, and the
// host's guard shortens every step.
type skewedDevice struct{ *denseOp }

func (s *skewedDevice) DeviceApply(g *dataflow.Graph, x dataflow.Value, scale int) dataflow.Value {
	return g.Mul(s.denseOp.DeviceApply(g, x, scale), g.Scalar(0.4))
}

// TestGMRESShortenedStepResidual: after a shortened step, the residual
// GMRES reports is b − A·x recomputed for the x it returns (bitwise equal
// to the same computation here), not one formed by recurrence.
func TestGMRESShortenedStepResidual(t *testing.T) {
	dev := simDevice(t, "sim")
	d := make([]float64, 32)
	for i := range d {
		d[i] = 1 + float64(i)/8
	}
	base := diagOp(t, d...).(*denseOp)
	op := &skewedDevice{base}
	b := randVec(32, 4)
	var steps []Step
	res, err := GMRES(op, b, &Settings{Device: dev, Restart: 4, MaxDispatches: 6, Trace: func(s Step) { steps = append(steps, s) }})
	require.ErrorIs(t, err, ErrNotConverged)
	require.Len(t, steps, 6)
	require.Equal(t, trueResidual(base, res.X, b), res.Residual)
	for k := 1; k < len(res.History); k++ {
		require.LessOrEqual(t, res.History[k], res.History[k-1], "the guard never lets a cycle increase the residual")
	}
	require.Less(t, res.Residual, 0.5, "the shortened steps still gain")
}

// TestExtremeScales: b (and so x) scaled by 2^±1000 solves exactly as the
// unscaled system does: the host scales b by a power of two first, so no
// dot product of residuals under- or overflows and no device input does.
// The solutions agree to about κ·Tol (κ(Poisson 8²) ≈ 32).
func TestExtremeScales(t *testing.T) {
	dev := simDevice(t, "sim")
	p := poisson(t, 8, 8)
	pd := denseOf(t, mustPoissonDense(t, 8))
	b := randVec(64, 6)
	for _, sv := range solvers {
		op := p
		if sv.mode == precision.Compensated {
			op = pd // a 1/h² stencil has no compensated form
		}
		t.Run(sv.name, func(t *testing.T) {
			set := &Settings{Device: dev, Precision: sv.mode, Restart: 16}
			ref, err := sv.solve(op, b, set)
			require.NoError(t, err)
			for _, s := range []float64{1e-300, 1e300, 0x1p-1000, 0x1p1000} {
				bs := make([]float64, len(b))
				for i := range b {
					bs[i] = b[i] * s
				}
				res, err := sv.solve(op, bs, set)
				require.NoError(t, err, "‖b‖ scaled by %g", s)
				require.True(t, res.Converged)
				for i := range res.X {
					require.InDelta(t, ref.X[i], res.X[i]/s, 64*DefaultTol*norm2(ref.X), "x[%d], scale %g", i, s)
				}
			}
		})
	}
}

func mustPoissonDense(t *testing.T, n int) *mat.Dense {
	t.Helper()
	csr, err := reference.Poisson2D(n, n)
	require.NoError(t, err)
	return csr.Dense()
}

// TestExtremeOperatorScales: A scaled by 1e±300 solves as A does (x scaled
// by the inverse): the device sees 2^σ·A, and the host's curvature is
// taken of 2^σ·p, so nothing under- or overflows and CG blames no
// indefiniteness. Agreement to κ·Tol as in TestExtremeScales.
func TestExtremeOperatorScales(t *testing.T) {
	dev := simDevice(t, "sim")
	b := randVec(64, 7)
	laplace := func(s float64) Operator {
		op, err := Stencil2D(8, 8, [3][3]float64{{0, -s, 0}, {-s, 4 * s, -s}, {0, -s, 0}})
		require.NoError(t, err)
		return op
	}
	for _, sv := range solvers[:3:3] {
		if sv.mode != precision.FP16 {
			continue
		}
		t.Run(sv.name, func(t *testing.T) {
			ref, err := sv.solve(laplace(1), b, &Settings{Device: dev})
			require.NoError(t, err)
			for _, s := range []float64{1e-300, 1e300} {
				res, err := sv.solve(laplace(s), b, &Settings{Device: dev})
				require.NoError(t, err, "A scaled by %g", s)
				require.True(t, res.Converged)
				for i := range res.X {
					require.InDelta(t, ref.X[i], res.X[i]*s, 64*DefaultTol*norm2(ref.X), "x[%d], scale %g", i, s)
				}
			}
		})
	}
}

// TestDefaultMaxDispatches: the default bound grows like a grid's side, so
// a million-unknown Poisson solve (268 dispatches at Unroll 16) fits it,
// and a set value is kept.
func TestDefaultMaxDispatches(t *testing.T) {
	require.Equal(t, DefaultMaxDispatches, (&Settings{}).withDefaults(1).MaxDispatches)
	require.Equal(t, DefaultMaxDispatches, (&Settings{}).withDefaults(128*128).MaxDispatches)
	require.Equal(t, 1024, (&Settings{}).withDefaults(1024*1024).MaxDispatches)
	require.Equal(t, 1025, (&Settings{}).withDefaults(1024*1024+1).MaxDispatches)
	require.Equal(t, 7, (&Settings{MaxDispatches: 7}).withDefaults(1024*1024).MaxDispatches)
}
