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

// TestSurfaceShape: exact sizes for the minimum of 49152 bytes on ane-m1
// (spatial limit 16384, rows aligned to 32): a surface at or above it is
// unchanged, a smaller one is widened to ⌈49152/(2·rows)⌉ rounded up to the
// alignment, and rows are added only past the spatial limit.
func TestSurfaceShape(t *testing.T) {
	m1 := lower.TargetM1
	for _, c := range []struct{ rows, stride, wantRows, wantStride int }{
		{128, 192, 128, 192}, // exactly 49152 bytes
		{512, 512, 512, 512}, // larger
		{128, 128, 128, 192}, // 32768 bytes: ⌈49152/256⌉ = 192
		{40, 64, 40, 640},    // ⌈49152/80⌉ = 615 → 640
		{1, 64, 2, 16384},    // 24576 > 16384: two rows of the limit
		{0, 64, 0, 64},       // empty: unchanged
		{3, 0, 3, 0},         // empty: unchanged
	} {
		r, s := lower.SurfaceShape(m1, c.rows, c.stride)
		require.Equal(t, []int{c.wantRows, c.wantStride}, []int{r, s}, "%d×%d", c.rows, c.stride)
	}
	none := m1
	none.MinSurfaceBytes = 0
	r, s := lower.SurfaceShape(none, 1, 64)
	require.Equal(t, []int{1, 64}, []int{r, s}, "no minimum, no widening")
}
