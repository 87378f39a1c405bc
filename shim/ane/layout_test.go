package ane

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// entry builds one LiveInputList/LiveOutputList dictionary.
func entry(name, symbol string, c, h, w, rowStride, planeStride int) map[string]any {
	return map[string]any{
		KeyName: name, KeySymbol: symbol, KeyType: "Float16",
		KeyChannels: int64(c), KeyHeight: int64(h), KeyWidth: int64(w),
		KeyRowStride: int64(rowStride), KeyPlaneStride: int64(planeStride),
	}
}

func attrsOf(in, out []any, inSyms, outSyms []any) map[string]any {
	a := map[string]any{
		KeyNetworkStatusList: []any{map[string]any{KeyLiveInputList: in, KeyLiveOutputList: out}},
	}
	if inSyms != nil || outSyms != nil {
		a[KeyModelDescription] = map[string]any{KeyInputSymbols: inSyms, KeyOutputSymbols: outSyms}
	}
	return a
}

func TestParseLayoutGood(t *testing.T) {
	// Numbers arrive as different Go types depending on the converter;
	// each must parse to the same value.
	in := []any{
		map[string]any{KeyName: "y", KeySymbol: "y", KeyType: "Float16", KeyChannels: uint64(4), KeyHeight: int32(1), KeyWidth: float64(32), KeyRowStride: 64, KeyPlaneStride: int16(64)},
		entry("x", "x", 3, 1, 40, 128, 192),
	}
	out := []any{map[string]any{KeyName: "z", KeyType: "Float32", KeyChannels: 2, KeyHeight: 1, KeyWidth: 20, KeyRowStride: 128, KeyPlaneStride: 128}}
	l, err := ParseLayout(attrsOf(in, out, []any{"x", "y"}, []any{"z"}))
	require.NoError(t, err)
	require.Equal(t, []Tensor{
		{Name: "y", Symbol: "y", Type: "Float16", Channels: 4, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 1},
		{Name: "x", Symbol: "x", Type: "Float16", Channels: 3, Height: 1, Width: 40, RowStride: 128, PlaneStride: 192, ElemSize: 2, Index: 0},
	}, l.Inputs)
	require.Equal(t, []Tensor{
		{Name: "z", Type: "Float32", Channels: 2, Height: 1, Width: 20, RowStride: 128, PlaneStride: 128, ElemSize: 4, Index: 0},
	}, l.Outputs)
	require.Equal(t, []string{"x", "y"}, l.InputSymbols)
	require.Equal(t, []string{"z"}, l.OutputSymbols)

	// Without a model description, indices are positions.
	l, err = ParseLayout(attrsOf(in, out, nil, nil))
	require.NoError(t, err)
	require.Equal(t, 0, l.Inputs[0].Index)
	require.Equal(t, 1, l.Inputs[1].Index)

	// []map[string]any is accepted as an array too.
	a := map[string]any{KeyNetworkStatusList: []map[string]any{{
		KeyLiveInputList:  []map[string]any{entry("x", "", 1, 1, 32, 64, 64)},
		KeyLiveOutputList: []map[string]any{entry("y", "", 1, 1, 32, 64, 64)},
	}}}
	l, err = ParseLayout(a)
	require.NoError(t, err)
	require.Len(t, l.Inputs, 1)
	require.Len(t, l.Outputs, 1)
}

func TestParseLayoutBad(t *testing.T) {
	good := func() map[string]any { return entry("x", "x", 2, 1, 40, 128, 128) }
	with := func(k string, v any) map[string]any {
		e := good()
		if v == nil {
			delete(e, k)
		} else {
			e[k] = v
		}
		return e
	}
	one := func(e any) map[string]any { return attrsOf([]any{e}, []any{good()}, nil, nil) }
	tests := []struct {
		name  string
		attrs map[string]any
	}{
		{"nil attributes", nil},
		{"no NetworkStatusList", map[string]any{}},
		{"NetworkStatusList not an array", map[string]any{KeyNetworkStatusList: "x"}},
		{"empty NetworkStatusList", map[string]any{KeyNetworkStatusList: []any{}}},
		{"procedure not a dictionary", map[string]any{KeyNetworkStatusList: []any{7}}},
		{"no LiveInputList", map[string]any{KeyNetworkStatusList: []any{map[string]any{KeyLiveOutputList: []any{good()}}}}},
		{"no LiveOutputList", map[string]any{KeyNetworkStatusList: []any{map[string]any{KeyLiveInputList: []any{good()}}}}},
		{"entry not a dictionary", one("x")},
		{"missing Channels", one(with(KeyChannels, nil))},
		{"missing RowStride", one(with(KeyRowStride, nil))},
		{"Width is a string", one(with(KeyWidth, "40"))},
		{"Width not integral", one(with(KeyWidth, 40.5))},
		{"uint64 too large", one(with(KeyPlaneStride, uint64(math.MaxUint64)))},
		{"Name not a string", one(with(KeyName, 3))},
		{"zero Channels", one(with(KeyChannels, 0))},
		{"negative Height", one(with(KeyHeight, -1))},
		// 160 bytes is wide enough for 40 fp16, but not 64-byte aligned.
		{"RowStride not a multiple of 64", one(map[string]any{KeyChannels: 1, KeyHeight: 1, KeyWidth: 40, KeyRowStride: 160, KeyPlaneStride: 160})},
		{"RowStride zero", one(with(KeyRowStride, 0))},
		// Width 40 fp16 = 80 bytes needs round_up_64(80) = 128.
		{"RowStride too small for Width", one(with(KeyRowStride, 64))},
		// Float32 Width 20 = 80 bytes also needs 128.
		{"RowStride too small for Float32", one(map[string]any{KeyType: "Float32", KeyChannels: 1, KeyHeight: 1, KeyWidth: 20, KeyRowStride: 64, KeyPlaneStride: 64})},
		{"PlaneStride below Height·RowStride", one(map[string]any{KeyChannels: 1, KeyHeight: 2, KeyWidth: 32, KeyRowStride: 64, KeyPlaneStride: 64})},
		{"huge surface", one(map[string]any{KeyChannels: 1 << 30, KeyHeight: 1, KeyWidth: 32, KeyRowStride: 64, KeyPlaneStride: 1 << 30})},
		{"description not a dictionary", func() map[string]any { a := one(good()); a[KeyModelDescription] = []any{}; return a }()},
		{"symbols not an array", func() map[string]any {
			a := one(good())
			a[KeyModelDescription] = map[string]any{KeyInputSymbols: "x"}
			return a
		}()},
		{"symbol not a string", attrsOf([]any{good()}, []any{good()}, []any{1}, []any{"x"})},
		{"duplicate symbol index", attrsOf([]any{entry("a", "s", 1, 1, 32, 64, 64), entry("b", "s", 1, 1, 32, 64, 64)}, []any{good()}, []any{"s"}, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseLayout(tc.attrs)
			require.Error(t, err)
			require.ErrorIs(t, err, ErrLayout)
			require.ErrorIs(t, err, shim.ErrUnsupported)
		})
	}
}

func TestResolveIndices(t *testing.T) {
	syms := []string{"a", "b", "x"}
	tests := []struct {
		name string
		ts   []Tensor
		want []int
	}{
		{"by symbol", []Tensor{{Symbol: "x"}, {Symbol: "a"}}, []int{2, 0}},
		{"symbol beats name", []Tensor{{Symbol: "b", Name: "x"}}, []int{1}},
		{"name when symbol unknown", []Tensor{{Symbol: "zz", Name: "a"}, {Name: "x"}}, []int{0, 2}},
		{"position when neither resolves", []Tensor{{Name: "q"}, {Symbol: "r"}, {}}, []int{0, 1, 2}},
		{"mixed", []Tensor{{Name: "q"}, {Symbol: "x"}}, []int{0, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, ResolveIndices(tc.ts, syms))
			got := make([]int, len(tc.ts))
			for i, x := range tc.ts {
				got[i] = x.Index
			}
			require.Equal(t, tc.want, got)
		})
	}
	// A resolved index that collides with a positional one is an error.
	err := ResolveIndices([]Tensor{{Name: "q"}, {Symbol: "a"}}, syms)
	require.ErrorIs(t, err, ErrLayout)
}

func spec(name string, shape []int, c, s int) lower.IOSpec {
	return lower.IOSpec{Name: name, Shape: shape, DeviceShape: []int{1, c, 1, s}}
}

func TestBind(t *testing.T) {
	prog := &lower.Program{
		Inputs:  []lower.IOSpec{spec("x", []int{3, 30}, 3, 32), spec("lora", []int{2, 32}, 2, 32)},
		Outputs: []lower.IOSpec{spec("q", []int{4}, 1, 32), spec("k", []int{4}, 1, 32)},
	}
	tX := Tensor{Name: "x", Channels: 3, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 1}
	tL := Tensor{Symbol: "lora", Channels: 2, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 0}
	t.Run("by name and symbol", func(t *testing.T) {
		oq := Tensor{Name: "q", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 1}
		ok := Tensor{Name: "k", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 0}
		in, out, err := Bind(&Layout{Inputs: []Tensor{tL, tX}, Outputs: []Tensor{ok, oq}}, prog)
		require.NoError(t, err)
		require.Equal(t, []Tensor{tX, tL}, PortTensors(in))
		require.Equal(t, []Tensor{oq, ok}, PortTensors(out))
		require.Equal(t, "x", in[0].Spec.Name)
	})
	t.Run("alphabetical fallback", func(t *testing.T) {
		// Unnamed outputs: "k" < "q", so k takes the lower symbol index.
		o0 := Tensor{Name: "out0", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 0}
		o1 := Tensor{Name: "out1", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 1}
		_, out, err := Bind(&Layout{Inputs: []Tensor{tX, tL}, Outputs: []Tensor{o1, o0}}, prog)
		require.NoError(t, err)
		require.Equal(t, "q", out[0].Spec.Name)
		require.Equal(t, 1, out[0].Tensor.Index)
		require.Equal(t, "k", out[1].Spec.Name)
		require.Equal(t, 0, out[1].Tensor.Index)
	})
	bad := []struct {
		name string
		l    *Layout
	}{
		{"count", &Layout{Inputs: []Tensor{tX}, Outputs: nil}},
		{"channels", &Layout{Inputs: []Tensor{tX, func() Tensor { x := tL; x.Channels = 3; return x }()}}},
		{"width", &Layout{Inputs: []Tensor{tX, func() Tensor { x := tL; x.Width = 64; x.RowStride = 128; x.PlaneStride = 128; return x }()}}},
		{"height", &Layout{Inputs: []Tensor{tX, func() Tensor { x := tL; x.Height = 2; x.PlaneStride = 128; return x }()}}},
		{"invalid tensor", &Layout{Inputs: []Tensor{tX, func() Tensor { x := tL; x.RowStride = 32; return x }()}}},
		{"nil", nil},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Bind(tc.l, prog)
			require.ErrorIs(t, err, ErrLayout)
		})
	}
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := Port{Spec: tc.spec, Tensor: tc.tensor}
			src := fp16Values(rng, tc.spec.Size())
			// Garbage in the surface, and spare bytes past the tensor, to
			// check that padding is zeroed and nothing past it is touched.
			dst := make([]byte, tc.tensor.Bytes()+64)
			for i := range dst {
				dst[i] = 0xAA
			}
			require.NoError(t, p.Pack(dst, src))

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
			got := make([]float32, tc.spec.Size())
			require.NoError(t, p.Unpack(got, dst))
			for i := range src {
				want := src[i]
				if tc.tensor.ElemSize == 2 {
					want = fp16.Round32(src[i])
				}
				require.Equal(t, want, got[i], "element %d", i)
			}
		})
	}
}

func TestPackRange(t *testing.T) {
	p := Port{Spec: spec("x", []int{2, 4}, 2, 32), Tensor: Tensor{Name: "x", Channels: 2, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}}
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
			err := p.Pack(dst, src)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, shim.ErrRange)
			require.Contains(t, err.Error(), `input "x" element 6`)
		})
	}
	err := p.Pack(dst, make([]float32, 7))
	require.ErrorIs(t, err, shim.ErrShape)
	err = p.Pack(dst[:100], make([]float32, 8))
	require.ErrorIs(t, err, ErrLayout)
	// A port whose spec and tensor disagree is refused, not indexed.
	bad := p
	bad.Spec = spec("x", []int{3, 4}, 3, 32)
	require.ErrorIs(t, bad.Pack(dst, make([]float32, 12)), ErrLayout)
}

func TestUnpackRange(t *testing.T) {
	p := Port{Spec: spec("y", []int{1, 3}, 1, 32), Tensor: Tensor{Name: "y", Channels: 1, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}}
	src := make([]byte, p.Tensor.Bytes())
	binary.LittleEndian.PutUint16(src[0:], uint16(fp16.FromFloat32(1.5)))
	binary.LittleEndian.PutUint16(src[2:], 0xfc00) // -Inf
	binary.LittleEndian.PutUint16(src[4:], uint16(fp16.FromFloat32(-2)))
	dst := make([]float32, 3)
	err := p.Unpack(dst, src)
	require.ErrorIs(t, err, shim.ErrRange)
	require.Contains(t, err.Error(), `output "y" element 1`)
	require.Equal(t, float32(1.5), dst[0])
	require.True(t, math.IsInf(float64(dst[1]), -1))
	require.Equal(t, float32(-2), dst[2], "dst is filled in full")

	binary.LittleEndian.PutUint16(src[2:], 0x7e00) // NaN
	require.ErrorIs(t, p.Unpack(dst, src), shim.ErrRange)
	require.ErrorIs(t, p.Unpack(make([]float32, 2), src), shim.ErrShape)
	require.ErrorIs(t, p.Unpack(dst, src[:10]), ErrLayout)
}

func TestSurfaces(t *testing.T) {
	a := Tensor{Channels: 3, Height: 1, Width: 40, RowStride: 128, PlaneStride: 192, ElemSize: 2}
	b := Tensor{Channels: 2, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2}
	c := Tensor{Channels: 4, Height: 2, Width: 16, RowStride: 64, PlaneStride: 256, ElemSize: 4}
	require.Equal(t, SurfaceSpec{Width: 40, Height: 3, BytesPerElement: 2, BytesPerRow: 128, AllocSize: 576}, a.Surface())
	require.Equal(t, SurfaceSpec{Width: 16, Height: 8, BytesPerElement: 4, BytesPerRow: 64, AllocSize: 1024}, c.Surface())

	in, out := PlanSurfaces([]Tensor{a, b}, []Tensor{c}, SurfaceOptions{})
	require.Equal(t, []int{576, 128}, allocs(in))
	require.Equal(t, []int{1024}, allocs(out))

	in, out = PlanSurfaces([]Tensor{a, b}, []Tensor{c}, SurfaceOptions{PadToLargest: true})
	require.Equal(t, []int{1024, 1024}, allocs(in))
	require.Equal(t, []int{1024}, allocs(out))
	require.Equal(t, 64, in[1].BytesPerRow, "padding changes only the allocation")
	require.Equal(t, 2, in[1].Height)

	in, out = PlanSurfaces([]Tensor{a, b}, []Tensor{c}, SurfaceOptions{MinAllocSize: 600})
	require.Equal(t, []int{600, 600}, allocs(in))
	require.Equal(t, []int{1024}, allocs(out))

	in, out = PlanSurfaces([]Tensor{a, b}, []Tensor{c}, DefaultSurfaceOptions)
	require.Equal(t, []int{48 << 10, 48 << 10}, allocs(in))
	require.Equal(t, []int{48 << 10}, allocs(out))
	require.True(t, DefaultSurfaceOptions.PadToLargest)

	require.True(t, b.Packed())
	require.False(t, a.Packed())
	require.False(t, c.Packed())
}

func allocs(s []SurfaceSpec) []int {
	out := make([]int, len(s))
	for i, x := range s {
		out[i] = x.AllocSize
	}
	return out
}

func TestAsInt(t *testing.T) {
	for _, v := range []any{int(7), int8(7), int16(7), int32(7), int64(7), uint(7), uint8(7), uint16(7), uint32(7), uint64(7), float32(7), float64(7)} {
		n, ok := asInt(v)
		require.True(t, ok, "%T", v)
		require.Equal(t, 7, n, "%T", v)
	}
	for _, v := range []any{"7", 7.5, math.Inf(1), math.NaN(), uint64(1 << 63), nil, true} {
		_, ok := asInt(v)
		require.False(t, ok, "%T %v", v, v)
	}
	require.False(t, errors.Is(nil, ErrLayout))
}
