package precision

import (
	"errors"
	"math"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/reference"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// refineProblem is an SPD system A·x = b with κ(A) = 1e3 (RandSVD, mode 3:
// geometric singular values) and a random solution.
type refineProblem struct {
	a    *mat.Dense
	chol mat.Cholesky
	b    []float64
}

func newRefineProblem(t testing.TB, n int, seed uint64) *refineProblem {
	rng := newRNG(seed)
	a, err := reference.RandSVD(n, 1e3, 3, true, rng)
	require.NoError(t, err)
	p := &refineProblem{a: a}
	require.True(t, p.chol.Factorize(mat.NewSymDense(n, p.a.RawMatrix().Data)))
	p.b = mulVec(p.a, randVec(rng, n))
	return p
}

// residual is the host's float64 r = b − A·x.
func (p *refineProblem) residual(r, x []float64) error {
	ax := mulVec(p.a, x)
	for i := range r {
		r[i] = p.b[i] - ax[i]
	}
	return nil
}

// exact solves A·d = r in float64.
func (p *refineProblem) exact(d, r []float64) error {
	n := len(r)
	return p.chol.SolveVecTo(mat.NewVecDense(n, d), mat.NewVecDense(n, r))
}

// fp16Solve is a device stand-in: the float64 solution rounded to fp16
// (after power-of-two scaling), an inexact solver with a relative error of
// about u16 per entry. r arrives scaled into [1, 2), as a device needs it.
func (p *refineProblem) fp16Solve(d, r []float64) error {
	for _, v := range r {
		if math.Abs(v) >= 2 {
			return errors.New("residual not scaled into [1, 2)")
		}
	}
	if err := p.exact(d, r); err != nil {
		return err
	}
	e, err := Pow2Scale(d)
	if err != nil {
		return err
	}
	for i, v := range d {
		d[i] = math.Ldexp(fp16.Round64(math.Ldexp(v, e)), -e)
	}
	return nil
}

func TestRefineConverges(t *testing.T) {
	p := newRefineProblem(t, 256, 20)
	rng := newRNG(23)
	// noisy is an inexact solver with normwise relative error 1e-3 in a
	// random direction.
	noisy := func(d, r []float64) error {
		if err := p.exact(d, r); err != nil {
			return err
		}
		noise := randVec(rng, len(d))
		f := 1e-3 * normOf(d) / normOf(noise)
		for i := range d {
			d[i] += f * noise[i]
		}
		return nil
	}
	for _, tc := range []struct {
		name    string
		correct func(d, r []float64) error
	}{
		{"fp16-rounded solution", p.fp16Solve},
		{"1e-3 normwise noise", noisy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x0 := make([]float64, 256)
			res, err := Refine(x0, p.residual, tc.correct, RefineSettings{Tol: 1e-15})
			require.NoError(t, err)
			require.True(t, res.Converged)
			eta := BackwardError(p.a, res.X, p.b)
			t.Logf("κ = 1e3 SPD 256, %s: %d dispatches, relative residual %.2e, backward error %.2e, history %.2e",
				tc.name, res.Dispatches, res.Residual, eta, res.History)
			// Each step multiplies the residual by at most about κ·ε·‖A‖_rms
			// (ε the corrections' relative error): ≤ 0.5 for ε = u16 or
			// 1e-3 at κ = 1e3, typically far less, so 1e-15 takes well under
			// 30 steps; float64 residuals bottom out near 1e-16 here.
			require.LessOrEqual(t, eta, 1e-15)
			require.LessOrEqual(t, res.Residual, 1e-15)
			require.Len(t, res.History, res.Dispatches+1)
			require.Equal(t, 1.0, res.History[0], "x0 = 0: the first residual is b")
			require.Less(t, res.Dispatches, 30)
			require.Equal(t, make([]float64, 256), x0, "x0 must not be modified")
		})
	}
}

func TestRefineFailures(t *testing.T) {
	p := newRefineProblem(t, 64, 21)
	useless := func(d, r []float64) error { return nil } // d stays 0
	amplify := func(d, r []float64) error {
		if err := p.exact(d, r); err != nil {
			return err
		}
		for i := range d {
			d[i] *= 1e4 // r − A·(1e4·A⁻¹r) = (1 − 1e4)·r
		}
		return nil
	}
	half := func(d, r []float64) error {
		if err := p.exact(d, r); err != nil {
			return err
		}
		for i := range d {
			d[i] *= 0.5 // the residual halves each step: slow, steady
		}
		return nil
	}
	nan := func(d, r []float64) error { d[3] = math.NaN(); return nil }
	errDevice := errors.New("device on fire")
	failing := func(d, r []float64) error { return errDevice }
	for _, tc := range []struct {
		name       string
		correct    func(d, r []float64) error
		s          RefineSettings
		want       error
		dispatches int
	}{
		// Not reduced by ½ over 3 steps: stop after the third.
		{"stagnation", useless, RefineSettings{}, ErrStagnated, 3},
		{"stagnation window 5", useless, RefineSettings{StagnationWindow: 5}, ErrStagnated, 5},
		// Grows by 1e4 > 1e3 in one step.
		{"divergence", amplify, RefineSettings{}, ErrDiverged, 1},
		{"nan correction", nan, RefineSettings{}, ErrDiverged, 1},
		// ½ per step passes the stagnation test (⅛ < ½ over 3 steps) but
		// needs ~40 steps to 1e-12.
		{"budget", half, RefineSettings{MaxDispatches: 5}, ErrBudget, 5},
		{"device error", failing, RefineSettings{}, errDevice, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Refine(make([]float64, 64), p.residual, tc.correct, tc.s)
			require.ErrorIs(t, err, tc.want)
			require.False(t, res.Converged)
			require.Equal(t, tc.dispatches, res.Dispatches)
			require.NotEmpty(t, res.History)
			require.Len(t, res.X, 64)
			// X is the best iterate and Residual its residual.
			minHist := math.Inf(1)
			for _, h := range res.History {
				minHist = math.Min(minHist, h)
			}
			require.Equal(t, minHist, res.Residual)
			var r [64]float64
			require.NoError(t, p.residual(r[:], res.X))
			require.InEpsilon(t, minHist, normOf(r[:])/normOf(p.b), 1e-12)
			t.Logf("%s: %v; history %.3g", tc.name, err, res.History)
		})
	}
}

func normOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

func TestRefineSettings(t *testing.T) {
	p := newRefineProblem(t, 16, 22)
	x0 := make([]float64, 16)
	for _, s := range []RefineSettings{
		{Tol: -1}, {Tol: math.NaN()}, {NormB: -1}, {MaxDispatches: -1}, {StagnationWindow: -2},
		{StagnationFactor: 2}, {DivergenceFactor: 0.5},
	} {
		_, err := Refine(x0, p.residual, p.exact, s)
		require.ErrorIs(t, err, ErrInvalid, "%+v", s)
	}
	_, err := Refine(x0, nil, p.exact, RefineSettings{})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = Refine(x0, p.residual, nil, RefineSettings{})
	require.ErrorIs(t, err, ErrInvalid)

	// A given ‖b‖ spares the residual at x = 0; an exact solver converges
	// in one or two steps.
	calls := 0
	counting := func(r, x []float64) error { calls++; return p.residual(r, x) }
	res, err := Refine(x0, counting, p.exact, RefineSettings{NormB: normOf(p.b)})
	require.NoError(t, err)
	require.LessOrEqual(t, res.Dispatches, 2)
	require.Equal(t, res.Dispatches+1, calls)

	// b = 0: the answer x = 0 converges at once, by the absolute residual.
	zero := func(r, x []float64) error {
		for i, v := range mulVec(p.a, x) {
			r[i] = -v // b − A·x with b = 0
		}
		return nil
	}
	res, err = Refine(x0, zero, p.exact, RefineSettings{})
	require.NoError(t, err)
	require.True(t, res.Converged)
	require.Zero(t, res.Dispatches)

	// An error from residual is returned, wrapped.
	bad := errors.New("host failure")
	_, err = Refine(x0, func(r, x []float64) error { return bad }, p.exact, RefineSettings{})
	require.ErrorIs(t, err, bad)
}
