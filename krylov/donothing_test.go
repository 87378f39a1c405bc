package krylov

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim/shimtest"
)

// TestCGDoNothing: the ablation against a device that computes nothing
// (each output is its input, so the "preconditioner" is the identity and
// the unrolled polynomial steps vanish): every CG case of the noise
// ablation must need at least twice the real device's dispatches, so
// within 2D − 1 dispatches it must not converge.
func TestCGDoNothing(t *testing.T) {
	honest := simDevice(t, "sim")
	idle := shimtest.DoNothing(simDevice(t, "sim"), 1)
	for _, c := range cgCases(t) {
		t.Run(c.name, func(t *testing.T) {
			res, err := CG(c.op, c.b, &Settings{Device: honest, Precision: c.mode, Precond: c.pre})
			require.NoError(t, err)
			abl, err := CG(c.op, c.b, &Settings{Device: idle, Precision: c.mode, Precond: c.pre, MaxDispatches: 2*res.Dispatches - 1})
			t.Logf("real device: %d dispatches to %.2g; do-nothing device: %.3g after %d", res.Dispatches, res.Residual, abl.Residual, abl.Dispatches)
			require.Error(t, err)
			require.False(t, abl.Converged)
		})
	}
}

// TestGMRESDoNothing: the same for GMRES, in both modes, on the stencil
// (device polynomial) and the dense matrix (device inverse).
func TestGMRESDoNothing(t *testing.T) {
	for _, c := range gmresShareCases(t) {
		for _, mode := range []precision.Mode{precision.FP16, precision.Compensated} {
			res, err := GMRES(c.op, c.b, &Settings{Device: simDevice(t, "sim"), Precision: mode})
			require.NoError(t, err)
			idle := shimtest.DoNothing(simDevice(t, "sim"), 1)
			abl, err := GMRES(c.op, c.b, &Settings{Device: idle, Precision: mode, MaxDispatches: 2*res.Dispatches - 1})
			t.Logf("%s, %v: real device %d dispatches to %.2g; do-nothing device %.3g after %d", c.name, mode, res.Dispatches, res.Residual, abl.Residual, abl.Dispatches)
			require.Error(t, err, "%s %v", c.name, mode)
			require.False(t, abl.Converged)
		}
	}
}
