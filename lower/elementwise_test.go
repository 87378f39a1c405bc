package lower

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
)

// An elementwise op is lowered from its registry entry and its dataflow
// descriptor alone: every one of dataflow.UnaryOps and BinaryOps has an
// entry, a native one is emitted as the entry's MIL op with the entry's
// constant arguments, a decomposed one names a pass that exists, and the
// rewrites rebuild each one unchanged.
func TestElementwiseOpsFromRegistry(t *testing.T) {
	passNames := map[string]bool{}
	for _, p := range passes {
		passNames[p.name] = true
	}
	ops := append(dataflow.UnaryOps(), dataflow.BinaryOps()...)
	for i, op := range ops {
		want := 1
		if i >= len(dataflow.UnaryOps()) {
			want = 2
		}
		require.Equal(t, want, dataflow.ElementwiseArity(op), "%s", op)
	}
	for _, op := range ops {
		c, ok := CapabilityOf(op)
		require.True(t, ok, "elementwise op %s has no registry entry", op)
		require.NotEmpty(t, c.MIL, "%s", op)

		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{3, 40})
		var v dataflow.Value
		if dataflow.ElementwiseArity(op) == 1 {
			v = g.Unary(op, dataflow.Attrs{Gelu: dataflow.GeluTanh}, x)
		} else {
			v = g.Binary(op, x, g.Input("y", dataflow.Shape{1, 40}))
		}
		g.Output("z", v)
		require.NoError(t, g.Err(), "%s", op)

		// The rewrites' copy of the node is the node.
		same, err := rebuild(g, func(*rewriter, *dataflow.Node, []dataflow.Value) (dataflow.Value, bool) {
			return dataflow.Value{}, false
		})
		require.NoError(t, err, "%s", op)
		require.Equal(t, g.String(), same.String(), "%s", op)

		switch c.Status {
		case Decomposed:
			require.True(t, passNames[c.Via], "%s is decomposed by pass %q, which Lower does not run", op, c.Via)
			require.Nil(t, c.args, "%s is not emitted itself", op)
		case Native:
			p, err := Lower(g, TargetSim)
			require.NoError(t, err, "%s", op)
			text := string(p.MIL)
			require.Contains(t, text, " = "+c.MIL+"(", "%s is emitted as %s", op, c.MIL)
			if c.args != nil {
				for _, a := range c.args(g.Node(v).Attrs) {
					require.Contains(t, text, a.name+" = ", "%s carries its %s argument", op, a.name)
				}
			}
		}
		if c.fuses {
			require.Equal(t, Native, c.Status, "%s: only an op the engine runs itself fuses", op)
		}
	}
	for _, c := range registry {
		if dataflow.ElementwiseArity(c.Op) == 0 {
			require.Nil(t, c.args, "%s: constant arguments are read for elementwise ops only", c.Op)
			require.False(t, c.fuses, "%s: only elementwise ops fuse", c.Op)
		}
	}
	for _, name := range []string{"add", "real_div", "relu", "gelu", "sigmoid", "silu", "clip"} {
		require.True(t, fusable[name], "%s fuses", name)
	}
	require.False(t, fusable["exp"] || fusable["pow"], "exp and pow do not fuse")
}
