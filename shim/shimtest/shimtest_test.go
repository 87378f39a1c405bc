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
	dev, err := shim.Open("sim")
	require.NoError(t, err)
	defer dev.Close()
	covered := map[string]bool{}
	for _, r := range shimtest.Check(dev) {
		covered[r.Op] = true
		require.True(t, r.Pass, "%s/%s: %s", r.Op, r.Case, r.Error)
		require.Positive(t, r.Elements)
		require.GreaterOrEqual(t, r.BoundULPs, 0.0)
	}
	for _, c := range lower.Capabilities() {
		require.True(t, covered[string(c.Op)], "op %s has no conformance case", c.Op)
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

func TestSuiteCatchesAWrongDevice(t *testing.T) {
	dev, err := shim.Open("sim")
	require.NoError(t, err)
	defer dev.Close()
	failed := 0
	for _, r := range shimtest.Check(skewed{dev}) {
		if !r.Pass {
			failed++
		}
	}
	require.Greater(t, failed, 20, "a 1%% error must fail almost every case")
}
