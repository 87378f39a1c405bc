package shimtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/shimtest"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// The suite itself: every registry op has a case, and a case fails when the
// device is wrong (here: a device that adds one ulp-sized error).
func TestSuiteCoversRegistry(t *testing.T) {
	for _, name := range []string{"sim", "sim-narrow"} {
		dev, err := shim.Open(name)
		require.NoError(t, err)
		covered := map[string]bool{}
		for _, r := range shimtest.Check(dev) {
			covered[r.Op] = true
			require.True(t, r.Pass, "%s: %s/%s: %s", name, r.Op, r.Case, r.Error)
			require.Positive(t, r.Elements)
			require.GreaterOrEqual(t, r.BoundULPs, 0.0)
		}
		for _, c := range lower.Capabilities() {
			require.True(t, covered[string(c.Op)], "op %s has no conformance case", c.Op)
		}
		require.NoError(t, dev.Close())
	}
}

// skewed wraps a device and perturbs every output by 1%: the suite must
// catch it.
type skewed struct{ shim.Device }

func (s skewed) Compile(p *lower.Program) (shim.Executable, error) {
	e, err := s.Device.Compile(p)
	return skewedExe{e}, err
}

type skewedExe struct{ shim.Executable }

func (e skewedExe) Run(in [][]float32) ([][]float32, error) {
	out, err := e.Executable.Run(in)
	for _, o := range out {
		for i := range o {
			o[i] *= 1.01
		}
	}
	return out, err
}

// A 1 % error is about 20 fp16 ulps: far beyond every bound, the narrow
// model's allowance for table-based transcendentals (2⁻¹⁰ relative, two
// ulps) included.
func TestSuiteCatchesAWrongDevice(t *testing.T) {
	for _, name := range []string{"sim", "sim-narrow"} {
		dev, err := shim.Open(name)
		require.NoError(t, err)
		failed := map[string]bool{}
		results := shimtest.Check(skewed{dev})
		for _, r := range results {
			if !r.Pass {
				failed[r.Op] = true
			}
		}
		require.Greater(t, len(failed), 20, "%s: a 1%% error must fail almost every case", name)
		for _, op := range []string{"pow", "sqrt", "exp", "log", "tanh", "sigmoid", "gelu"} {
			require.True(t, failed[op], "%s: a 1%% error in %s must fail", name, op)
		}
		require.NoError(t, dev.Close())
	}
}
