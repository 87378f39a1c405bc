package lower

import (
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
)

// Rules of one engine family that the lowering meets for its target
// (engine.Target): they change no result, only the program's shapes.

// padContraction pads every matmul's contraction to a multiple of
// t.InnerMultiple (on M1 a matmul whose inner dimension is not a multiple
// of 32 returns zeros) by concatenating zeros to both operands along it.
// The added terms are 0·0: the sums, and their rounding, are unchanged.
// The zero constants go to the weight file: weights is its size before
// them (src's tensor constants and the header), and a zero constant that
// would take it past engine.WeightFileLimit is refused before it is built
// (an operand's other axes can make it far larger than the operand's
// row).
func padContraction(src *dataflow.Graph, t Target, weights int64) (*dataflow.Graph, error) {
	mult := t.InnerMultiple
	nodes := src.Nodes()
	zeros := map[string]dataflow.Value{} // one zero constant per shape
	var tooLarge error
	out, err := rebuild(src, func(r *rewriter, n *dataflow.Node, in []dataflow.Value) (dataflow.Value, bool) {
		if tooLarge != nil {
			return dataflow.Value{}, false
		}
		if n.Op != dataflow.OpMatMul {
			return dataflow.Value{}, false
		}
		xs, ys := nodes[n.Inputs[0]].Shape, nodes[n.Inputs[1]].Shape
		xa, ya := len(xs)-1, len(ys)-2 // the contraction axes
		if n.Attrs.TransposeX {
			xa = len(xs) - 2
		}
		if n.Attrs.TransposeY {
			ya = len(ys) - 1
		}
		k := xs[xa]
		pad := (mult - k%mult) % mult
		if pad == 0 {
			return dataflow.Value{}, false
		}
		g := r.dst
		widen := func(v dataflow.Value, shape []int, axis int) dataflow.Value {
			zs := append([]int{}, shape...)
			zs[axis] = pad
			key := fmt.Sprint(zs)
			z, ok := zeros[key]
			if !ok && tooLarge == nil {
				size := dataflow.Shape(zs).Size()
				if weights = satAdd(weights, blobBytes(size)); weights > weightLimit {
					tooLarge = fmt.Errorf("padding matmul node %d's contraction of %d to a multiple of %d needs a zero constant of shape %v: %w",
						n.ID, k, mult, zs, weightError(weights, false, t))
					return dataflow.Value{}
				}
				z = g.Const(r.fresh("contraction_pad"), dataflow.Shape(zs), make([]float64, size))
				zeros[key] = z
			}
			return g.Concat(axis, v, z)
		}
		return g.MatMul(widen(in[0], xs, xa), widen(in[1], ys, ya), n.Attrs.TransposeX, n.Attrs.TransposeY), true
	})
	if tooLarge != nil {
		return nil, tooLarge
	}
	return out, err
}

// legalizeFor runs the passes of t's family rules after Legalize's.
func legalizeFor(g *dataflow.Graph, t Target) (*dataflow.Graph, error) {
	if t.InnerMultiple > 1 {
		var err error
		if g, err = padContraction(g, t, constantBytes(g)); err != nil {
			return nil, fmt.Errorf("lower: pass pad-contraction: %w", err)
		}
	}
	return g, nil
}

// SurfaceShape sizes a packed surface of rows rows of stride elements to
// at least t.MinSurfaceBytes (smaller surfaces are reported to fail to
// evaluate): it widens the rows first, within the spatial limit and the
// row alignment, and adds rows only past that. It returns the surface's
// rows and stride; an empty surface (rows or stride not positive) is
// returned as it is.
func SurfaceShape(t Target, rows, stride int) (int, int) {
	if t.MinSurfaceBytes <= 0 || rows <= 0 || stride <= 0 || 2*rows*stride >= t.MinSurfaceBytes {
		return rows, stride
	}
	need := (t.MinSurfaceBytes + 2*rows - 1) / (2 * rows)
	if w := t.RowLength(need); w <= t.MaxSpatial {
		return rows, w
	}
	a := max(t.RowAlign, 1)
	w := t.MaxSpatial / a * a
	return (t.MinSurfaceBytes + 2*w - 1) / (2 * w), max(w, stride)
}

// sizedSurface is SurfaceShape with the channel limit checked: kind and
// what name the surface in the error.
func sizedSurface(t Target, kind, what string, rows, stride int) (int, int, error) {
	r, s := SurfaceShape(t, rows, stride)
	if r > t.MaxChannels {
		return 0, 0, fmt.Errorf("lower: the %s surface%s needs %d rows to reach target %s's minimum of %d bytes, over its channel limit of %d: %w", kind, what, r, t.Name, t.MinSurfaceBytes, t.MaxChannels, ErrUnsupported)
	}
	return r, s, nil
}
