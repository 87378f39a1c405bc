package lower_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim/sim"
)

// TestSplitOutputsRunsAsPacked: on each family with a minimum surface size,
// the program split into one output surface per output (the fallback for a
// compiler that refuses the packing concats) has every surface at that
// minimum, passes the lint of a target without packing, and computes on a
// simulator of that family exactly what the packed program does:
// x + x, v·v and u − u on small integers, exact in fp16.
func TestSplitOutputsRunsAsPacked(t *testing.T) {
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, 40})
	u := g.Input("u", dataflow.Shape{3, 16})
	v := g.Input("v", dataflow.Shape{2, 32})
	g.Output("a", g.Add(x, x))
	g.Output("b", g.Mul(v, v))
	g.Output("c", g.Sub(u, u))
	require.NoError(t, g.Err())
	in := [][]float32{make([]float32, 40), make([]float32, 48), make([]float32, 64)}
	for k, s := range in {
		for i := range s {
			s[i] = float32(i%9 - 4 + k)
		}
	}
	for _, target := range []lower.Target{lower.TargetM1, lower.TargetM3, lower.TargetM5} {
		p, err := lower.Lower(g, target)
		require.NoError(t, err)
		q, err := lower.SplitOutputs(p)
		require.NoError(t, err, target.Name)
		require.Len(t, q.OutputSurfaces, 3)
		for _, s := range q.OutputSurfaces {
			require.GreaterOrEqual(t, 2*s.Size(), target.MinSurfaceBytes, "%s: surface %v", target.Name, s.Shape)
		}
		perOutput := target
		perOutput.PackedIO = false
		require.NoError(t, lower.Lint(q, perOutput), target.Name)

		run := func(name string, tg lower.Target, prog *lower.Program) [][]float32 {
			dev := sim.NewFamily(name, tg)
			defer dev.Close()
			exe, err := dev.Compile(prog)
			require.NoError(t, err, "%s %s", target.Name, name)
			out, err := exe.Run(in)
			require.NoError(t, err)
			return out
		}
		packed := run("packed", target, p)
		split := run("split", perOutput, q)
		require.Equal(t, packed, split, target.Name)
		for i, xv := range in[0] {
			require.Equal(t, 2*xv, split[0][i])
		}
		for i, vv := range in[2] {
			require.Equal(t, vv*vv, split[1][i])
		}
		for _, uv := range split[2] {
			require.Zero(t, uv)
		}
	}
}
