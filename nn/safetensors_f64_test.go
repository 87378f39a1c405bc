package nn_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/nn"
)

// TestSafetensorsF64: F64 tensors are written and read bit for bit (no
// rounding: float64 is the host's own type), including values no narrower
// dtype holds — 1e300, a subnormal, −0, ±Inf, math.MaxFloat64 — and Get
// returns them.
func TestSafetensorsF64(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	w := tensor(rng, "w", 1, 3, 4)
	w.DType = nn.F64
	copy(w.Data, []float64{1e300, 4.9e-324, 1e-310, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.MaxFloat64, math.Pi})
	ws := nn.Weights{}
	ws.Add(w)
	ws.Add(nn.Tensor{Name: "s", DType: nn.F64, Shape: []int{}, Data: []float64{-1.0 / 3}})
	var buf bytes.Buffer
	require.NoError(t, nn.WriteSafetensors(&buf, ws, nil))
	got, err := nn.ReadSafetensors(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	require.Len(t, got, 2)
	for name, want := range ws {
		g := got[name]
		require.Equal(t, nn.F64, g.DType, name)
		require.Equal(t, want.Shape, g.Shape, name)
		require.Len(t, g.Data, len(want.Data), name)
		for i := range want.Data {
			require.Equal(t, math.Float64bits(want.Data[i]), math.Float64bits(g.Data[i]), "%s[%d]", name, i)
		}
	}
	gw, err := got.Get("w", 3, 4)
	require.NoError(t, err)
	require.Equal(t, 1e300, gw.Data[0])

	// A file written elsewhere: the little-endian bytes of 2.5 and −7.
	data := binary.LittleEndian.AppendUint64(nil, math.Float64bits(2.5))
	data = binary.LittleEndian.AppendUint64(data, math.Float64bits(-7))
	r, err := nn.ReadSafetensors(bytes.NewReader(file(`{"x":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}`, data)))
	require.NoError(t, err)
	require.Equal(t, []float64{2.5, -7}, r["x"].Data)

	// NaN is refused in F64 as in every dtype.
	err = nn.WriteSafetensors(&buf, nn.Weights{"n": {Name: "n", DType: nn.F64, Shape: []int{1}, Data: []float64{math.NaN()}}}, nil)
	require.ErrorIs(t, err, nn.ErrWeight)
	require.ErrorContains(t, err, `tensor "n" element 0`)
}
