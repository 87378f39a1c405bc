package shimtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/shimtest"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// counting counts the runs of the executables it compiles.
type counting struct {
	shim.Device
	runs *int
}

func (d counting) Compile(p *lower.Program) (shim.Executable, error) {
	exe, err := d.Device.Compile(p)
	return countingExe{exe, d.runs}, err
}

type countingExe struct {
	shim.Executable
	runs *int
}

func (e countingExe) Run(in [][]float32) ([][]float32, error) {
	*e.runs++
	return e.Executable.Run(in)
}

// TestReplay: the replaying device returns the real device's outputs bit
// for bit, runs the program once per distinct input and replays a
// repeated one without running it.
func TestReplay(t *testing.T) {
	dev, err := shim.Open("sim")
	require.NoError(t, err)
	defer dev.Close()
	runs := 0
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, 4, 1, 16})
	g.Output("y", g.Mul(x, x))
	p, err := lower.Lower(g, dev.Info().Target)
	require.NoError(t, err)
	exe, err := shimtest.Replay(counting{dev, &runs}).Compile(p)
	require.NoError(t, err)
	sess, err := shim.NewSession(exe)
	require.NoError(t, err)
	in := make([]float32, 64)
	got := make([]float32, 64)
	for call, v := range []float32{1.5, -2, 1.5, -2, 3} {
		for i := range in {
			in[i] = v + float32(i%8)/8
		}
		require.NoError(t, sess.Write("x", in))
		require.NoError(t, sess.Run())
		require.NoError(t, sess.Read("y", got))
		for i := range in {
			require.Equal(t, in[i]*in[i], got[i], "call %d, element %d", call, i) // exact: squares of 5-bit values
		}
	}
	require.Equal(t, 3, runs, "three distinct inputs run, two repeats replayed")
}
