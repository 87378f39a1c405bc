package sim_test

import (
	"testing"

	"github.com/anemone-go/anemone/shim/shimtest"
	"github.com/anemone-go/anemone/shim/sim"
)

// TestConformance runs the shared device conformance suite (every op of the
// capability registry, lowered by package lower, against dataflow.Eval)
// under both numerics models.
func TestConformance(t *testing.T) {
	t.Run("wide", func(t *testing.T) { shimtest.Test(t, sim.New(sim.Wide)) })
	t.Run("narrow", func(t *testing.T) { shimtest.Test(t, sim.New(sim.Narrow)) })
}
