package shim_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/shim"
)

// stateGraph is one step of a recurrence with a resident matrix: the
// state s (n×n) becomes s_next = tanh(s·W + u) for a fresh input u and a
// fixed W, and y = s_next·ones is what the host reads.
func stateGraph(n int) *dataflow.Graph {
	g := dataflow.New()
	s := g.Input("s", dataflow.Shape{n, n})
	w := g.Input("w", dataflow.Shape{n, n})
	u := g.Input("u", dataflow.Shape{n, n})
	next := g.Tanh(g.Add(g.MatMul(s, w, false, false), u))
	g.Output("s_next", next)
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	g.Output("y", g.MatMul(next, g.Const("ones", dataflow.Shape{n, 1}, ones), false, false))
	return g
}

// TestSessionResidentState keeps the state on the device for 100
// dispatches (Carry) and the matrix W written once, and checks that every
// dispatch is bit-identical to the same computation with every tensor
// sent and fetched through Run, and that it moves fewer host bytes.
func TestSessionResidentState(t *testing.T) {
	const n, steps = 32, 100
	c := open(t, "sim")
	exe, err := shim.Build(c, stateGraph(n))
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(7, 8))
	rand32 := func(scale float64) []float32 {
		x := make([]float32, n*n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * scale)
		}
		return x
	}
	s0, w := rand32(0.5), rand32(1/math.Sqrt(n))
	us := make([][]float32, steps)
	for k := range us {
		us[k] = rand32(0.1)
	}

	// Round trips: every tensor crosses both ways every dispatch.
	state := s0
	var want [][]float32
	var tripBytes int64
	for k := range steps {
		out, err := exe.Run([][]float32{state, w, us[k]})
		require.NoError(t, err)
		state = out[0]
		want = append(want, out[1])
		tripBytes += 2 * int64(3*n*n+n*n+n) // three inputs in, both outputs out
	}

	ses, err := shim.NewSession(exe)
	require.NoError(t, err)
	defer ses.Close()
	require.NoError(t, ses.Carry("s_next", "s"))
	require.NoError(t, ses.Write("s", s0))
	require.NoError(t, ses.Write("w", w))
	y := make([]float32, n)
	for k := range steps {
		require.NoError(t, ses.Write("u", us[k]))
		require.NoError(t, ses.Run())
		require.NoError(t, ses.Read("y", y))
		require.Equal(t, want[k], y, "dispatch %d", k)
	}
	final := make([]float32, n*n)
	require.NoError(t, ses.Read("s", final), "the carried state is read where it lies")
	require.Equal(t, state, final)

	st := ses.Stats()
	require.Equal(t, steps, st.Dispatches)
	// Written: s and w once, u every dispatch; read: y every dispatch and s once.
	require.Equal(t, 2*int64(2*n*n+steps*n*n), st.BytesIn)
	require.Equal(t, 2*int64(steps*n+n*n), st.BytesOut)
	require.Less(t, 2*(st.BytesIn+st.BytesOut), tripBytes, "resident state moves less than half the bytes")
	t.Logf("host bytes over %d dispatches: resident %d, round trips %d", steps, st.BytesIn+st.BytesOut, tripBytes)
}

func TestSessionChecks(t *testing.T) {
	c := open(t, "sim")
	exe, err := shim.Build(c, scaleGraph(2))
	require.NoError(t, err)
	ses, err := shim.NewSession(exe)
	require.NoError(t, err)

	require.ErrorIs(t, ses.Write("nope", make([]float32, 6)), shim.ErrShape)
	require.ErrorIs(t, ses.Write("x", make([]float32, 5)), shim.ErrShape)
	err = ses.Write64("x", []float64{1, 2, 3, 70016, 5, 6}, 0)
	require.ErrorIs(t, err, shim.ErrRange)
	require.Contains(t, err.Error(), "element 3")
	require.NoError(t, ses.Write64("x", []float64{1, 2, 3, 70016, 5, 6}, -2), "scaled by 2^-2 it fits (70016/4 = 17504 is an fp16 value)")
	require.NoError(t, ses.Run())
	y := make([]float64, 6)
	require.NoError(t, ses.Read64("y", y, 2))
	require.Equal(t, []float64{2, 4, 6, 140032, 10, 12}, y, "x·2^-2·2 on the device, ·2^2 on the way out")

	// 40000·2 overflows on the device: the read says so.
	require.NoError(t, ses.Write("x", []float32{1, 2, 3, 40000, 5, 6}))
	require.NoError(t, ses.Run())
	err = ses.Read64("y", y, 0)
	require.ErrorIs(t, err, shim.ErrRange)
	require.Contains(t, err.Error(), `"y" element 3`)

	h := make([]uint16, 6)
	require.NoError(t, ses.WriteHalf("x", []uint16{0x3c00, 0, 0, 0, 0, 0xbc00})) // 1 … −1
	require.NoError(t, ses.Run())
	require.NoError(t, ses.ReadHalf("y", h))
	require.Equal(t, []uint16{uint16(fp16.FromFloat64(2)), 0, 0, 0, 0, uint16(fp16.FromFloat64(-2))}, h)

	// Reading part of an output in place counts that part.
	before := ses.Stats().BytesOut
	rows, err := ses.OutputRowsPart("y", 2)
	require.NoError(t, err)
	require.Equal(t, uint16(fp16.FromFloat64(2)), rows.Row(0)[0])
	require.Equal(t, before+4, ses.Stats().BytesOut)
	_, err = ses.OutputRows("y")
	require.NoError(t, err)
	require.Equal(t, before+4+12, ses.Stats().BytesOut)
	require.Equal(t, [2]int{2, 3}, [2]int{rows.Rows, rows.RowLen})
	_, ok := rows.Flat()
	require.False(t, ok, "rows of 3 are padded on the surface, so they do not lie end to end")

	require.ErrorIs(t, ses.Carry("y", "nope"), shim.ErrShape)
	require.ErrorIs(t, ses.Carry("nope", "x"), shim.ErrShape)
	require.NoError(t, ses.Close())
	require.ErrorIs(t, ses.Run(), shim.ErrClosed)
	_, err = shim.NewSession(nil)
	require.ErrorIs(t, err, shim.ErrShape)
}
