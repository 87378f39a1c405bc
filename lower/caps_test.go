package lower

import (
	"sort"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/stretchr/testify/require"
)

func TestCapabilityEvidence(t *testing.T) {
	for _, c := range Capabilities() {
		all := c.Evidence + " " + c.RejectedBy + " " + c.Caveats + " " + c.Notes
		for _, ref := range []string{"§", ".md", "ANE_FACTS", "MIL_OPS", "DESIGN", "http"} {
			require.NotContains(t, all, ref, "%s: the registry states facts, it does not point outside the repository", c.Op)
		}
		if c.Verified {
			require.NotEmpty(t, c.Evidence, "%s is marked verified: say where", c.Op)
		}
	}
	cases := []struct {
		op             dataflow.Op
		rejected, want string // substrings of RejectedBy and Caveats ("" for none)
	}{
		{dataflow.OpConcat, "more than two inputs", ""},
		{dataflow.OpGelu, "rejected", "0.08"},
		{dataflow.OpSoftmax, "non-power-of-two", ""},
		{dataflow.OpMul, "constant 0", ""},
		{dataflow.OpRsqrt, "rsqrt", "table-based"},
		{dataflow.OpMatMul, "", "32752"},
		{dataflow.OpConv2D, "batch > 1", "32752"},
		{dataflow.OpSlice, "", "4094"},
		{dataflow.OpExp, "", "2⁻¹⁰"},
		{dataflow.OpReduceSum, "", "2048"},
	}
	for _, c := range cases {
		cap, ok := CapabilityOf(c.op)
		require.True(t, ok, "%s", c.op)
		require.Contains(t, cap.RejectedBy, c.rejected, "%s", c.op)
		require.Contains(t, cap.Caveats, c.want, "%s", c.op)
	}
	r := Rejections()
	require.True(t, sort.SliceIsSorted(r, func(i, j int) bool { return r[i].MIL < r[j].MIL }))
	names := map[string]bool{}
	for _, x := range r {
		names[x.MIL] = true
		require.NotEmpty(t, x.Where)
		require.False(t, strings.Contains(x.Detail, "§"))
	}
	for _, n := range []string{"cast", "rsqrt", "tile", "concat"} {
		require.True(t, names[n], "%s is reported rejected", n)
	}
}
