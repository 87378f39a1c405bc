package ane

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	milpkg "github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/shim"
)

// threeOutputs lowers a graph with three outputs of 1, 2 and 3 rows (of 40,
// 32 and 16 elements, so the packed surface's stride is 64) for M4: packed
// by a tree of binary concats into one output surface of 6 rows.
func threeOutputs(t *testing.T) *lower.Program {
	t.Helper()
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, 40})
	u := g.Input("u", dataflow.Shape{3, 16})
	v := g.Input("v", dataflow.Shape{2, 32})
	g.Output("a", g.Add(x, x))
	g.Output("b", g.Mul(v, v))
	g.Output("c", g.Sub(u, u))
	// Without the minimum surface size, which would widen the rows to
	// 4096 elements: the packing alone is under test (SplitOutputs sizes
	// each split surface to ane-m4's minimum).
	m4 := lower.TargetM4
	m4.MinSurfaceBytes = 0
	p, err := lower.Lower(g, m4)
	require.NoError(t, err)
	require.True(t, ConcatPacked(p))
	require.Equal(t, 2, bytes.Count(p.MIL, []byte("concat(")), "three outputs, two binary concats")
	return p
}

func TestSplitOutputs(t *testing.T) {
	p := threeOutputs(t)
	q, err := lower.SplitOutputs(p)
	require.NoError(t, err)
	require.False(t, ConcatPacked(q))
	require.Zero(t, bytes.Count(q.MIL, []byte("concat(")), "the packing concats are gone")
	require.Equal(t, p.Inputs, q.Inputs)
	require.Equal(t, p.InputSurfaces, q.InputSurfaces)
	require.Equal(t, p.Blob, q.Blob)
	require.NotEqual(t, p.Hash, q.Hash)
	require.Len(t, q.OutputSurfaces, 3)
	largest := 0
	for i, s := range q.Outputs {
		require.Equal(t, i, s.Surface)
		require.Zero(t, s.Channel)
		// Each band alone is below ane-m4's 49152 bytes: its rows are
		// widened (1 row: 24576 elements, 2: 12288, 3: 8192).
		rows, stride := lower.SurfaceShape(lower.TargetM4, p.Outputs[i].Rows(), 64)
		require.Equal(t, p.Outputs[i].Rows(), rows)
		require.Equal(t, 49152/(2*rows), stride)
		require.Equal(t, []int{1, rows, 1, stride}, s.DeviceShape)
		require.Equal(t, s.DeviceShape, q.OutputSurfaces[i].Shape)
		largest = max(largest, 2*q.OutputSurfaces[i].Size())
	}
	require.Equal(t, 3, bytes.Count(q.MIL, []byte("_surface = pad(")), "one pad per output surface")
	mp, err := milpkg.Parse(q.MIL)
	require.NoError(t, err)
	fn := mp.Functions[0]
	require.Equal(t, []string{q.OutputSurfaces[0].Name, q.OutputSurfaces[1].Name, q.OutputSurfaces[2].Name}, fn.Outputs)
	for _, op := range fn.Ops {
		require.NotContains(t, op.Outputs[0].Name, "axis", "the concats' parameters went with them")
	}
	// It keeps every rule of the lowering but the one-output-surface one.
	perOutput := lower.TargetM4
	perOutput.MinSurfaceBytes = 0
	perOutput.PackedIO = false
	require.NoError(t, lower.Lint(q, perOutput))
	require.ErrorIs(t, lower.Lint(q, lower.TargetM4), lower.ErrLint)

	// The split program passes the device's checks and binds to a layout
	// reporting the three surfaces by name, in any order.
	require.NoError(t, CheckProgram(q, lower.TargetM4))
	liveOut := func(i int) map[string]any {
		sh := q.OutputSurfaces[i].Shape
		return live(q.OutputSurfaces[i].Name+OutputSuffix, sh[1], sh[3], 2*sh[3])
	}
	outs := []map[string]any{liveOut(2), liveOut(0), liveOut(1)}
	names := []string{outs[0][KeyName].(string), outs[1][KeyName].(string), outs[2][KeyName].(string)}
	l, err := ParseLayout(attrsOf([]map[string]any{live(q.InputSurfaces[0].Name, 6, 64, 128)}, outs,
		[]string{q.InputSurfaces[0].Name}, names, []int{0}, []int{0, 1, 2}))
	require.NoError(t, err)
	b, err := Bind(l, q)
	require.NoError(t, err)
	require.Empty(t, b.Warnings)
	for i, port := range b.Outputs {
		require.Equal(t, q.OutputSurfaces[i].Name+OutputSuffix, port.Tensor.Name)
		require.Equal(t, []Member{{Spec: q.Outputs[i], Arg: i, Row: 0}}, port.Members)
	}
	// The three surfaces differ in size; the request pads them to the
	// largest.
	_, outS := PlanSurfaces(PortTensors(b.Inputs), PortTensors(b.Outputs), SurfaceOptions{PadToLargest: true})
	require.Equal(t, []int{largest, largest, largest}, allocs(outS))

	// Nothing to split: one output, or a surface per output already.
	for _, r := range []*lower.Program{q, nil, {Outputs: p.Outputs[:1], OutputSurfaces: p.OutputSurfaces}} {
		_, err := lower.SplitOutputs(r)
		require.ErrorIs(t, err, lower.ErrUnsupported)
	}
}

// TestCompileFallback drives the fallback with a fake compiler that
// rejects what it is told to, and counts the compiles.
func TestCompileFallback(t *testing.T) {
	packed := threeOutputs(t)
	concatRejected := &Error{Op: "compile", Code: 1, Domain: "com.apple.appleneuralengine.compiler", Desc: "ANECCompile() FAILED",
		Causes: []Cause{{Domain: "com.apple.mlir", Code: 2, Desc: "unsupported op: concat"}}}
	type result struct{ surfaces int }
	fake := func(reject func(p *lower.Program) error) (func(*lower.Program) (result, error), *int) {
		n := 0
		return func(p *lower.Program) (result, error) {
			n++
			if err := reject(p); err != nil {
				return result{}, err
			}
			return result{len(p.OutputSurfaces)}, nil
		}, &n
	}

	// The compiler rejects concat: the split program is compiled instead.
	build, n := fake(func(p *lower.Program) error {
		if bytes.Contains(p.MIL, []byte("concat(")) {
			return concatRejected
		}
		return nil
	})
	r, built, warn, err := compileFallback(packed, build)
	require.NoError(t, err)
	require.Equal(t, 2, *n)
	require.Equal(t, 3, r.surfaces)
	require.Len(t, built.OutputSurfaces, 3)
	require.Contains(t, warn, "one output surface per output")
	require.Contains(t, warn, "unsupported op: concat")

	// A first compile that works is the only one.
	build, n = fake(func(*lower.Program) error { return nil })
	r, built, warn, err = compileFallback(packed, build)
	require.NoError(t, err)
	require.Equal(t, 1, *n)
	require.Same(t, packed, built)
	require.Equal(t, 1, r.surfaces)
	require.Empty(t, warn)

	// Not retried: a load failure, or a compile failure of a program with
	// a single output.
	loadFailed := &Error{Op: "load", Code: CodeProgramLoad, Domain: ErrorDomain}
	build, n = fake(func(*lower.Program) error { return loadFailed })
	_, _, _, err = compileFallback(packed, build)
	require.Same(t, loadFailed, err)
	require.Equal(t, 1, *n)
	single := *packed
	single.Outputs, single.OutputSurfaces = packed.Outputs[:1], []lower.Surface{{Name: "a", Shape: packed.Outputs[0].DeviceShape}}
	build, n = fake(func(*lower.Program) error { return concatRejected })
	_, _, _, err = compileFallback(&single, build)
	require.Same(t, concatRejected, err)
	require.Equal(t, 1, *n)
	require.False(t, RetryUnpacked(&single, concatRejected))
	require.False(t, RetryUnpacked(packed, errors.New("ane: writing model files: disk full")))
	require.True(t, RetryUnpacked(packed, concatRejected))

	// Both fail: once each, and the error carries both.
	other := &Error{Op: "compile", Desc: "ANECCompile() FAILED", Causes: []Cause{{Desc: "pad: unsupported"}}}
	build, n = fake(func(p *lower.Program) error {
		if len(p.OutputSurfaces) == 1 {
			return concatRejected
		}
		return other
	})
	_, _, _, err = compileFallback(packed, build)
	require.Equal(t, 2, *n)
	require.ErrorIs(t, err, ErrDevice)
	require.ErrorIs(t, err, shim.ErrUnsupported)
	require.ErrorContains(t, err, "unsupported op: concat")
	require.ErrorContains(t, err, "pad: unsupported")
	require.ErrorContains(t, err, "one surface per output")
}
