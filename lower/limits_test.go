package lower

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower/mil"
)

// lowerMeasured lowers g for t and returns the error, the bytes allocated
// meanwhile and the time taken. A panic fails the test (the oversized
// graphs once panicked with "makeslice: len out of range").
func lowerMeasured(t *testing.T, g *dataflow.Graph, target Target) (p *Program, err error, alloc uint64, took time.Duration) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Lower panicked: %v", r)
			}
		}()
		p, err = Lower(g, target)
	}()
	took = time.Since(start)
	runtime.ReadMemStats(&after)
	return p, err, after.TotalAlloc - before.TotalAlloc, took
}

// TestOversizedGraphRefusedBeforeAllocating: a graph with a tensor past
// the target's extents, on any axis, is ErrUnsupported naming the tensor,
// the axis, the size and the limit, and is refused before the passes copy
// its constants or build constants as long as its axes: quickly, with
// little allocated, and never a panic. (Lowering built these first: a
// reduce_sum over 2⁴⁶ elements panicked making its ones vector, one over
// 2²⁴ allocated gigabytes, and every constant was copied by each pass.)
func TestOversizedGraphRefusedBeforeAllocating(t *testing.T) {
	const budget = 64 << 20
	cases := []struct {
		name   string
		target Target
		build  func() *dataflow.Graph
		msg    []string
		// built: the builder itself refuses the graph (dataflow wraps
		// ErrShape), and Lower returns that error, still quickly.
		built bool
	}{
		{"reduced axis of 2^46", TargetSim, func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("s", g.ReduceSum(g.Input("x", dataflow.Shape{1, 1 << 46}), []int{-1}, true))
			return g
		}, []string{`input "x"`, "axis 1", "70368744177664", "16384", "split"}, false},
		{"reduced axis of 2^24", TargetM4, func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("s", g.ReduceSum(g.Input("x", dataflow.Shape{4, 1 << 24}), []int{-1}, true))
			return g
		}, []string{`input "x"`, "axis 1", "16777216", "65536", "ane-m4"}, false},
		{"constant past the row", TargetSim, func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("y", g.Relu(g.Const("w", dataflow.Shape{1, 1 << 22}, make([]float64, 1<<22))))
			return g
		}, []string{`const "w"`, "axis 1", "4194304", "16384"}, false},
		{"constant past the channels", TargetSim, func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("y", g.Relu(g.Const("w", dataflow.Shape{1 << 17, 32}, make([]float64, 1<<22))))
			return g
		}, []string{`const "w"`, "axis 0", "131072", "65536", "any axis but the last"}, false},
		{"matvec constant past the row", TargetSim, func() *dataflow.Graph {
			// The CLI's matvec at -m 65536: y = x·Aᵀ, y's row 65536 long.
			g := dataflow.New()
			a := g.Const("A", dataflow.Shape{1 << 16, 64}, make([]float64, 1<<22))
			g.Output("y", g.MatMul(g.Input("x", dataflow.Shape{1, 64}), a, false, true))
			return g
		}, []string{`output "y"`, "65536", "16384"}, false},
		{"intermediate past the channels", TargetSim, func() *dataflow.Graph {
			g := dataflow.New()
			x := g.Input("x", dataflow.Shape{4096, 32})
			col := g.Reshape(x, dataflow.Shape{1 << 17, 1})
			g.Output("y", g.Reshape(g.Relu(col), dataflow.Shape{4096, 32}))
			return g
		}, []string{"node 1 (reshape)", "axis 0", "131072", "65536"}, false},
		{"rows that overflow", TargetSim, func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("y", g.Relu(g.Input("x", dataflow.Shape{1 << 16, 1 << 16, 1 << 16, 1 << 16, 1})))
			return g
		}, []string{`"x"`, "more elements than an int counts"}, true},
		{"constant whose size overflows", TargetM4, func() *dataflow.Graph {
			g := dataflow.New()
			g.Output("y", g.Relu(g.Const("w", dataflow.Shape{1 << 16, 1 << 16, 1 << 16, 1 << 16}, nil)))
			return g
		}, []string{`"w"`, "more elements than an int counts"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.build()
			if c.built {
				require.ErrorIs(t, g.Err(), dataflow.ErrShape)
			} else {
				require.NoError(t, g.Err())
			}
			_, err, alloc, took := lowerMeasured(t, g, c.target)
			require.Less(t, alloc, uint64(budget), "bytes allocated before refusing: %v", err)
			require.Less(t, took, 2*time.Second)
			require.Error(t, err)
			if c.built {
				require.ErrorIs(t, err, dataflow.ErrShape)
			} else {
				require.True(t, errors.Is(err, ErrUnsupported), "%v", err)
			}
			for _, m := range c.msg {
				require.Contains(t, err.Error(), m)
			}
		})
	}
}

// TestWeightFileLimit: constants whose weight file would pass
// engine.WeightFileLimit are refused with ErrUnsupported, before the blob
// (or the passes' copies) are built when the graph's own constants already pass
// it, and after legalization, exactly, when only the constants the passes
// add do. The limit is lowered to sizes a test can afford.
func TestWeightFileLimit(t *testing.T) {
	defer func(l int64) { weightLimit = l }(weightLimit)

	// The reported probe, a 65536×16384 matvec constant on ane-m4
	// (within its axes), is 2³¹ bytes of fp16 and so, with the file's
	// header and record, one weight file past the limit: refused before
	// the passes copy its 8 GiB of float64 (it took 24 GB and 100 s).
	require.Greater(t, mil.BlobHeaderBytes+blobBytes(65536*16384), int64(engine.WeightFileLimit))

	// A 1024×1024 matvec constant is 2 MiB of fp16: over a 1 MiB limit
	// before anything is built.
	weightLimit = 1 << 20
	g := dataflow.New()
	a := g.Const("A", dataflow.Shape{1024, 1024}, ramp(1024*1024))
	g.Output("y", g.MatMul(g.Input("x", dataflow.Shape{1, 1024}), a, false, true))
	_, err, alloc, _ := lowerMeasured(t, g, TargetSim)
	require.ErrorIs(t, err, ErrUnsupported)
	require.Contains(t, err.Error(), "weight file of at least 2097280 bytes")
	require.Contains(t, err.Error(), "limit of 1048576 bytes")
	require.Less(t, alloc, uint64(1<<20), "the constant is 8 MB of float64: it must not be copied")

	// Used both ways, the constant becomes two conv weights: the graph's
	// constants fit, the legalized graph's do not.
	g = dataflow.New()
	w := g.Const("w", dataflow.Shape{64, 64}, ramp(64*64))
	x := g.Input("x", dataflow.Shape{1, 64})
	g.Output("y", g.Add(g.MatMul(x, w, false, false), g.MatMul(x, w, false, true)))
	weightLimit = mil.BlobHeaderBytes + blobBytes(64*64)
	unfilled := TargetSim // no surface fill in the blob: the two weights alone
	unfilled.MinSurfaceBytes = 0
	_, err = Lower(g, unfilled)
	require.ErrorIs(t, err, ErrUnsupported)
	require.Contains(t, err.Error(), fmt.Sprintf("weight file of %d bytes", mil.BlobHeaderBytes+2*blobBytes(64*64)))

	// The size checked is exactly the blob's, surface fill included.
	for _, target := range []Target{TargetSim, TargetM1, TargetM5} {
		weightLimit = engine.WeightFileLimit
		p, err := Lower(everyOp(t), target)
		require.NoError(t, err)
		weightLimit = int64(len(p.Blob))
		q, err := Lower(everyOp(t), target)
		require.NoError(t, err, target.Name)
		require.Equal(t, p.Hash, q.Hash)
		weightLimit--
		_, err = Lower(everyOp(t), target)
		require.ErrorIs(t, err, ErrUnsupported, target.Name)
	}

	// M1's contraction padding adds zero constants: one past the limit
	// is refused before it is built.
	weightLimit = 1 << 20
	g = dataflow.New()
	g.Output("y", g.MatMul(g.Input("a", dataflow.Shape{1, 32768, 33}), g.Input("b", dataflow.Shape{1, 33, 8}), false, false))
	_, err, alloc, _ = lowerMeasured(t, g, TargetM1)
	require.ErrorIs(t, err, ErrUnsupported)
	require.Contains(t, err.Error(), "zero constant of shape [1 32768 31]")
	require.Less(t, alloc, uint64(8<<20))
}

// TestCheckShapesNoStricter: the checks before legalization refuse only
// graphs that the checks after it refuse too, so that they change no
// program. The cases are the edges: a constant whose last axis is a
// contraction moved into a conv weight's channels, and a dead oversized
// constant.
func TestCheckShapesNoStricter(t *testing.T) {
	graphs := map[string]func() *dataflow.Graph{
		"transposed contraction": func() *dataflow.Graph {
			g := dataflow.New()
			w := g.Const("w", dataflow.Shape{8, 20000}, ramp(8*20000))
			g.Output("y", g.MatMul(g.Input("x", dataflow.Shape{20000, 4}), w, true, true))
			return g
		},
		"dead constant": func() *dataflow.Graph {
			g := dataflow.New()
			g.Relu(g.Const("w", dataflow.Shape{1, 20000}, ramp(20000)))
			g.Output("y", g.Relu(g.Input("x", dataflow.Shape{2, 32})))
			return g
		},
	}
	for name, build := range graphs {
		for _, target := range []Target{TargetSim, TargetM1} {
			g := build()
			pre := checkShapes(g, target)
			_, post := lowerChecked(g, target) // Lower without checkShapes
			if pre != nil {
				require.Error(t, post, "%s on %s: refused only by the new checks: %v", name, target.Name, pre)
			}
			_, err := Lower(g, target)
			require.Equal(t, post == nil, err == nil, "%s on %s: %v / %v", name, target.Name, post, err)
		}
	}
}
