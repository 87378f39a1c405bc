package krylov

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/reference"
)

// gonumSolution is x = A⁻¹·b by gonum's LU (a Condition warning is no
// failure: the matrices here are badly scaled, not ill-conditioned).
func gonumSolution(t *testing.T, a *mat.Dense, b []float64) []float64 {
	t.Helper()
	var x mat.VecDense
	if err := x.SolveVec(a, mat.NewVecDense(len(b), append([]float64(nil), b...))); err != nil {
		var c mat.Condition
		require.True(t, errors.As(err, &c), "gonum: %v", err)
	}
	return x.RawVector().Data
}

// TestCGSymmetricallyScaled: A = D·K·D with K = KMS(0.5) (κ₂ about 9) and
// D spanning 2^±10, so that A's diagonal spans 2⁴⁰ and κ₂(A) is about
// 1e12, while the S·A·S CG's polynomial works on is K again. For most unit
// p, pᵀAp is then far below 1e-12·‖A‖∞: CG measured zero curvature against
// ‖A‖∞ and stopped in its first dispatch, calling the SPD matrix singular.
// Measured against ‖S·A·S‖∞·‖S⁻¹p‖², it converges in a few dispatches, to
// gonum's solution (agreement 3e-15).
func TestCGSymmetricallyScaled(t *testing.T) {
	dev := simDevice(t, "sim")
	a := dkd(t, 30, func(i int) float64 { return 10 * float64(i%3-1) })
	b := randVec(30, 11)
	want := gonumSolution(t, a, b)
	op := denseOf(t, a)
	jac, err := Jacobi(op)
	require.NoError(t, err)
	for _, pre := range []Preconditioner{nil, jac} {
		res, err := CG(op, b, &Settings{Device: dev, Precond: pre})
		require.NoError(t, err, "Precond %T", pre)
		require.True(t, res.Converged)
		require.LessOrEqual(t, res.Residual, DefaultTol)
		require.LessOrEqual(t, reference.RelErr(res.X, want), 1e-9, "Precond %T: forward error against gonum", pre)
	}
}

// TestGMRESRowScaled: A = D·K with K = KMS(0.5) and D spanning 2^±20 (rows
// scaled about 10^±6), b random. The equilibrated R·A·C is K again, but
// the device's compensated image B·z, carried back through R⁻¹, had
// errors 2⁴⁰ times the rows with small entries, the Arnoldi relation
// failed and GMRES stagnated at x = 0 (residual 1, forward error 1). With
// the image from the host past gmresImageSpread, GMRES reaches gonum's
// solution to 1e-10; the residual stops near float64's floor for this
// scaling (about ε·‖|A|·|x|‖/‖b‖ ≈ 1e-5, gonum's own LU leaves 4e-5), so
// Tol 1e-10 is out of reach and the solve says ErrNotConverged, while Tol
// 1e-4 converges.
func TestGMRESRowScaled(t *testing.T) {
	dev := simDevice(t, "sim")
	const n = 30
	k, err := reference.KMS(n, 0.5)
	require.NoError(t, err)
	a := mat.NewDense(n, n, nil)
	a.Apply(func(i, j int, v float64) float64 { return math.Ldexp(v, 20*(i%3-1)) }, k)
	b := randVec(n, 12)
	want := gonumSolution(t, a, b)
	op := denseOf(t, a)

	res, err := GMRES(op, b, &Settings{Device: dev, Tol: 1e-4})
	require.NoError(t, err)
	require.True(t, res.Converged)
	require.LessOrEqual(t, res.Residual, 1e-4)
	require.LessOrEqual(t, reference.RelErr(res.X, want), 10*1e-4, "forward error against gonum at Tol 1e-4 (κ₂(K) ≈ 9)")

	res, err = GMRES(op, b, &Settings{Device: dev})
	require.ErrorIs(t, err, ErrNotConverged)
	require.False(t, res.Converged)
	require.Less(t, res.Residual, 1e-3)
	require.LessOrEqual(t, reference.RelErr(res.X, want), 1e-10, "forward error against gonum at the residual's floor")
}

// stencilMatrix is Stencil2D's matrix, assembled densely.
func stencilMatrix(nx, ny int, c [3][3]float64) *mat.Dense {
	n := nx * ny
	a := mat.NewDense(n, n, nil)
	for y := range ny {
		for x := range nx {
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					xx, yy := x+dx, y+dy
					if xx >= 0 && yy >= 0 && xx < nx && yy < ny {
						a.Set(y*nx+x, yy*nx+xx, c[dy+1][dx+1])
					}
				}
			}
		}
	}
	return a
}

// TestCGRefusesNonsymmetric: CG on a nonsymmetric Stencil2D or Dense ran
// MaxDispatches (3200 applications of A for a 100×1 convection stencil)
// and returned ErrNotConverged at relative residual 0.46, saying nothing
// of symmetry. It now refuses before any dispatch with ErrNotSPD, naming
// the entries, while GMRES solves the same systems to gonum's answer; a
// coefficient the grid has no room for, and a matrix symmetric up to
// rounding, are still accepted, and CG solves them to gonum's answer.
func TestCGRefusesNonsymmetric(t *testing.T) {
	dev := simDevice(t, "sim")
	conv := [3][3]float64{{0, -1, 0}, {-1.5, 4.5, -1}, {0, -1, 0}}
	st, err := Stencil2D(100, 1, conv)
	require.NoError(t, err)
	nsym := mat.NewDense(3, 3, []float64{4, 1, 0, 0.5, 4, 1, 0, 1, 4})
	for _, c := range []struct {
		name string
		op   Operator
		a    *mat.Dense
	}{
		{"stencil 100×1", st, stencilMatrix(100, 1, conv)},
		{"dense 3×3", denseOf(t, nsym), nsym},
	} {
		b := randVec(c.a.RawMatrix().Rows, 13)
		res, err := CG(c.op, b, &Settings{Device: dev})
		require.ErrorIs(t, err, ErrNotSPD, c.name)
		require.ErrorContains(t, err, "not symmetric", c.name)
		require.ErrorContains(t, err, "GMRES", c.name)
		require.Zero(t, res.Dispatches, c.name)
		res, err = GMRES(c.op, b, &Settings{Device: dev})
		require.NoError(t, err, c.name)
		require.LessOrEqual(t, reference.RelErr(res.X, gonumSolution(t, c.a, b)), 10*DefaultTol, c.name)
	}

	// One grid column: the x-offset coefficients are no entries of A.
	col, err := Stencil2D(1, 50, conv)
	require.NoError(t, err)
	b := randVec(50, 14)
	res, err := CG(col, b, &Settings{Device: dev})
	require.NoError(t, err)
	require.LessOrEqual(t, reference.RelErr(res.X, gonumSolution(t, stencilMatrix(1, 50, conv), b)), 10*DefaultTol)

	// Q·Λ·Qᵀ formed in float64: symmetric up to rounding.
	q, err := reference.HaarOrthogonal(20, rand.New(rand.NewPCG(16, 17)))
	require.NoError(t, err)
	lam := make([]float64, 20)
	for i := range lam {
		lam[i] = 1 + float64(i)/2
	}
	var ql, sym mat.Dense
	ql.Mul(q, mat.NewDiagDense(20, lam))
	sym.Mul(&ql, q.T())
	require.False(t, mat.Equal(&sym, sym.T()), "the product is not exactly symmetric")
	b = randVec(20, 15)
	res, err = CG(denseOf(t, &sym), b, &Settings{Device: dev})
	require.NoError(t, err)
	require.LessOrEqual(t, reference.RelErr(res.X, gonumSolution(t, &sym, b)), 10*mat.Cond(&sym, 2)*DefaultTol)
}

// TestHugeRHS: b = (1.7e308, −1.7e308) has finite entries but ‖b‖₂
// overflows float64; the solvers failed with ErrInput blaming A·X0 or the
// operator (the relative residual was Inf/Inf). b is now scaled by its
// largest entry, and I·x = b and 2·I·x = b are solved to Tol.
func TestHugeRHS(t *testing.T) {
	dev := simDevice(t, "sim")
	b := []float64{1.7e308, -1.7e308}
	for _, d := range []float64{1, 2} {
		op := diagOp(t, d, d)
		for _, sv := range solvers {
			res, err := sv.solve(op, b, &Settings{Device: dev, Precision: sv.mode})
			require.NoError(t, err, "%s, A = %g·I", sv.name, d)
			require.True(t, res.Converged)
			for i, v := range res.X {
				require.InEpsilon(t, b[i]/d, v, DefaultTol, "%s, A = %g·I, x[%d]", sv.name, d, i)
			}
		}
	}
}

// TestSubnormalOperator: A = 1e-310·I has only subnormal entries. CG
// failed with ErrNotConverged blaming MulVecTo (x = A⁻¹·b overflowed for
// the scaled b), GMRES with an error wrapping no sentinel (Newton–Schulz's
// fp16 scaling overflowed). Both now refuse ‖A‖∞ below 2⁻¹⁰²² with
// ErrInput and say to scale; scaled by 2¹⁰⁰⁰ as told, the system solves
// to x = (1, 1).
func TestSubnormalOperator(t *testing.T) {
	dev := simDevice(t, "sim")
	b := []float64{1e-310, 1e-310}
	tiny := diagOp(t, 1e-310, 1e-310)
	scaled := diagOp(t, math.Ldexp(1e-310, 1000), math.Ldexp(1e-310, 1000))
	bs := []float64{math.Ldexp(b[0], 1000), math.Ldexp(b[1], 1000)}
	for _, sv := range solvers {
		_, err := sv.solve(tiny, b, &Settings{Device: dev, Precision: sv.mode})
		require.ErrorIs(t, err, ErrInput, sv.name)
		require.ErrorContains(t, err, "scale A", sv.name)
		res, err := sv.solve(scaled, bs, &Settings{Device: dev, Precision: sv.mode})
		require.NoError(t, err, sv.name)
		for i, v := range res.X {
			require.InDelta(t, 1, v, 2*DefaultTol, "%s x[%d]", sv.name, i)
		}
	}
}
