package lower

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower/mil"
)

// The weight file's size is checked against engine.WeightFileLimit, counted
// as the whole file Lower writes (mil.BlobWriter's layout): its header and,
// for every tensor constant, a record and its fp16 data padded to the
// alignment.

// weightLimit is engine.WeightFileLimit; tests lower it to exercise the
// check at a size they can afford.
var weightLimit int64 = engine.WeightFileLimit

// blobBytes is the size in the weight file of one fp16 tensor of n ≥ 0
// elements (n saturates at math.MaxInt, and so does the result).
func blobBytes(n int) int64 {
	if int64(n) > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return mil.BlobEntryBytes(2 * int64(n))
}

// satMul is a·b for a, b ≥ 0, or math.MaxInt when that overflows.
func satMul(a, b int) int {
	if b != 0 && a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

// satAdd is a+b for a, b ≥ 0, or math.MaxInt64 when that overflows.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// liveNodes marks the nodes g's outputs depend on; inputs precede their
// readers, so one backward sweep suffices.
func liveNodes(g *dataflow.Graph) []bool {
	nodes := g.Nodes()
	live := make([]bool, len(nodes))
	for _, o := range g.Outputs() {
		live[o.Node] = true
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if live[i] {
			for _, id := range nodes[i].Inputs {
				live[id] = true
			}
		}
	}
	return live
}

// outputNames maps each output node to the first output name it has, for
// tensorLabel.
func outputNames(g *dataflow.Graph) map[int]string {
	names := map[int]string{}
	for _, o := range g.Outputs() {
		if _, ok := names[o.Node]; !ok {
			names[o.Node] = o.Name
		}
	}
	return names
}

// checkShapes refuses, before legalization builds anything, a graph that
// the target cannot hold: a tensor of too high a rank, an axis past the
// target's extent, an input or output past its channel limit, or
// constants past the weight file's limit (engine.WeightFileLimit). It reads
// shapes only, so its time and memory are linear in the number of nodes
// whatever their sizes: the passes that follow copy every constant and
// build constants as long as a reduced axis, and the emitter builds the
// blob, so none of them may see a graph that is refused anyway. Dead nodes
// are skipped (legalization drops them), inputs never are (they are the
// program's signature).
//
// Every rule here is also applied after legalization (by checkLimits, the
// pad-contraction pass and the emitter), to tensors that keep these
// shapes or the constants' elements, so checking first changes which step
// refuses a graph, never whether, and no program changes. The one
// exception is kept so: a constant used only as a transposed matmul
// operand (contractedOnly), whose last axis becomes conv weight channels.
func checkShapes(g *dataflow.Graph, t Target) error {
	nodes := g.Nodes()
	live := liveNodes(g)
	outName := outputNames(g)
	contracted := contractedOnly(nodes, live)
	weights := int64(mil.BlobHeaderBytes)
	for _, n := range nodes {
		if !live[n.ID] && n.Op != dataflow.OpInput {
			continue
		}
		if err := checkShape(n, t, tensorLabel(n, outName), !contracted[n.ID]); err != nil {
			return err
		}
		// Every live tensor constant reaches the weight file at least
		// once with as many elements (the conv rewrite replaces a matmul
		// operand by its transpose), so this sum is a lower bound on the
		// blob, which emit checks exactly.
		if n.Op == dataflow.OpConst && len(n.Shape) > 0 {
			weights = satAdd(weights, blobBytes(n.Shape.Size()))
		}
	}
	if weights > weightLimit {
		return weightError(weights, false, t)
	}
	for _, id := range g.Inputs() {
		if _, err := ioSpec(t, nodes[id].Name, nodes[id].Shape); err != nil {
			return err
		}
	}
	for _, o := range g.Outputs() {
		if _, err := ioSpec(t, o.Name, nodes[o.Node].Shape); err != nil {
			return err
		}
	}
	return nil
}

// tensorLabel names a node in an error: an input or constant by its name,
// another node by its ID and op, and the output it is, if any.
func tensorLabel(n *dataflow.Node, outName map[int]string) string {
	switch {
	case n.Op == dataflow.OpInput || n.Op == dataflow.OpConst:
		if n.Name == "" {
			return fmt.Sprintf("unnamed %s (node %d)", n.Op, n.ID)
		}
		return fmt.Sprintf("%s %q", n.Op, n.Name)
	case outName[n.ID] != "":
		return fmt.Sprintf("node %d (%s, output %q)", n.ID, n.Op, outName[n.ID])
	case n.Name != "":
		return fmt.Sprintf("node %d (%s %q)", n.ID, n.Op, n.Name)
	}
	return fmt.Sprintf("node %d (%s)", n.ID, n.Op)
}

// contractedOnly marks the constants whose every live use is as the
// transposed right operand of a matmul of two matrices: their last axis
// is the contraction, which the const-matmul-to-conv rewrite moves to the
// conv weight's input channels, so it is no device row, and the checks
// after legalization decide it (with the matmul's other operand).
func contractedOnly(nodes []*dataflow.Node, live []bool) []bool {
	only := make([]bool, len(nodes))
	other := make([]bool, len(nodes))
	for _, m := range nodes {
		if !live[m.ID] {
			continue
		}
		for i, id := range m.Inputs {
			if m.Op == dataflow.OpMatMul && i == 1 && m.Attrs.TransposeY && len(nodes[m.Inputs[0]].Shape) == 2 {
				only[id] = true
			} else {
				other[id] = true
			}
		}
	}
	for i, n := range nodes {
		only[i] = only[i] && !other[i] && n.Op == dataflow.OpConst && len(n.Shape) == 2
	}
	return only
}

// checkShape checks one tensor's rank and every axis against t: the last
// axis is a device row (at most MaxSpatial elements; checked when row is
// set), every other axis at most MaxChannels — the largest extent the
// engine takes on any axis but the last (docs/ENGINE.md §5: channels ≤
// 65536, height ≤ 16384).
func checkShape(n *dataflow.Node, t Target, what string, row bool) error {
	s := n.Shape
	if len(s) > t.MaxRank {
		return fmt.Errorf("lower: %s: rank %d of shape %v exceeds target %s's limit of %d; reshape it to at most %d axes: %w",
			what, len(s), s, t.Name, t.MaxRank, t.MaxRank, ErrUnsupported)
	}
	for i, d := range s {
		if i == len(s)-1 {
			if row && d > t.MaxSpatial {
				return fmt.Errorf("lower: %s: last dimension %d (axis %d) of shape %v exceeds target %s's limit of %d, one device row; split the tensor along that axis into pieces of at most %d, or move its extent to another axis: %w",
					what, d, i, s, t.Name, t.MaxSpatial, t.MaxSpatial, ErrUnsupported)
			}
			continue
		}
		if d > t.MaxChannels {
			return fmt.Errorf("lower: %s: axis %d of shape %v is %d, over target %s's limit of %d for any axis but the last; split the tensor along that axis, or move its extent to the last axis: %w",
				what, i, s, d, t.Name, t.MaxChannels, ErrUnsupported)
		}
	}
	return nil
}

// weightError reports a weight file past weightLimit; exact says whether
// bytes is its size or, before legalization, a lower bound.
func weightError(bytes int64, exact bool, t Target) error {
	size := fmt.Sprintf("%d bytes", bytes)
	if bytes == math.MaxInt64 {
		size = "over 2⁶³ bytes"
	} else if !exact {
		size = "at least " + size
	}
	return fmt.Errorf("lower: the graph's tensor constants need a weight file of %s of fp16, over the engine's limit of %d bytes (target %s); split the work into several programs, or pass the largest operands as inputs instead of constants: %w",
		size, weightLimit, t.Name, ErrUnsupported)
}

// weightFileBytes is the exact size of the weight file emit writes for the
// legalized graph g and the program's layout: the header, every tensor
// constant, and the zero rows that bring packed output surfaces to the
// target's minimum size (surfaceFill).
func weightFileBytes(g *dataflow.Graph, prog *Program) int64 {
	total := constantBytes(g)
	for si := range prog.OutputSurfaces {
		if extra := surfaceFill(prog, si); extra > 0 {
			total = satAdd(total, blobBytes(satMul(extra, prog.OutputSurfaces[si].Stride())))
		}
	}
	return total
}

// constantBytes is the size of a weight file holding g's tensor constants.
func constantBytes(g *dataflow.Graph) int64 {
	total := int64(mil.BlobHeaderBytes)
	for _, n := range g.Nodes() {
		if n.Op == dataflow.OpConst && len(n.Shape) > 0 {
			total = satAdd(total, blobBytes(n.Shape.Size()))
		}
	}
	return total
}
