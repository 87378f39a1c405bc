package ane

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

func spec(name string, shape []int, c, s int) lower.IOSpec {
	return lower.IOSpec{Name: name, Shape: shape, DeviceShape: []int{1, c, 1, s}}
}

// band is a logical tensor at row ch of surface 0.
func band(name string, shape []int, c, s, ch int) lower.IOSpec {
	sp := spec(name, shape, c, s)
	sp.Channel = ch
	return sp
}

// single is the port of a program without surface lists: one logical
// tensor, its own surface.
func single(s lower.IOSpec, t Tensor) Port {
	return Port{Name: s.Name, Shape: s.DeviceShape, Tensor: t, Members: []Member{{Spec: s}}}
}

// TestBindOutputsByName is the review's case: outputs r and r2, reported
// as "r@output" and "r2@output", bind to the right tensors whatever order
// the live list and the symbol array list them in. The two have different
// channel counts, so a swap would also fail the shape check; the test
// checks the names directly. "r" is a prefix of "r2": only an exact match
// after trimming the suffix may bind.
func TestBindOutputsByName(t *testing.T) {
	prog := &lower.Program{
		Inputs:  []lower.IOSpec{spec("x", []int{3, 32}, 3, 32)},
		Outputs: []lower.IOSpec{spec("r", []int{32}, 1, 32), spec("r2", []int{2, 32}, 2, 32)},
	}
	r, r2 := live("r@output", 1, 32, 64), live("r2@output", 2, 32, 64)
	for _, lives := range [][]map[string]any{{r, r2}, {r2, r}} {
		for _, syms := range [][]string{{"r@output", "r2@output"}, {"r2@output", "r@output"}} {
			t.Run(fmt.Sprintf("%v/%v", lives[0][KeyName], syms[0]), func(t *testing.T) {
				l, err := ParseLayout(attrsOf([]map[string]any{live("x", 3, 32, 64)}, lives, []string{"x"}, syms, []int{0}, []int{0, 1}))
				require.NoError(t, err)
				b, err := Bind(l, prog)
				out := b.Outputs
				require.NoError(t, err)
				require.Equal(t, "r", out[0].Name)
				require.Equal(t, "r@output", out[0].Tensor.Name)
				require.Equal(t, "r2", out[1].Name)
				require.Equal(t, "r2@output", out[1].Tensor.Name)

				// The request's arrays follow the symbol array.
				order, err := RequestOrder(out)
				require.NoError(t, err)
				req := Reorder(out, order)
				require.Equal(t, syms, []string{req[0].Tensor.Name, req[1].Tensor.Name})
				require.Equal(t, []int{0, 1}, []int{req[0].Tensor.Index, req[1].Tensor.Index}, "position = index")
			})
		}
	}
}

func TestBindUnmatched(t *testing.T) {
	prog := &lower.Program{
		Inputs:  []lower.IOSpec{spec("x", []int{32}, 1, 32)},
		Outputs: []lower.IOSpec{spec("r", []int{32}, 1, 32), spec("r2", []int{32}, 1, 32)},
	}
	in := []Tensor{{Name: "x", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}}
	out := func(names ...string) []Tensor {
		ts := make([]Tensor, len(names))
		for i, n := range names {
			ts[i] = Tensor{Name: n, Symbol: n, Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: i}
		}
		return ts
	}
	_, err := Bind(&Layout{Inputs: in, Outputs: out("r2@output", "r@output")}, prog)
	require.NoError(t, err)
	// Neither alphabetical nor positional guessing: each of these leaves a
	// port without a tensor of its name.
	for _, names := range [][]string{
		{"r@output", "q@output"},
		{"r2@output", "r22@output"}, // no prefix match for r
		{"out0", "out1"},
		{"r@output", "r@output"}, // two tensors match r, none r2
	} {
		_, err := Bind(&Layout{Inputs: in, Outputs: out(names...)}, prog)
		require.ErrorIs(t, err, ErrLayout, "%v", names)
		require.ErrorIs(t, err, shim.ErrUnsupported)
	}
	// A tensor named like one port and symbolled like another binds by
	// its name; the symbol is only the fallback.
	ts := out("r@output", "r2@output")
	ts[0].Symbol = "r2@output"
	b, err := Bind(&Layout{Inputs: in, Outputs: ts}, prog)
	require.NoError(t, err)
	require.Equal(t, "r2@output", b.Outputs[1].Tensor.Name)
}

// TestBindPacked binds a program lowered with packed I/O: one input
// surface "input" holding x (rows 0–2) and b (rows 3–4), one output
// surface "output" holding y (row 0) and z (rows 1–2). The model reports
// 128-byte rows for 32 fp16 elements (64 bytes), so the row stride comes
// from the dictionary, not from the element count.
func TestBindPacked(t *testing.T) {
	prog := &lower.Program{
		Inputs:         []lower.IOSpec{band("x", []int{3, 30}, 3, 32, 0), band("b", []int{2, 32}, 2, 32, 3)},
		Outputs:        []lower.IOSpec{band("y", []int{20}, 1, 32, 0), band("z", []int{2, 16}, 2, 32, 1)},
		InputSurfaces:  []lower.Surface{{Name: "input", Shape: []int{1, 5, 1, 32}}},
		OutputSurfaces: []lower.Surface{{Name: "output", Shape: []int{1, 3, 1, 32}}},
	}
	const stride = 128
	l, err := ParseLayout(attrsOf(
		[]map[string]any{live("input", 5, 32, stride)}, []map[string]any{live("output@output", 3, 32, stride)},
		[]string{"input"}, []string{"output@output"}, []int{0}, []int{0}))
	require.NoError(t, err)
	b, err := Bind(l, prog)
	in, out := b.Inputs, b.Outputs
	require.NoError(t, err)
	require.Len(t, in, 1)
	require.Len(t, out, 1)
	require.Equal(t, []Member{{Spec: prog.Inputs[0], Arg: 0, Row: 0}, {Spec: prog.Inputs[1], Arg: 1, Row: 3}}, in[0].Members)
	require.Equal(t, []Member{{Spec: prog.Outputs[0], Arg: 0, Row: 0}, {Spec: prog.Outputs[1], Arg: 1, Row: 1}}, out[0].Members)

	rng := rand.New(rand.NewPCG(3, 4))
	args := [][]float32{fp16Values(rng, 90), fp16Values(rng, 64)}
	dst := make([]byte, in[0].Tensor.Bytes()+64)
	for i := range dst {
		dst[i] = 0xAA
	}
	require.NoError(t, in[0].Pack(dst, args))
	want := make([]byte, 5*stride) // zero except the members' elements
	for _, m := range []struct {
		arg, row, rows, n int
	}{{0, 0, 3, 30}, {1, 3, 2, 32}} {
		for r := range m.rows {
			for w := range m.n {
				binary.LittleEndian.PutUint16(want[(m.row+r)*stride+2*w:], float16.Fromfloat32(args[m.arg][r*m.n+w]).Bits())
			}
		}
	}
	require.Equal(t, want, dst[:5*stride])
	for i := 5 * stride; i < len(dst); i++ {
		require.Equal(t, byte(0xAA), dst[i], "byte %d past the surface", i)
	}

	// Unpack: surface element (c, w) holds c·32 + w, exact in fp16; the
	// row padding holds garbage that must not leak into the outputs.
	src := make([]byte, 3*stride)
	for i := range src {
		src[i] = 0x3C // 0x3C3C ≈ 1.06, never c·32 + w for w < 32
	}
	for c := range 3 {
		for w := range 32 {
			binary.LittleEndian.PutUint16(src[c*stride+2*w:], float16.Fromfloat32(float32(c*32+w)).Bits())
		}
	}
	outs := [][]float32{make([]float32, 20), make([]float32, 32)}
	require.NoError(t, out[0].Unpack(outs, src))
	for w := range 20 {
		require.Equal(t, float32(w), outs[0][w], "y[%d]", w)
	}
	for r := range 2 {
		for w := range 16 {
			require.Equal(t, float32((1+r)*32+w), outs[1][r*16+w], "z[%d][%d]", r, w)
		}
	}
}

func TestBindBad(t *testing.T) {
	prog := &lower.Program{
		Inputs:  []lower.IOSpec{spec("x", []int{3, 30}, 3, 32), spec("lora", []int{2, 32}, 2, 32)},
		Outputs: []lower.IOSpec{spec("q", []int{4}, 1, 32)},
	}
	tX := Tensor{Name: "x", Channels: 3, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 1}
	tL := Tensor{Symbol: "lora", Channels: 2, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 0}
	tQ := Tensor{Name: "q@output", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}
	b, err := Bind(&Layout{Inputs: []Tensor{tL, tX}, Outputs: []Tensor{tQ}}, prog)
	require.NoError(t, err)
	in, out := b.Inputs, b.Outputs
	require.Equal(t, []Tensor{tX, tL}, PortTensors(in), "ports stay in program order")
	require.Equal(t, []Tensor{tQ}, PortTensors(out))

	edit := func(f func(*Tensor)) Tensor { x := tL; f(&x); return x }
	packed := func(f func(p *lower.Program)) *lower.Program {
		p := &lower.Program{
			Inputs:         []lower.IOSpec{band("x", []int{3, 30}, 3, 32, 0), band("lora", []int{2, 32}, 2, 32, 3)},
			Outputs:        []lower.IOSpec{band("q", []int{4}, 1, 32, 0)},
			InputSurfaces:  []lower.Surface{{Name: "input", Shape: []int{1, 5, 1, 32}}},
			OutputSurfaces: []lower.Surface{{Name: "output", Shape: []int{1, 1, 1, 32}}},
		}
		f(p)
		return p
	}
	tIn := Tensor{Name: "input", Channels: 5, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}
	tOut := Tensor{Name: "output@output", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}
	_, err = Bind(&Layout{Inputs: []Tensor{tIn}, Outputs: []Tensor{tOut}}, packed(func(*lower.Program) {}))
	require.NoError(t, err)
	bad := []struct {
		name string
		l    *Layout
		p    *lower.Program
	}{
		{"count", &Layout{Inputs: []Tensor{tX}, Outputs: []Tensor{tQ}}, prog},
		{"channels", &Layout{Inputs: []Tensor{tX, edit(func(x *Tensor) { x.Channels = 3 })}, Outputs: []Tensor{tQ}}, prog},
		{"width", &Layout{Inputs: []Tensor{tX, edit(func(x *Tensor) { x.Width, x.RowStride, x.PlaneStride = 64, 128, 128 })}, Outputs: []Tensor{tQ}}, prog},
		{"height", &Layout{Inputs: []Tensor{tX, edit(func(x *Tensor) { x.Height, x.PlaneStride = 2, 128 })}, Outputs: []Tensor{tQ}}, prog},
		{"invalid tensor", &Layout{Inputs: []Tensor{tX, edit(func(x *Tensor) { x.RowStride = 32 })}, Outputs: []Tensor{tQ}}, prog},
		{"interleaved", &Layout{Inputs: []Tensor{tX, edit(func(x *Tensor) { x.Interleave = 2 })}, Outputs: []Tensor{tQ}}, prog},
		{"nil layout", nil, prog},
		{"nil program", &Layout{}, nil},
		{"packed: band past the surface", &Layout{Inputs: []Tensor{tIn}, Outputs: []Tensor{tOut}}, packed(func(p *lower.Program) { p.Inputs[1].Channel = 4 })},
		{"packed: overlapping inputs", &Layout{Inputs: []Tensor{tIn}, Outputs: []Tensor{tOut}}, packed(func(p *lower.Program) { p.Inputs[1].Channel = 2 })},
		{"packed: band of another stride", &Layout{Inputs: []Tensor{tIn}, Outputs: []Tensor{tOut}}, packed(func(p *lower.Program) { p.Inputs[1].DeviceShape = []int{1, 2, 1, 64} })},
		{"packed: empty surface", &Layout{Inputs: []Tensor{tIn, tIn}, Outputs: []Tensor{tOut}}, packed(func(p *lower.Program) {
			p.InputSurfaces = append(p.InputSurfaces, lower.Surface{Name: "spare", Shape: []int{1, 1, 1, 32}})
		})},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Bind(tc.l, tc.p)
			require.ErrorIs(t, err, ErrLayout)
		})
	}
	// A logical tensor naming a surface the program lacks is the
	// program's fault.
	_, err = Bind(&Layout{Inputs: []Tensor{tIn}, Outputs: []Tensor{tOut}}, packed(func(p *lower.Program) { p.Inputs[1].Surface = 1 }))
	require.ErrorIs(t, err, ErrProgram)
}

func TestRequestOrder(t *testing.T) {
	ports := func(idx ...int) []Port {
		ps := make([]Port, len(idx))
		for i, k := range idx {
			ps[i] = Port{Name: fmt.Sprint("p", i), Tensor: Tensor{Index: k}}
		}
		return ps
	}
	order, err := RequestOrder(ports(2, 0, 1))
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 0}, order)
	require.Equal(t, []string{"p1", "p2", "p0"}, []string{Reorder(ports(2, 0, 1), order)[0].Name, Reorder(ports(2, 0, 1), order)[1].Name, Reorder(ports(2, 0, 1), order)[2].Name})
	for _, bad := range [][]int{{0, 2}, {1, 1}, {-1}} {
		_, err := RequestOrder(ports(bad...))
		require.ErrorIs(t, err, ErrLayout, "%v", bad)
	}
	order, err = RequestOrder(nil)
	require.NoError(t, err)
	require.Empty(t, order)
}

// fp16Values draws n values in the normal fp16 range, with random signs and
// magnitudes spread over [2⁻¹⁴, 2¹⁵].
func fp16Values(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		x := float32(math.Ldexp(1+rng.Float64(), rng.IntN(30)-14))
		if rng.IntN(2) == 0 {
			x = -x
		}
		v[i] = x
	}
	return v
}

func TestPackUnpackStrides(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name   string
		spec   lower.IOSpec
		tensor Tensor
	}{
		// RowStride 128 for Width 40 (80 bytes), and a plane gap after it.
		{"odd strides", spec("x", []int{3, 37}, 3, 40), Tensor{Name: "x", Channels: 3, Height: 1, Width: 40, RowStride: 128, PlaneStride: 192, ElemSize: 2}},
		{"packed", spec("x", []int{5, 32}, 5, 32), Tensor{Name: "x", Channels: 5, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}},
		{"scalar", spec("s", nil, 1, 32), Tensor{Name: "s", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}},
		{"rank 3", spec("t", []int{2, 3, 10}, 6, 32), Tensor{Name: "t", Channels: 6, Height: 1, Width: 32, RowStride: 128, PlaneStride: 128, ElemSize: 2}},
		{"float32", spec("f", []int{2, 20}, 2, 20), Tensor{Name: "f", Type: "Float32", Channels: 2, Height: 1, Width: 20, RowStride: 128, PlaneStride: 256, ElemSize: 4}},
		// BatchStride past C·PlaneStride: the tail is part of the surface
		// and is zeroed too.
		{"batch stride", spec("x", []int{2, 32}, 2, 32), Tensor{Name: "x", Channels: 2, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, BatchStride: 192, ElemSize: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := single(tc.spec, tc.tensor)
			src := fp16Values(rng, tc.spec.Size())
			// Garbage in the surface, and spare bytes past the tensor, to
			// check that padding is zeroed and nothing past it is touched.
			dst := make([]byte, tc.tensor.Bytes()+64)
			for i := range dst {
				dst[i] = 0xAA
			}
			require.NoError(t, p.Pack(dst, [][]float32{src}))

			n := tc.spec.RowLen()
			written := make([]bool, len(dst))
			for c := range tc.tensor.Channels {
				for w := range n {
					i := c*n + w
					off := tc.tensor.Offset(c, 0, w)
					require.Equal(t, c*tc.tensor.PlaneStride+w*tc.tensor.ElemSize, off)
					if tc.tensor.ElemSize == 4 {
						got := math.Float32frombits(binary.LittleEndian.Uint32(dst[off:]))
						require.Equal(t, src[i], got, "element %d", i)
					} else {
						// Independent reference for the encoding: x448/float16.
						want := float16.Fromfloat32(src[i]).Bits()
						require.Equal(t, want, binary.LittleEndian.Uint16(dst[off:]), "element %d", i)
					}
					for k := range tc.tensor.ElemSize {
						written[off+k] = true
					}
				}
			}
			for i := range tc.tensor.Bytes() {
				if !written[i] {
					require.Zero(t, dst[i], "padding byte %d", i)
				}
			}
			for i := tc.tensor.Bytes(); i < len(dst); i++ {
				require.Equal(t, byte(0xAA), dst[i], "byte %d past the tensor", i)
			}

			// Unpack returns exactly the stored values: fp16 rounding of
			// the inputs (an fp16 value is exact in float32, so no
			// tolerance applies), or the float32 values themselves.
			got := [][]float32{make([]float32, tc.spec.Size())}
			require.NoError(t, p.Unpack(got, dst))
			for i := range src {
				want := src[i]
				if tc.tensor.ElemSize == 2 {
					want = fp16.Round32(src[i])
				}
				require.Equal(t, want, got[0][i], "element %d", i)
			}
		})
	}
}

func TestPackRange(t *testing.T) {
	p := single(spec("x", []int{2, 4}, 2, 32), Tensor{Name: "x", Channels: 2, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2})
	dst := make([]byte, p.Tensor.Bytes())
	tests := []struct {
		name string
		x    float32
		ok   bool
	}{
		{"max", fp16.MaxValue, true},
		{"rounds down to max", 65519, true},
		{"rounds to Inf", 65520, false},
		{"negative overflow", -1e6, false},
		{"Inf", float32(math.Inf(1)), false},
		{"NaN", float32(math.NaN()), false},
		{"tiny", 1e-30, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := []float32{1, 2, 3, 4, 5, 6, tc.x, 8}
			err := p.Pack(dst, [][]float32{src})
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, shim.ErrRange)
			require.Contains(t, err.Error(), `input "x" element 6`)
		})
	}
	require.ErrorIs(t, p.Pack(dst, [][]float32{make([]float32, 7)}), shim.ErrShape)
	require.ErrorIs(t, p.Pack(dst, nil), shim.ErrShape)
	require.ErrorIs(t, p.Pack(dst[:100], [][]float32{make([]float32, 8)}), ErrLayout)
	// A port whose spec and tensor disagree is refused, not indexed.
	bad := single(spec("x", []int{3, 4}, 3, 32), p.Tensor)
	require.ErrorIs(t, bad.Pack(dst, [][]float32{make([]float32, 12)}), ErrLayout)
}

func TestUnpackRange(t *testing.T) {
	p := single(spec("y", []int{1, 3}, 1, 32), Tensor{Name: "y", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2})
	src := make([]byte, p.Tensor.Bytes())
	binary.LittleEndian.PutUint16(src[0:], uint16(fp16.FromFloat32(1.5)))
	binary.LittleEndian.PutUint16(src[2:], 0xfc00) // -Inf
	binary.LittleEndian.PutUint16(src[4:], uint16(fp16.FromFloat32(-2)))
	dst := [][]float32{make([]float32, 3)}
	err := p.Unpack(dst, src)
	require.ErrorIs(t, err, shim.ErrRange)
	require.Contains(t, err.Error(), `output "y" element 1`)
	require.Equal(t, float32(1.5), dst[0][0])
	require.True(t, math.IsInf(float64(dst[0][1]), -1))
	require.Equal(t, float32(-2), dst[0][2], "dst is filled in full")

	binary.LittleEndian.PutUint16(src[2:], 0x7e00) // NaN
	require.ErrorIs(t, p.Unpack(dst, src), shim.ErrRange)
	require.ErrorIs(t, p.Unpack([][]float32{make([]float32, 2)}, src), shim.ErrShape)
	require.ErrorIs(t, p.Unpack(nil, src), shim.ErrShape)
	require.ErrorIs(t, p.Unpack(dst, src[:10]), ErrLayout)
}

// TestBindByPosition binds the logged M3 case: the model names its lone
// input "a_input0" and its lone output "out@output", while the program's
// packed surfaces are "input" and "output". One surface each way can only
// pair one way: it binds, and says so.
func TestBindByPosition(t *testing.T) {
	prog := &lower.Program{
		Inputs:         []lower.IOSpec{band("x", []int{4, 4}, 4, 32, 0)},
		Outputs:        []lower.IOSpec{band("y", []int{4, 4}, 4, 32, 0)},
		InputSurfaces:  []lower.Surface{{Name: "input", Shape: []int{1, 4, 1, 32}}},
		OutputSurfaces: []lower.Surface{{Name: "output", Shape: []int{1, 4, 1, 32}}},
	}
	l, err := ParseLayout(attrsOf([]map[string]any{live("a_input0", 4, 32, 64)}, []map[string]any{live("out@output", 4, 32, 64)},
		[]string{"a_input0"}, []string{"out@output"}, []int{0}, []int{0}))
	require.NoError(t, err)
	b, err := Bind(l, prog)
	require.NoError(t, err)
	require.Equal(t, "a_input0", b.Inputs[0].Tensor.Name)
	require.Equal(t, "out@output", b.Outputs[0].Tensor.Name)
	require.Len(t, b.Warnings, 2)
	require.Contains(t, b.Warnings[0], `input surface "input" bound by position`)
	require.Contains(t, b.Warnings[0], `"a_input0"`)
	require.Contains(t, b.Warnings[1], `output surface "output" bound by position`)

	// Matching names bind without a warning.
	l, err = ParseLayout(attrsOf([]map[string]any{live("input", 4, 32, 64)}, []map[string]any{live("output@output", 4, 32, 64)},
		[]string{"input"}, []string{"output@output"}, []int{0}, []int{0}))
	require.NoError(t, err)
	b, err = Bind(l, prog)
	require.NoError(t, err)
	require.Empty(t, b.Warnings)

	// Position decides only what it can: a lone surface of the wrong
	// shape is still refused.
	l, err = ParseLayout(attrsOf([]map[string]any{live("a_input0", 5, 32, 64)}, []map[string]any{live("out@output", 4, 32, 64)},
		[]string{"a_input0"}, []string{"out@output"}, []int{0}, []int{0}))
	require.NoError(t, err)
	_, err = Bind(l, prog)
	require.ErrorIs(t, err, ErrLayout)
}

// TestBindAmbiguous keeps refusing what position cannot settle: two
// output surfaces (the per-output layout) whose reported names match
// neither.
func TestBindAmbiguous(t *testing.T) {
	prog := &lower.Program{
		Inputs:         []lower.IOSpec{spec("x", []int{32}, 1, 32)},
		Outputs:        []lower.IOSpec{spec("y", []int{32}, 1, 32), spec("z", []int{32}, 1, 32)},
		InputSurfaces:  []lower.Surface{{Name: "x", Shape: []int{1, 1, 1, 32}}},
		OutputSurfaces: []lower.Surface{{Name: "y", Shape: []int{1, 1, 1, 32}}, {Name: "z", Shape: []int{1, 1, 1, 32}}},
	}
	prog.Outputs[1].Surface = 1
	l, err := ParseLayout(attrsOf([]map[string]any{live("a_input0", 1, 32, 64)},
		[]map[string]any{live("out0@output", 1, 32, 64), live("out1@output", 1, 32, 64)},
		[]string{"a_input0"}, []string{"out0@output", "out1@output"}, []int{0}, []int{0, 1}))
	require.NoError(t, err)
	_, err = Bind(l, prog)
	require.ErrorIs(t, err, ErrLayout)
	require.ErrorContains(t, err, `output "y"`)
}

// TestBindUntyped binds entries without a Type, as fp16, with a warning
// naming each.
func TestBindUntyped(t *testing.T) {
	prog := &lower.Program{
		Inputs:  []lower.IOSpec{spec("x", []int{32}, 1, 32)},
		Outputs: []lower.IOSpec{spec("y", []int{32}, 1, 32)},
	}
	in, out := live("x", 1, 32, 64), live("y@output", 1, 32, 64)
	delete(in, KeyType)
	l, err := ParseLayout(attrsOf([]map[string]any{in}, []map[string]any{out}, []string{"x"}, []string{"y@output"}, []int{0}, []int{0}))
	require.NoError(t, err)
	require.Equal(t, TypeFloat16, l.Inputs[0].Type)
	require.Equal(t, 2, l.Inputs[0].ElemSize)
	b, err := Bind(l, prog)
	require.NoError(t, err)
	require.Equal(t, []string{`LiveInputList[0] ("x") has no Type; taken for Float16`}, b.Warnings)
}
