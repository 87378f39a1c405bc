package sim_test

import (
	"testing"

	"github.com/anemone-go/anemone/shim/shimtest"
	"github.com/anemone-go/anemone/shim/sim"
)

// TestConformance runs the shared device conformance suite (every op of the
// capability registry, lowered by package lower for the device's target,
// against dataflow.Eval) under both numerics models and on every family
// variant.
func TestConformance(t *testing.T) {
	t.Run("wide", func(t *testing.T) { shimtest.Test(t, sim.New(sim.Wide)) })
	t.Run("narrow", func(t *testing.T) { shimtest.Test(t, sim.New(sim.Narrow)) })
	for name, target := range sim.Families {
		t.Run(name, func(t *testing.T) { shimtest.Test(t, sim.NewFamily(name, target)) })
	}
}
