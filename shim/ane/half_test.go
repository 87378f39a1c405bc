package ane

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
)

// TestPackHalf: the fp16 surface path writes the same bytes as the
// float32 path for the same values, at the reported strides (two members
// of one packed surface, 128-byte rows for 32 elements, a float32
// surface), and reads them back bit for bit.
func TestPackHalf(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	x, b := band("x", []int{3, 30}, 3, 32, 0), band("b", []int{2, 32}, 2, 32, 3)
	for _, tensor := range []Tensor{
		{Name: "input", Channels: 5, Height: 1, Width: 32, RowStride: 128, PlaneStride: 128, ElemSize: 2},
		{Name: "input", Type: "Float32", Channels: 5, Height: 1, Width: 32, RowStride: 128, PlaneStride: 256, ElemSize: 4},
	} {
		p := Port{Name: "input", Shape: []int{1, 5, 1, 32}, Tensor: tensor, Members: []Member{{Spec: x, Arg: 0, Row: 0}, {Spec: b, Arg: 1, Row: 3}}}
		specs := []lower.IOSpec{x, b}
		args := [][]float32{fp16Values(rng, x.Size()), fp16Values(rng, b.Size())}
		for _, a := range args { // fp16 values, so that a float32 surface holds them exactly
			for i := range a {
				a[i] = fp16.Round32(a[i])
			}
		}
		// The same values as one fp16 surface in the lowering's layout.
		surface := make([]uint16, 5*32)
		for k, sp := range []lower.IOSpec{x, b} {
			n := sp.RowLen()
			for r := range sp.Rows() {
				for w := range n {
					surface[(sp.Channel+r)*32+w] = uint16(fp16.FromFloat32(args[k][r*n+w]))
				}
			}
		}
		want := make([]byte, tensor.Bytes())
		require.NoError(t, p.Pack(want, args))
		got := make([]byte, tensor.Bytes())
		for i := range got {
			got[i] = 0xAA // padding must be zeroed
		}
		require.NoError(t, p.PackHalf(got, [][]uint16{surface}, specs))
		require.Equal(t, want, got, tensor.Type)

		// Read back through an output port of the same layout.
		q := p
		back := [][]uint16{make([]uint16, 5*32)}
		require.NoError(t, q.UnpackHalf(back, got, specs))
		for _, sp := range []lower.IOSpec{x, b} {
			n := sp.RowLen()
			for r := range sp.Rows() {
				off := (sp.Channel + r) * 32
				require.Equal(t, surface[off:off+n], back[0][off:off+n], "%s row %d", sp.Name, r)
			}
		}
	}
	p := Port{Name: "input", Shape: []int{1, 5, 1, 32}, Tensor: Tensor{Name: "input", Channels: 5, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}, Members: []Member{{Spec: x}}}
	require.Error(t, p.PackHalf(make([]byte, p.Tensor.Bytes()), nil, []lower.IOSpec{x}), "no surface for the member")
	require.Error(t, p.PackHalf(make([]byte, p.Tensor.Bytes()), [][]uint16{make([]uint16, 160)}, nil), "no spec for the member")
	require.Error(t, p.PackHalf(make([]byte, 10), [][]uint16{make([]uint16, 160)}, []lower.IOSpec{x}), "short surface bytes")
}
