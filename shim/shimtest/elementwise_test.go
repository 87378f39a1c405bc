package shimtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
)

// Every elementwise dataflow op has one entry in elementwiseRules (its op
// case, allowance and propagation rule), of its arity, and a registry
// entry in package lower.
func TestElementwiseRulesCoverDataflow(t *testing.T) {
	want := map[dataflow.Op]int{}
	for _, op := range dataflow.UnaryOps() {
		want[op] = 1
	}
	for _, op := range dataflow.BinaryOps() {
		want[op] = 2
	}
	seen := map[dataflow.Op]bool{}
	for _, r := range elementwiseRules {
		require.False(t, seen[r.op], "%s has two entries", r.op)
		seen[r.op] = true
		n, ok := want[r.op]
		require.True(t, ok, "%s is not an elementwise dataflow op", r.op)
		switch n {
		case 1:
			require.NotNil(t, r.unary, "%s needs a unary propagation rule", r.op)
			require.Nil(t, r.binary, "%s", r.op)
		case 2:
			require.NotNil(t, r.binary, "%s needs a binary propagation rule", r.op)
			require.Nil(t, r.unary, "%s", r.op)
			require.NotEmpty(t, r.y.shape, "%s: its op case needs a y", r.op)
		}
		require.NotEmpty(t, r.x.shape, "%s: its op case needs an x", r.op)
		require.Less(t, r.x.lo, r.x.hi, "%s", r.op)
		require.GreaterOrEqual(t, r.ulps, 0.0, "%s", r.op)
		if r.table {
			require.Positive(t, r.ulps, "%s: a table-based op is not exact", r.op)
		}
		_, ok = lower.CapabilityOf(r.op)
		require.True(t, ok, "%s has no registry entry in package lower", r.op)
	}
	for op := range want {
		require.True(t, seen[op], "elementwise op %s has no entry in elementwiseRules", op)
	}
	count := map[dataflow.Op]int{}
	for _, c := range cases() {
		count[c.op]++
	}
	for op := range want {
		require.Equal(t, 1, count[op], "%s has one op case", op)
	}
}

// Every elementwise propagation rule is a bound: the exact op moves by no
// more when each operand element moves within its bound (at random and at
// the corners ±e), on operands drawn from the op case's ranges.
func TestElementwiseRulesAreBounds(t *testing.T) {
	row, col := dataflow.Shape{4, 8}, dataflow.Shape{4, 1}
	rng := rand.New(rand.NewPCG(17, 3))
	draw := func(s inputSpec, n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = s.lo + (s.hi-s.lo)*rng.Float64()
			if s.signed && rng.IntN(2) == 0 {
				v[i] = -v[i]
			}
		}
		return v
	}
	for _, r := range elementwiseRules {
		t.Run(string(r.op), func(t *testing.T) {
			specs, shapes := []inputSpec{r.x}, []dataflow.Shape{row}
			if r.binary != nil {
				specs, shapes = append(specs, r.y), append(shapes, col)
			}
			g := dataflow.New()
			in := make([]dataflow.Value, len(shapes))
			for i, s := range shapes {
				in[i] = g.Input(string(rune('a'+i)), s)
			}
			var y dataflow.Value
			if r.binary != nil {
				y = g.Binary(r.op, in[0], in[1])
			} else {
				y = g.Unary(r.op, r.attrs, in[0])
			}
			g.Output("y", y)
			require.NoError(t, g.Err())
			n := g.Nodes()[y.ID()]
			for trial := range 20 {
				vals, errs := make([]operand, len(shapes)), make([]operand, len(shapes))
				for i, s := range shapes {
					v, e := draw(specs[i], s.Size()), make([]float64, s.Size())
					for j := range e {
						e[j] = 0.05 * math.Abs(v[j]) * rng.Float64()
					}
					vals[i], errs[i] = operand{v, s}, operand{e, s}
				}
				exact, err := apply(n, n.Attrs, vals)
				require.NoError(t, err)
				var bound []float64
				if r.binary != nil {
					bound = binaryBound(n, vals, errs)
				} else {
					bound = unaryBound(r.op, vals[0].data, errs[0].data)
				}
				for range 10 {
					moved := make([]operand, len(vals))
					for i, x := range vals {
						d := make([]float64, len(x.data))
						for j := range d {
							s := 2*rng.Float64() - 1
							if trial%2 == 0 {
								s = math.Copysign(1, s)
							}
							d[j] = x.data[j] + s*errs[i].data[j]
						}
						moved[i] = operand{d, x.shape}
					}
					got, err := apply(n, n.Attrs, moved)
					require.NoError(t, err)
					for j := range got {
						diff := math.Abs(got[j] - exact[j])
						require.LessOrEqual(t, diff, bound[j]*(1+1e-9)+1e-15, "%s element %d: moved by %g, bound %g", r.op, j, diff, bound[j])
					}
				}
			}
		})
	}
}
