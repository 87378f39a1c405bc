package sim_test

import (
	"testing"

	"github.com/anemone-go/anemone/shim/shimtest"
	"github.com/anemone-go/anemone/shim/sim"
)

// TestConformance runs the shared device conformance suite: every op of
// the capability registry, lowered by package lower, against
// dataflow.Eval, under both numerics models.
//
// It uses shimtest.Check rather than shimtest.Test only to skip cases whose
// bound came out negative: the suite takes Σ|aᵢbᵢ| by evaluating the graph
// on |inputs|, which leaves constant operands signed (the matmul case with
// a constant weight). Such a bound says nothing about the device.
func TestConformance(t *testing.T) {
	for _, n := range []sim.Numerics{sim.Wide, sim.Narrow} {
		dev := sim.New(n)
		for _, r := range shimtest.Check(dev) {
			name := n.String() + "/" + r.Op
			if r.Case != "" {
				name += "/" + r.Case
			}
			t.Run(name, func(t *testing.T) {
				switch {
				case !r.Pass && r.BoundULPs < 0:
					t.Skipf("suite bound is negative (%.3g ulps; error %.3g ulps): %s", r.BoundULPs, r.MaxULPs, r.Error)
				case !r.Pass:
					t.Errorf("%s: %s (max error %.3g ulps, bound %.3g)", name, r.Error, r.MaxULPs, r.BoundULPs)
				}
			})
		}
	}
}
