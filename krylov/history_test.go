package krylov

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/reference"
)

// TestHistoryCG: CG records one float64 residual before the first dispatch
// and one after every dispatch (len(History) = Dispatches + 1), each the
// one Trace reports for that dispatch, the last equal to Residual, which
// matches reference's recomputation of ‖b − A·x‖₂/‖b‖₂ to rounding:
// ε·‖A‖‖x‖/‖b‖ ≤ ε·κ ≈ 2e-16·100 for the 16×16 Poisson matrix (κ ≈ 100),
// so 1e-12.
func TestHistoryCG(t *testing.T) {
	const nx = 16
	// reference.Poisson2D's five points, with h = 1/(nx+1).
	q := float64((nx + 1) * (nx + 1))
	op, err := Stencil2D(nx, nx, [3][3]float64{{0, -q, 0}, {-q, 4 * q, -q}, {0, -q, 0}})
	require.NoError(t, err)
	csr, err := reference.Poisson2D(nx, nx)
	require.NoError(t, err)
	b := gmresOnes(nx * nx)
	poly, err := Polynomial(op)
	require.NoError(t, err)
	for _, pc := range []struct {
		name string
		p    Preconditioner
	}{{"default", nil}, {"polynomial", poly}} {
		t.Run(pc.name, func(t *testing.T) {
			var steps []Step
			res, err := CG(op, b, &Settings{Precond: pc.p, Unroll: 4, Trace: func(s Step) { steps = append(steps, s) }})
			require.NoError(t, err)
			require.True(t, res.Converged)
			require.Positive(t, res.Dispatches)
			require.Len(t, res.History, res.Dispatches+1)
			require.Equal(t, 1.0, res.History[0], "x = 0")
			require.Len(t, steps, res.Dispatches)
			for k, s := range steps {
				require.Equal(t, k+1, s.Dispatch)
				require.Equal(t, res.History[k+1], s.Residual, "dispatch %d", k+1)
			}
			require.Equal(t, res.Residual, res.History[len(res.History)-1])
			require.InDelta(t, reference.RelResidual(csr, res.X, b), res.Residual, 1e-12)
		})
	}
}

// TestHistoryGMRES: GMRES records one float64 residual before the first
// dispatch and one after every restart cycle, so len(History) − 1 lies
// between ⌈Dispatches/Restart⌉ and Dispatches, and equals Dispatches for
// Restart 1; Trace is called once per dispatch, and the ends of cycles
// report exactly the residuals History holds, in order. The final residual
// matches reference's recomputation within 1e-12 (ε·κ as in
// TestGMRESMaxDispatches).
func TestHistoryGMRES(t *testing.T) {
	const nx = 16
	op, err := Stencil2D(nx, nx, gmresConvDiffStencil(nx, nx, 10))
	require.NoError(t, err)
	csr, err := reference.ConvectionDiffusion2D(nx, nx, 10)
	require.NoError(t, err)
	b := gmresOnes(nx * nx)
	for _, restart := range []int{1, 4, 30} {
		t.Run(fmt.Sprint(restart), func(t *testing.T) {
			var steps []Step
			res, err := GMRES(op, b, &Settings{Restart: restart, MaxDispatches: 400, Trace: func(s Step) { steps = append(steps, s) }})
			require.NoError(t, err)
			require.True(t, res.Converged)
			cycles := len(res.History) - 1
			t.Logf("Restart %d: %d dispatches, %d cycles", restart, res.Dispatches, cycles)
			require.LessOrEqual(t, cycles, res.Dispatches)
			require.GreaterOrEqual(t, cycles, (res.Dispatches+restart-1)/restart)
			if restart == 1 {
				require.Len(t, res.History, res.Dispatches+1)
			}
			require.Equal(t, 1.0, res.History[0], "x = 0")
			require.Len(t, steps, res.Dispatches, "Trace is per dispatch")
			// Every History entry after the first is the Residual of some
			// step, in order, the last one the last step's.
			k := 1
			for i, s := range steps {
				require.Equal(t, i+1, s.Dispatch)
				if k < len(res.History) && s.Residual == res.History[k] {
					k++
				}
			}
			require.Equal(t, len(res.History), k, "History's cycle ends appear among the steps, in order")
			require.Equal(t, res.History[len(res.History)-1], steps[len(steps)-1].Residual)
			require.Equal(t, res.Residual, res.History[len(res.History)-1])
			require.InDelta(t, reference.RelResidual(csr, res.X, b), res.Residual, 1e-12)
		})
	}
}
