package ane

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultOptions(t *testing.T) {
	o := DefaultOptions()
	require.False(t, o.MapSurfaces, "mapping is opt-in")
	require.Equal(t, DefaultSurfaceOptions, o.Surfaces)
}

func TestTryMap(t *testing.T) {
	mapFail := &Error{Op: "map", Code: CodeMapFailure, Domain: ErrorDomain}
	tests := []struct {
		name    string
		enabled bool
		results map[bool]error // by cacheInference
		calls   []bool
		want    Mapping
	}{
		{"off: never called", false, nil, nil, Mapping{}},
		{"cached", true, map[bool]error{true: nil}, []bool{true}, Mapping{Tried: true, Mapped: true, Cached: true}},
		{"uncached after a cached failure", true, map[bool]error{true: mapFail, false: nil}, []bool{true, false},
			Mapping{Tried: true, Mapped: true}},
		{"both fail", true, map[bool]error{true: mapFail, false: mapFail}, []bool{true, false}, Mapping{Tried: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls []bool
			got := tryMap(tc.enabled, func(cache bool) error {
				calls = append(calls, cache)
				return tc.results[cache]
			})
			require.Equal(t, tc.calls, calls)
			require.Equal(t, tc.want.Tried, got.Tried)
			require.Equal(t, tc.want.Mapped, got.Mapped)
			require.Equal(t, tc.want.Cached, got.Cached)
			failures := 0
			for _, c := range tc.calls {
				if tc.results[c] != nil {
					failures++
				}
			}
			if failures == 0 {
				require.NoError(t, got.Err)
				return
			}
			// Every failure is recorded, and still matches its cause.
			require.ErrorIs(t, got.Err, ErrDevice)
			require.Contains(t, got.Err.Error(), "cacheInference:YES")
			require.Contains(t, got.Err.Error(), "IOSurface map failure")
			if failures == 2 {
				require.Contains(t, got.Err.Error(), "cacheInference:NO")
			}
			require.NotEmpty(t, got.String())
		})
	}
	require.Equal(t, "not mapped (not requested)", Mapping{}.String())
	require.Equal(t, "mapped, with cached inference", Mapping{Tried: true, Mapped: true, Cached: true}.String())
}

func TestChooseAttributes(t *testing.T) {
	inner := map[string]any{KeyNetworkStatusList: []any{"inner"}}
	outer := map[string]any{KeyNetworkStatusList: []any{"outer"}}
	const fromInner, fromOuter = "the inner _ANEModel", "the _ANEInMemoryModel"
	called := false
	outerFn := func() any { called = true; return outer }

	got, from, err := ChooseAttributes(func() any { return inner }, outerFn)
	require.NoError(t, err)
	require.Equal(t, inner, got)
	require.Equal(t, fromInner, from)
	require.False(t, called, "the in-memory model is asked only when the inner model does not serve")

	for _, in := range []func() any{
		nil,                                    // no inner model
		func() any { return nil },              // it has no attributes
		func() any { return map[string]any{} }, // an empty dictionary
		func() any { return "not a dictionary" },
	} {
		got, from, err := ChooseAttributes(in, outerFn)
		require.NoError(t, err)
		require.Equal(t, outer, got)
		require.Equal(t, fromOuter, from)
	}
	_, _, err = ChooseAttributes(func() any { return nil }, func() any { return nil })
	require.ErrorIs(t, err, ErrLayout)
	_, _, err = ChooseAttributes(nil, nil)
	require.ErrorIs(t, err, ErrLayout)
}
