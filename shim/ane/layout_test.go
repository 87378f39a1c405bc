package ane

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/shim"
)

// live builds one LiveInputList/LiveOutputList entry shaped like the ones
// logged from real machines: every layout key present, numbers as int64
// (what the Foundation converter produces), one batch of depth one,
// PlaneCount equal to Channels, BatchStride = Channels·PlaneStride.
func live(name string, c, w, rowStride int) map[string]any {
	ps := rowStride
	return map[string]any{
		KeyName: name, KeySymbol: name, KeyType: TypeFloat16,
		KeyBatchStride: int64(c * ps), KeyBatches: int64(1), KeyChannels: int64(c),
		KeyDepth: int64(1), "DepthStride": int64(c * ps), KeyHeight: int64(1),
		KeyInterleave: int64(1), KeyPlaneCount: int64(c), KeyPlaneStride: int64(ps),
		KeyRowStride: int64(rowStride), KeyWidth: int64(w),
	}
}

// attrsOf builds a modelAttributes dictionary shaped like the logged ones:
// a model description with both symbol arrays, procedure 0's index arrays
// (omitted when nil) and the procedure-name map, and one NetworkStatusList
// entry.
func attrsOf(in, out []map[string]any, inSyms, outSyms []string, inIdx, outIdx []int) map[string]any {
	toAny := func(m []map[string]any) []any {
		a := make([]any, len(m))
		for i := range m {
			a[i] = m[i]
		}
		return a
	}
	strs := func(s []string) []any {
		a := make([]any, len(s))
		for i := range s {
			a[i] = s[i]
		}
		return a
	}
	ints := func(s []int) []any {
		a := make([]any, len(s))
		for i := range s {
			a[i] = int64(s[i])
		}
		return a
	}
	proc := map[string]any{KeyProcedureID: int64(0)}
	if inIdx != nil {
		proc[KeyInputIndices] = ints(inIdx)
	}
	if outIdx != nil {
		proc[KeyOutputIndices] = ints(outIdx)
	}
	return map[string]any{
		KeyModelDescription: map[string]any{
			"ANEFModelInput16KAlignmentArray":   []any{int64(0)},
			"ANEFModelOutput16KAlignmentArray":  []any{int64(0)},
			KeyProcedures:                       []any{proc},
			KeyInputSymbols:                     strs(inSyms),
			KeyOutputSymbols:                    strs(outSyms),
			"kANEFModelProcedureNameToIDMapKey": map[string]any{"main": int64(0)},
		},
		KeyNetworkStatusList: []any{map[string]any{
			KeyLiveInputList:  toAny(in),
			KeyLiveOutputList: toAny(out),
		}},
	}
}

// TestParseLayoutLogged parses a dictionary with the content logged from an
// M3 Pro for a [1, 4, 1, 4] identity program: rows of 4 fp16 (8 bytes)
// padded to 64, PlaneCount = Channels = 4, BatchStride = 4·64, the output
// named with its @output suffix. Expected values follow from the strides:
// the surface spans 4·64 = 256 bytes.
func TestParseLayoutLogged(t *testing.T) {
	in := live("a_input0", 4, 4, 64)
	out := live("out@output", 4, 4, 64)
	l, err := ParseLayout(attrsOf([]map[string]any{in}, []map[string]any{out}, []string{"a_input0"}, []string{"out@output"}, []int{0}, []int{0}))
	require.NoError(t, err)
	want := Tensor{Name: "a_input0", Symbol: "a_input0", Type: "Float16", Channels: 4, Height: 1, Width: 4, RowStride: 64, PlaneStride: 64,
		BatchStride: 256, Batches: 1, Depth: 1, PlaneCount: 4, Interleave: 1, ElemSize: 2, Index: 0}
	require.Equal(t, []Tensor{want}, l.Inputs)
	want.Name, want.Symbol = "out@output", "out@output"
	require.Equal(t, []Tensor{want}, l.Outputs)
	require.Equal(t, Symbols{Names: []string{"a_input0"}, Indices: []int{0}}, l.InputSymbols)
	require.Equal(t, Symbols{Names: []string{"out@output"}, Indices: []int{0}}, l.OutputSymbols)
	require.Equal(t, 256, l.Inputs[0].Bytes())
	require.Equal(t, "out", BaseName(l.Outputs[0].Name))
}

func TestParseLayoutNumberTypes(t *testing.T) {
	// Numbers arrive as different Go types depending on the converter;
	// each must parse to the same value. Keys a dictionary may lack
	// (BatchStride, Batches, Depth, PlaneCount, Interleave) parse as 0.
	in := []any{
		map[string]any{KeyName: "y", KeySymbol: "y", KeyType: "Float16", KeyChannels: uint64(4), KeyHeight: int32(1), KeyWidth: float64(32), KeyRowStride: 64, KeyPlaneStride: int16(64)},
		map[string]any{KeyName: "x", KeyType: "Float16", KeyChannels: uint8(3), KeyHeight: 1, KeyWidth: 40, KeyRowStride: 128, KeyPlaneStride: uint32(192)},
	}
	out := []map[string]any{{KeyName: "z@output", KeyType: "Float32", KeyChannels: 2, KeyHeight: 1, KeyWidth: 20, KeyRowStride: 128, KeyPlaneStride: 128}}
	a := map[string]any{
		KeyModelDescription:  map[string]any{KeyInputSymbols: []string{"x", "y"}, KeyOutputSymbols: []any{"z@output"}},
		KeyNetworkStatusList: []map[string]any{{KeyLiveInputList: in, KeyLiveOutputList: out}},
	}
	l, err := ParseLayout(a)
	require.NoError(t, err)
	require.Equal(t, []Tensor{
		{Name: "y", Symbol: "y", Type: "Float16", Channels: 4, Height: 1, Width: 32, RowStride: 64, PlaneStride: 64, ElemSize: 2, Index: 1},
		{Name: "x", Type: "Float16", Channels: 3, Height: 1, Width: 40, RowStride: 128, PlaneStride: 192, ElemSize: 2, Index: 0},
	}, l.Inputs)
	require.Equal(t, []Tensor{
		{Name: "z@output", Type: "Float32", Channels: 2, Height: 1, Width: 20, RowStride: 128, PlaneStride: 128, ElemSize: 4, Index: 0},
	}, l.Outputs)
	require.Nil(t, l.InputSymbols.Indices, "no procedures: no index arrays")

	// Without any model description, one tensor each way is unambiguous.
	l, err = ParseLayout(map[string]any{KeyNetworkStatusList: []any{map[string]any{
		KeyLiveInputList:  []any{live("x", 1, 32, 64)},
		KeyLiveOutputList: []any{live("y@output", 1, 32, 64)},
	}}})
	require.NoError(t, err)
	require.Zero(t, l.Inputs[0].Index)
	require.Zero(t, l.Outputs[0].Index)
}

func TestElemSizeOf(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		size int
	}{{"Float16", 2}, {"Float32", 4}} {
		n, err := ElemSizeOf(tc.typ)
		require.NoError(t, err)
		require.Equal(t, tc.size, n)
	}
	// Anything else is refused, never assumed to be fp16.
	for _, bad := range []string{"", "float16", "FP16", "Float16 ", "Int8", "UInt8", "BFloat16", "Float64"} {
		_, err := ElemSizeOf(bad)
		require.ErrorIs(t, err, ErrLayout, "%q", bad)
	}
}

func TestParseLayoutBad(t *testing.T) {
	good := func() map[string]any { return live("x", 2, 40, 128) }
	with := func(kv ...any) map[string]any {
		e := good()
		for i := 0; i < len(kv); i += 2 {
			k := kv[i].(string)
			if kv[i+1] == nil {
				delete(e, k)
			} else {
				e[k] = kv[i+1]
			}
		}
		return e
	}
	one := func(e map[string]any) map[string]any {
		return attrsOf([]map[string]any{e}, []map[string]any{live("y@output", 2, 40, 128)}, []string{"x"}, []string{"y@output"}, []int{0}, []int{0})
	}
	desc := func(edit func(d map[string]any)) map[string]any {
		a := one(good())
		edit(a[KeyModelDescription].(map[string]any))
		return a
	}
	proc0 := func(edit func(p map[string]any)) map[string]any {
		return desc(func(d map[string]any) { edit(d[KeyProcedures].([]any)[0].(map[string]any)) })
	}
	two := []map[string]any{live("a", 1, 32, 64), live("b", 1, 32, 64)}
	outs := []map[string]any{live("y@output", 1, 32, 64)}
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
		{"entry not a dictionary", func() map[string]any {
			a := one(good())
			a[KeyNetworkStatusList].([]any)[0].(map[string]any)[KeyLiveInputList] = []any{"x"}
			return a
		}()},
		{"missing Channels", one(with(KeyChannels, nil))},
		{"missing RowStride", one(with(KeyRowStride, nil))},
		{"Width is a string", one(with(KeyWidth, "40"))},
		{"Width not integral", one(with(KeyWidth, 40.5))},
		{"uint64 too large", one(with(KeyPlaneStride, uint64(math.MaxUint64)))},
		{"Name not a string", one(with(KeyName, 3))},
		{"zero Channels", one(with(KeyChannels, 0))},
		{"negative Height", one(with(KeyHeight, -1))},
		// Type: only the two spellings logged dictionaries use (a missing
		// one is fp16: TestBindUntyped).
		{"empty Type", one(with(KeyType, ""))},
		{"Type Int8", one(with(KeyType, "Int8"))},
		{"Type lower case", one(with(KeyType, "float16"))},
		{"Type not a string", one(with(KeyType, 16))},
		// Layouts this package will not guess at.
		{"two batches", one(with(KeyBatches, int64(2), KeyBatchStride, int64(512)))},
		{"depth 2", one(with(KeyDepth, int64(2)))},
		{"interleave 2", one(with(KeyInterleave, int64(2)))},
		{"PlaneCount neither 1 nor Channels", one(with(KeyChannels, int64(4), KeyPlaneCount, int64(2), KeyBatchStride, nil))},
		{"Batches present but 0", one(with(KeyBatches, int64(0)))},
		{"negative BatchStride", one(with(KeyBatchStride, int64(-1)))},
		// 160 bytes is wide enough for 40 fp16, but not 64-byte aligned.
		{"RowStride not a multiple of 64", one(with(KeyRowStride, 160, KeyPlaneStride, 160))},
		{"RowStride zero", one(with(KeyRowStride, 0))},
		// Width 40 fp16 = 80 bytes needs round_up_64(80) = 128.
		{"RowStride too small for Width", one(with(KeyRowStride, 64))},
		// Float32 Width 20 = 80 bytes also needs 128.
		{"RowStride too small for Float32", one(with(KeyType, "Float32", KeyWidth, 20, KeyRowStride, 64, KeyPlaneStride, 64))},
		{"PlaneStride below Height·RowStride", one(with(KeyHeight, 2, KeyPlaneStride, 128))},
		{"huge surface", one(with(KeyChannels, 1<<30, KeyPlaneStride, 1<<30, KeyRowStride, 128, KeyPlaneCount, nil))},
		// The description.
		{"description not a dictionary", func() map[string]any { a := one(good()); a[KeyModelDescription] = []any{}; return a }()},
		{"symbols not an array", desc(func(d map[string]any) { d[KeyInputSymbols] = "x" })},
		{"symbol not a string", desc(func(d map[string]any) { d[KeyInputSymbols] = []any{1} })},
		{"procedures not an array", desc(func(d map[string]any) { d[KeyProcedures] = map[string]any{} })},
		{"procedure 0 not a dictionary", desc(func(d map[string]any) { d[KeyProcedures] = []any{"p"} })},
		{"procedure 0 has ID 1", proc0(func(p map[string]any) { p[KeyProcedureID] = int64(1) })},
		{"index array not an array", proc0(func(p map[string]any) { p[KeyInputIndices] = int64(0) })},
		{"index not an integer", proc0(func(p map[string]any) { p[KeyInputIndices] = []any{"0"} })},
		{"index out of range", proc0(func(p map[string]any) { p[KeyOutputIndices] = []any{int64(1)} })},
		{"index array without symbols", desc(func(d map[string]any) { delete(d, KeyInputSymbols) })},
		// Resolution: no positional guess.
		{"tensor not among the symbols", attrsOf([]map[string]any{good()}, outs, []string{"q"}, []string{"y@output"}, nil, nil)},
		{"more tensors than symbols", attrsOf(two, outs, []string{"a"}, []string{"y@output"}, nil, nil)},
		{"two tensors, no table", map[string]any{KeyNetworkStatusList: []any{map[string]any{
			KeyLiveInputList: []any{two[0], two[1]}, KeyLiveOutputList: []any{outs[0]}}}}},
		{"duplicate symbol without an index array", attrsOf(two, outs, []string{"a", "a"}, []string{"y@output"}, nil, nil)},
		{"ambiguous symbol order", attrsOf(two, outs, []string{"a", "a", "b"}, []string{"y@output"}, []int{0, 1}, nil)},
		{"two tensors at one position", attrsOf([]map[string]any{two[0], live("a", 1, 32, 64)}, outs, []string{"a", "b"}, []string{"y@output"}, nil, nil)},
	}
	// The base of every case parses: each fails by its own edit.
	_, err := ParseLayout(one(good()))
	require.NoError(t, err)
	_, err = ParseLayout(attrsOf(two, outs, []string{"a", "b"}, []string{"y@output"}, nil, nil))
	require.NoError(t, err)
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
	tests := []struct {
		name string
		ts   []Tensor
		syms Symbols
		want []int
	}{
		{"by symbol", []Tensor{{Symbol: "x"}, {Symbol: "a"}, {Symbol: "b"}}, Symbols{Names: []string{"a", "b", "x"}}, []int{2, 0, 1}},
		{"symbol beats name", []Tensor{{Symbol: "b", Name: "a"}, {Symbol: "a", Name: "b"}}, Symbols{Names: []string{"a", "b"}}, []int{1, 0}},
		{"name when symbol unknown", []Tensor{{Symbol: "zz", Name: "a"}, {Name: "b"}}, Symbols{Names: []string{"a", "b"}}, []int{0, 1}},
		{"output suffix on either side", []Tensor{{Name: "r2@output"}, {Symbol: "r"}}, Symbols{Names: []string{"r@output", "r2"}}, []int{1, 0}},
		// Procedure 0's index array decides the order, not the symbol
		// array's: with indices [1, 0] the first symbol position is "y".
		{"index array order", []Tensor{{Name: "x"}, {Name: "y"}}, Symbols{Names: []string{"x", "y"}, Indices: []int{1, 0}}, []int{1, 0}},
		// A symbol array that holds "x" twice: first occurrence would say
		// position 0; the index array says x is the second symbol of
		// procedure 0 (indices [1, 2] name "y", then the second "x").
		{"duplicated symbol array", []Tensor{{Name: "x"}, {Name: "y"}}, Symbols{Names: []string{"x", "y", "x"}, Indices: []int{1, 2}}, []int{1, 0}},
		{"duplicated, other procedure", []Tensor{{Name: "y"}, {Name: "x"}}, Symbols{Names: []string{"x", "y", "x"}, Indices: []int{2, 1}}, []int{1, 0}},
		{"one tensor, no table", []Tensor{{Name: "q"}}, Symbols{}, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, ResolveIndices(tc.ts, tc.syms))
			got := make([]int, len(tc.ts))
			for i, x := range tc.ts {
				got[i] = x.Index
			}
			require.Equal(t, tc.want, got)
		})
	}
	bad := []struct {
		name string
		ts   []Tensor
		syms Symbols
	}{
		{"duplicated array, no index array", []Tensor{{Name: "x"}, {Name: "y"}, {Name: "z"}}, Symbols{Names: []string{"x", "y", "x"}}},
		{"unknown name", []Tensor{{Name: "q"}}, Symbols{Names: []string{"a"}}},
		{"no names", []Tensor{{}}, Symbols{Names: []string{"a"}}},
		{"count", []Tensor{{Name: "a"}}, Symbols{Names: []string{"a", "b"}}},
		{"negative index", []Tensor{{Name: "a"}}, Symbols{Names: []string{"a"}, Indices: []int{-1}}},
		{"same position twice", []Tensor{{Name: "a"}, {Symbol: "a"}}, Symbols{Names: []string{"a", "b"}}},
		{"two tensors, no table", []Tensor{{Name: "a"}, {Name: "b"}}, Symbols{}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorIs(t, ResolveIndices(tc.ts, tc.syms), ErrLayout)
		})
	}
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

	// A BatchStride past Channels·PlaneStride sizes the surface; one
	// below it does not shrink it: max(3·192, 1000) = 1000, max(576, 64).
	d := a
	d.BatchStride = 1000
	require.Equal(t, 1000, d.Surface().AllocSize)
	d.BatchStride = 64
	require.Equal(t, 576, d.Surface().AllocSize)
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
