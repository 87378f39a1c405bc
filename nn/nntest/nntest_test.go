package nntest_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn/nntest"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// Every layer case passes on both numerics models, within its bound, and
// is native or decomposed on the simulator's target.
func TestLayersPass(t *testing.T) {
	for _, name := range []string{"sim", "sim-narrow"} {
		dev, err := shim.Open(name)
		require.NoError(t, err)
		for _, r := range nntest.CheckLayers(dev) {
			require.True(t, r.Pass, "%s: %s/%s: %s", name, r.Op, r.Case, r.Error)
			require.Positive(t, r.Elements)
			require.Contains(t, []string{"native", "decomposed"}, r.Status, "%s/%s on %s", r.Op, r.Case, name)
			require.LessOrEqual(t, r.MaxRatio, 1.0)
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

// Every layer case must catch a 1 % error unless its own bound, a
// worst case over every rounding the ops are allowed, is above 1 % of
// every output element: its Detects figure says which, and the skewed
// device must then fail exactly as Detects predicts. On sim (the
// hardware's model) that is every layer but attention, whose bound
// composes four contractions (projections, scores, weighted values,
// output) and is some 25 times the largest error seen; on sim-narrow the
// fp16 running sum's worst case, (K−1)·u·Σ|terms| ≈ 2.3 % at K = 48,
// also exceeds 1 % for the longer contractions. Every layer but attention
// must catch 5 %, and attention 10 %.
func TestSuiteCatchesAWrongDeviceInLayers(t *testing.T) {
	for _, tc := range []struct {
		device  string
		minimum int // layer cases sure to catch 1 %
	}{{"sim", 24}, {"sim-narrow", 16}} {
		dev, err := shim.Open(tc.device)
		require.NoError(t, err)
		good := nntest.CheckLayers(dev)
		sure := 0
		for i, r := range nntest.CheckLayers(skewed{dev}) {
			require.Equal(t, good[i].Op+good[i].Case, r.Op+r.Case)
			if good[i].Detects < 0.01 {
				sure++
				require.False(t, r.Pass, "%s: %s/%s detects %.3g but passed a 1%% error", tc.device, r.Op, r.Case, good[i].Detects)
			}
			limit := 0.05
			if r.Op == "nn.Attention" {
				limit = 0.1
			}
			require.Less(t, good[i].Detects, limit, "%s: %s/%s", tc.device, r.Op, r.Case)
		}
		require.GreaterOrEqual(t, sure, tc.minimum, "%s: layer cases sure to catch a 1%% error", tc.device)
		require.NoError(t, dev.Close())
	}
}

// Every layer of package nn on the wide simulator: each passes within its
// bound, and each catches a relative error of 10 % (attention's bound is
// the loosest).
func ExampleCheckLayers() {
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	failed, layers := 0, map[string]bool{}
	catches := true
	for _, r := range nntest.CheckLayers(dev) {
		layers[r.Op] = true
		if !r.Pass {
			failed++
		}
		catches = catches && r.Detects < 0.1
	}
	fmt.Println(len(layers), failed, catches)
	// Output: 15 0 true
}
