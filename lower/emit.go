package lower

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower/mil"
)

// buildInfo is the header every program carries; hand-written programs with
// these values compile on hardware (docs/ENGINE.md §1).
var buildInfo = []mil.KV{
	{Key: "coremlc-component-MIL", Value: "3510.2.1"},
	{Key: "coremlc-version", Value: "3505.4.1"},
	{Key: "coremltools-component-milinternal", Value: ""},
	{Key: "coremltools-version", Value: "9.0"},
}

// emitter writes one MIL function for a legalized graph.
type emitter struct {
	t     Target
	nodes []*dataflow.Node
	fn    *mil.Function
	blob  *mil.BlobWriter
	vars  []string // MIL variable holding each node's value
	used  map[string]bool
	seq   int
	// direct names the node of a lone output already in its surface's
	// layout: its op is emitted under the output's name and writes the
	// surface itself, with no identity reshape.
	direct map[int]string
}

// planDirect fills direct: for each surface holding one output, of a
// compute node that is no other output, whose shape is the band's
// unpadded rows [1, C, 1, S].
func (e *emitter) planDirect(g *dataflow.Graph, prog *Program) {
	outs := g.Outputs()
	count := map[int]int{}
	for _, o := range outs {
		count[o.Node]++
	}
	e.direct = map[int]string{}
	for si := range prog.OutputSurfaces {
		idx := onSurface(prog.Outputs, si)
		if len(idx) != 1 {
			continue
		}
		o, spec := outs[idx[0]], prog.Outputs[idx[0]]
		if count[o.Node] == 1 && spec.Stride() == spec.RowLen() &&
			dataflow.Shape(e.nodes[o.Node].Shape).Equal(dataflow.Shape{1, spec.Rows(), 1, spec.RowLen()}) {
			e.direct[o.Node] = o.Name
		}
	}
}

func (e *emitter) fresh(base string) string {
	name := base
	for e.used[name] {
		e.seq++
		name = fmt.Sprintf("%s_%d", base, e.seq)
	}
	e.used[name] = true
	return name
}

// typ is the MIL type of a logical fp16 value: the scalar spelling at rank 0.
func typ(s dataflow.Shape) mil.Type {
	if len(s) == 0 {
		return mil.Scalar("fp16")
	}
	return mil.TensorType("fp16", s...)
}

// op appends `out = kind(args)[name = out]` and returns out.
func (e *emitter) op(t mil.Type, out, kind string, args ...mil.Arg) string {
	e.fn.Ops = append(e.fn.Ops, &mil.Op{
		Outputs: []mil.Var{{Type: t, Name: out}},
		Kind:    kind,
		Args:    args,
		Attrs:   []mil.Arg{{Name: "name", Value: mil.String(out)}},
	})
	return out
}

// constant appends a named const holding lit and returns its name.
func (e *emitter) constant(base string, lit *mil.Literal) string {
	name := e.fresh(base)
	e.fn.Ops = append(e.fn.Ops, &mil.Op{
		Outputs: []mil.Var{{Type: lit.Type, Name: name}},
		Kind:    "const",
		Attrs:   []mil.Arg{{Name: "name", Value: mil.String(name)}, {Name: "val", Value: lit}},
	})
	return name
}

func ref(name string) *mil.Ref { return &mil.Ref{Name: name} }

func arg(name string, v mil.Expr) mil.Arg { return mil.Arg{Name: name, Value: v} }

// fp16Values checks that every value fits fp16's normal range (or is
// exactly zero) and returns them rounded (fp16Element).
func fp16Values(what string, data []float64) ([]float64, error) {
	out := make([]float64, len(data))
	for i, v := range data {
		h, err := fp16Element(what, i, v)
		if err != nil {
			return nil, err
		}
		out[i] = h.Float64()
	}
	return out, nil
}

// fp16Element is element i of a constant rounded to fp16, or an error
// wrapping ErrRange when v is beyond fp16's range or a nonzero value that
// rounds to a subnormal or zero. Subnormal constants are refused: whether
// the engine flushes them is unmeasured, so no program depends on them; a
// nonzero value that rounds to zero would silently drop a term.
func fp16Element(what string, i int, v float64) (fp16.Bits, error) {
	h := fp16.FromFloat64(v)
	switch {
	case math.IsNaN(v) || h.IsInf():
		return 0, fmt.Errorf("lower: %s element %d is %g, beyond fp16's range ±%g: %w", what, i, v, fp16.MaxValue, ErrRange)
	case v != 0 && h&0x7c00 == 0: // a zero exponent: subnormal or zero
		return 0, fmt.Errorf("lower: %s element %d is %g, below fp16's normal range (%g) and so subnormal or zero on the device: fold a power-of-two scale elsewhere or drop the term: %w", what, i, v, fp16.MinNormal, ErrRange)
	}
	return h, nil
}

// weightBytes encodes a tensor constant as fp16 in the weight file's
// byte order, in one pass. Elements below fp16's normal range are flushed
// to zero when that is below the tensor's own resolution — its largest
// magnitude is at least 2⁻³, so every flushed element is under u = 2⁻¹¹
// of it — and refused otherwise (the tensor should have been scaled). The
// program then computes the same thing whether or not an engine flushes
// subnormals. The other elements are fp16Element's.
func weightBytes(what string, data []float64) ([]byte, error) {
	peak := 0.0
	for _, v := range data {
		peak = math.Max(peak, math.Abs(v))
	}
	flushable := peak >= fp16.MinNormal*0x1p11
	out := make([]byte, 2*len(data))
	for i, v := range data {
		if flushable && math.Abs(v) < fp16.MinNormal {
			v = 0
		}
		h, err := fp16Element(what, i, v)
		if err != nil {
			return nil, err
		}
		binary.LittleEndian.PutUint16(out[2*i:], uint16(h))
	}
	return out, nil
}

func (e *emitter) emitConst(n *dataflow.Node) error {
	base := n.Name
	if base == "" {
		base = fmt.Sprintf("c%d", n.ID)
	}
	what := fmt.Sprintf("constant %q", base)
	// Scalars are written inline, as every public program writes them;
	// every tensor goes to the weight file (no public program on the
	// engine uses an inline fp16 tensor literal).
	var lit *mil.Literal
	if len(n.Shape) == 0 {
		vals, err := fp16Values(what, n.Data)
		if err != nil {
			return err
		}
		lit = mil.FP16(vals[0])
	} else {
		data, err := weightBytes(what, n.Data)
		if err != nil {
			return err
		}
		off := e.blob.Add(mil.BlobFP16, data)
		lit = mil.BlobTensor(typ(n.Shape), WeightPath, off)
	}
	if n.Name != "" {
		// User names were reserved up front; claim this one exactly.
		e.fn.Ops = append(e.fn.Ops, &mil.Op{
			Outputs: []mil.Var{{Type: lit.Type, Name: n.Name}},
			Kind:    "const",
			Attrs:   []mil.Arg{{Name: "name", Value: mil.String(n.Name)}, {Name: "val", Value: lit}},
		})
		e.vars[n.ID] = n.Name
		return nil
	}
	e.vars[n.ID] = e.constant(base, lit)
	return nil
}

// declareInputs names the input surfaces and declares them as main's
// inputs. A surface that is exactly one input's layout takes that input's
// name; a packed surface of several takes a fresh name.
func (e *emitter) declareInputs(prog *Program) {
	for i := range prog.InputSurfaces {
		surf := &prog.InputSurfaces[i]
		band := onSurface(prog.Inputs, i)
		if len(band) == 1 && prog.Inputs[band[0]].Rows() == surf.Rows() && prog.Inputs[band[0]].RowLen() == surf.Stride() || !e.t.PackedIO {
			surf.Name = prog.Inputs[band[0]].Name
		} else {
			surf.Name = e.fresh("input")
		}
		e.fn.Inputs = append(e.fn.Inputs, mil.Var{Type: mil.TensorType("fp16", surf.Shape...), Name: surf.Name})
	}
}

// onSurface returns the indices of the specs laid out on surface si, in
// order.
func onSurface(specs []IOSpec, si int) []int {
	var idx []int
	for i, s := range specs {
		if s.Surface == si {
			idx = append(idx, i)
		}
	}
	return idx
}

// emitInput recovers a logical input from its surface: slice its band
// (channel offset, never a width offset: see Target.WidthSliceClamp),
// dropping the row padding, then reshape to the logical shape. The last
// op takes the input's name.
func (e *emitter) emitInput(n *dataflow.Node, spec IOSpec, surfaces []Surface) {
	surf := surfaces[spec.Surface]
	c, rowLen := spec.Rows(), spec.RowLen()
	whole := spec.Channel == 0 && c == surf.Rows() && rowLen == surf.Stride()
	reshape := !dataflow.Shape(n.Shape).Equal(dataflow.Shape{1, c, 1, rowLen})
	v := surf.Name
	if !whole {
		out := n.Name
		if reshape {
			out = e.fresh(n.Name + "_band")
		}
		v = e.op(mil.TensorType("fp16", 1, c, 1, rowLen), out, "slice_by_size",
			arg("begin", ref(e.constant(out+"_begin", mil.Int32s(0, spec.Channel, 0, 0)))),
			arg("size", ref(e.constant(out+"_size", mil.Int32s(1, c, 1, rowLen)))),
			arg("x", ref(v)))
	}
	if reshape {
		out := n.Name
		if v == n.Name {
			out = e.fresh(n.Name + "_logical")
		}
		v = e.reshape(v, out, n.Shape)
	}
	e.vars[n.ID] = v
}

func (e *emitter) reshape(x, out string, shape dataflow.Shape) string {
	s := make([]int, len(shape))
	copy(s, shape)
	return e.op(typ(shape), out, "reshape",
		arg("shape", ref(e.constant(out+"_shape", mil.Int32s(s...)))),
		arg("x", ref(x)))
}

// band lays a logical value out as rows [1, C, 1, S] of its surface,
// padding each row with zeros past the logical row length; the result is
// named out.
func (e *emitter) band(v string, shape dataflow.Shape, spec IOSpec, out string) string {
	c, rowLen, stride := spec.Rows(), spec.RowLen(), spec.Stride()
	if stride == rowLen {
		if v == out {
			return out // computed in the band's layout under its name (see direct)
		}
		return e.reshape(v, out, dataflow.Shape{1, c, 1, rowLen})
	}
	if !shape.Equal(dataflow.Shape{1, c, 1, rowLen}) {
		v = e.reshape(v, e.fresh(out+"_rows"), dataflow.Shape{1, c, 1, rowLen})
	}
	return e.op(mil.TensorType("fp16", 1, c, 1, stride), out, "pad",
		arg("constant_val", ref(e.constant(out+"_pad_value", mil.FP16(0)))),
		arg("mode", ref(e.constant(out+"_pad_mode", mil.String("constant")))),
		arg("pad", ref(e.constant(out+"_pad", mil.Int32s(0, 0, 0, 0, 0, 0, 0, stride-rowLen)))),
		arg("x", ref(v)))
}

// emitOutputs writes the output surfaces: a lone output is its surface,
// under its own name; packed outputs are stacked along the channel axis by
// a tree of binary concats.
func (e *emitter) emitOutputs(g *dataflow.Graph, prog *Program) {
	outs := g.Outputs()
	for si := range prog.OutputSurfaces {
		surf := &prog.OutputSurfaces[si]
		idx := onSurface(prog.Outputs, si)
		if surfaceFill(prog, si) < 0 {
			o := outs[idx[0]]
			surf.Name = e.band(e.vars[o.Node], e.nodes[o.Node].Shape, prog.Outputs[idx[0]], o.Name)
		} else {
			vals := make([]string, len(idx))
			shapes := make([][]int, len(idx))
			for j, i := range idx {
				o := outs[i]
				vals[j] = e.band(e.vars[o.Node], e.nodes[o.Node].Shape, prog.Outputs[i], e.fresh(o.Name+"_band"))
				shapes[j] = []int{1, prog.Outputs[i].Rows(), 1, surf.Stride()}
			}
			if extra := surfaceFill(prog, si); extra > 0 {
				// Rows that only bring the surface to the target's
				// minimum size: zeros, from the blob.
				shape := []int{1, extra, 1, surf.Stride()}
				off := e.blob.Add(mil.BlobFP16, mil.FP16Data(make([]float64, extra*surf.Stride())))
				vals = append(vals, e.constant("surface_fill", mil.BlobTensor(mil.TensorType("fp16", shape...), WeightPath, off)))
				shapes = append(shapes, shape)
			}
			surf.Name = e.concatTree(vals, shapes, 1, e.fresh("output"))
		}
		e.fn.Outputs = append(e.fn.Outputs, surf.Name)
	}
}

// surfaceFill is the number of zero rows emitOutputs adds to output
// surface si to bring it to the target's minimum size, or −1 when the
// surface is one output's band and is written directly.
func surfaceFill(prog *Program, si int) int {
	idx := onSurface(prog.Outputs, si)
	used := 0
	for _, i := range idx {
		used += prog.Outputs[i].Rows()
	}
	if len(idx) == 1 && used == prog.OutputSurfaces[si].Rows() {
		return -1
	}
	return prog.OutputSurfaces[si].Rows() - used
}

// concatTree concatenates vals (of the given shapes) along axis with
// binary concats only — the engine's compiler takes exactly two inputs on
// some routes — and names the result out. Every concat copies all it
// joins, so the tree is the one, among those keeping vals' order, that
// copies the fewest elements (concatSplits): a large output joins the
// rest once, not once per level of a balanced tree.
func (e *emitter) concatTree(vals []string, shapes [][]int, axis int, out string) string {
	size := make([]int, len(shapes))
	for i, s := range shapes {
		size[i] = 1
		for _, d := range s {
			size[i] *= d
		}
	}
	return e.concatRange(vals, shapes, axis, out, concatSplits(size), 0, len(vals))
}

// concatRange emits the tree of vals[i:j] that split chose.
func (e *emitter) concatRange(vals []string, shapes [][]int, axis int, out string, split [][]int, i, j int) string {
	if j-i == 1 {
		return vals[i]
	}
	m := split[i][j]
	left, right := vals[i], vals[m]
	if m-i > 1 {
		left = e.concatRange(vals, shapes, axis, e.fresh(out+"_l"), split, i, m)
	}
	if j-m > 1 {
		right = e.concatRange(vals, shapes, axis, e.fresh(out+"_r"), split, m, j)
	}
	shape := append([]int{}, shapes[i]...)
	shape[axis] = 0
	for _, s := range shapes[i:j] {
		shape[axis] += s[axis]
	}
	return e.op(mil.TensorType("fp16", shape...), out, "concat",
		arg("axis", ref(e.constant(out+"_axis", mil.Int32(axis)))),
		arg("interleave", ref(e.constant(out+"_interleave", mil.Bool(false)))),
		arg("values", &mil.Tuple{Elems: []mil.Expr{ref(left), ref(right)}}))
}

// concatSplits is the binary tree over leaves of the given sizes, in
// order, whose concats copy the fewest elements (each concat copies the
// sum of its leaves): split[i][j] is where the concat of leaves i…j−1
// divides them. Interval dynamic programming, O(k³) for k leaves (a
// program has a handful of outputs); ties go to the middle-most split.
func concatSplits(size []int) [][]int {
	k := len(size)
	pre := make([]int, k+1)
	for i, s := range size {
		pre[i+1] = pre[i] + s
	}
	cost := make([][]int, k+1)
	split := make([][]int, k+1)
	for i := range cost {
		cost[i] = make([]int, k+1)
		split[i] = make([]int, k+1)
	}
	for w := 2; w <= k; w++ {
		for i := 0; i+w <= k; i++ {
			j := i + w
			best, at := -1, 0
			for m := i + 1; m < j; m++ {
				c := cost[i][m] + cost[m][j]
				mid := (i + j + 1) / 2
				if best < 0 || c < best || (c == best && abs(m-mid) < abs(at-mid)) {
					best, at = c, m
				}
			}
			cost[i][j] = best + pre[j] - pre[i]
			split[i][j] = at
		}
	}
	return split
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// ints converts to the int slice of an int32 literal.
func ints(xs []int) *mil.Literal { return mil.Int32s(xs...) }

// emitOp writes the MIL for one compute node.
func (e *emitter) emitOp(n *dataflow.Node) error {
	c, ok := CapabilityOf(n.Op)
	if !ok {
		return fmt.Errorf("lower: node %d: op %q has no capability entry: %w", n.ID, n.Op, ErrUnsupported)
	}
	switch c.StatusOn(e.t.Name) {
	case Rejected:
		return fmt.Errorf("lower: node %d: op %q is not supported on target %s (%s): %w", n.ID, n.Op, e.t.Name, c.Notes, ErrUnsupported)
	case Decomposed:
		return fmt.Errorf("lower: node %d: op %q should have been rewritten by pass %s: %w", n.ID, n.Op, c.Via, ErrUnsupported)
	}
	out, ok := e.direct[n.ID] // reserved with the outputs' names
	switch {
	case ok:
	case n.Name != "" && n.Op != dataflow.OpInput && n.Op != dataflow.OpConst:
		out = e.fresh(n.Name)
	default:
		out = e.fresh(fmt.Sprintf("v%d", n.ID))
	}
	in := func(i int) mil.Expr { return ref(e.vars[n.Inputs[i]]) }
	a := n.Attrs
	t := typ(n.Shape)
	k := func(suffix string, lit *mil.Literal) mil.Expr { return ref(e.constant(out+"_"+suffix, lit)) }
	if operands := dataflow.ElementwiseArity(n.Op); operands > 0 {
		// An elementwise op: its registry entry's MIL op on its
		// constant arguments, then x (and y).
		var args []mil.Arg
		if c.args != nil {
			for _, ca := range c.args(a) {
				args = append(args, arg(ca.name, k(ca.name, ca.lit)))
			}
		}
		for i, name := range []string{"x", "y"}[:operands] {
			args = append(args, arg(name, in(i)))
		}
		e.op(t, out, c.MIL, args...)
		e.vars[n.ID] = out
		return nil
	}
	switch n.Op {
	case dataflow.OpMatMul:
		e.op(t, out, "matmul",
			arg("transpose_x", k("transpose_x", mil.Bool(a.TransposeX))),
			arg("transpose_y", k("transpose_y", mil.Bool(a.TransposeY))),
			arg("x", in(0)), arg("y", in(1)))
	case dataflow.OpConv2D:
		cv := a.Conv
		e.op(t, out, "conv",
			arg("dilations", k("dilations", ints(cv.Dilations[:]))),
			arg("groups", k("groups", mil.Int32(cv.Groups))),
			arg("pad", k("pad", ints(cv.Pads[:]))),
			arg("pad_type", k("pad_type", mil.String("custom"))),
			arg("strides", k("strides", ints(cv.Strides[:]))),
			arg("weight", in(1)),
			arg("x", in(0)))
	case dataflow.OpReduceSum, dataflow.OpReduceMean, dataflow.OpReduceMax:
		e.op(t, out, c.MIL,
			arg("axes", k("axes", ints(a.Axes))),
			arg("keep_dims", k("keep_dims", mil.Bool(a.KeepDims))),
			arg("x", in(0)))
	case dataflow.OpSoftmax:
		e.op(t, out, "softmax", arg("axis", k("axis", mil.Int32(a.Axis))), arg("x", in(0)))
	case dataflow.OpLayerNorm:
		args := []mil.Arg{arg("axes", k("axes", ints(a.Axes)))}
		var gamma, beta mil.Expr
		for i := 1; i < len(n.Inputs); i++ {
			if e.nodes[n.Inputs[i]].Op != dataflow.OpConst {
				return fmt.Errorf("lower: node %d: layer_norm's gamma and beta must be constants on the device: %w", n.ID, ErrUnsupported)
			}
		}
		if a.HasGamma {
			gamma = in(1)
		}
		if a.HasBeta {
			beta = in(len(n.Inputs) - 1)
		}
		if beta != nil {
			args = append(args, arg("beta", beta))
		}
		if eps := a.Epsilon; eps < 0 || eps != 0 && eps < fp16.MinNormal || eps > fp16.MaxValue {
			return fmt.Errorf("lower: node %d: layer_norm epsilon %g is outside fp16's normal range: use 0 or a value in [2⁻¹⁴ ≈ 6.1e-5, 65504] (scale the input instead of shrinking epsilon): %w", n.ID, eps, ErrRange)
		}
		args = append(args, arg("epsilon", k("epsilon", mil.FP16(fp16.Round64(a.Epsilon)))))
		if gamma != nil {
			args = append(args, arg("gamma", gamma))
		}
		e.op(t, out, "layer_norm", append(args, arg("x", in(0)))...)
	case dataflow.OpReshape:
		e.reshape(e.vars[n.Inputs[0]], out, n.Shape)
	case dataflow.OpTranspose:
		e.op(t, out, "transpose", arg("perm", k("perm", ints(a.Perm))), arg("x", in(0)))
	case dataflow.OpConcat:
		if len(n.Inputs) == 1 {
			e.vars[n.ID] = e.vars[n.Inputs[0]]
			return nil
		}
		vals := make([]string, len(n.Inputs))
		shapes := make([][]int, len(n.Inputs))
		for i, id := range n.Inputs {
			vals[i], shapes[i] = e.vars[id], e.nodes[id].Shape
		}
		axis := a.Axis
		if axis < 0 {
			axis += len(n.Shape)
		}
		e.concatTree(vals, shapes, axis, out)
	case dataflow.OpSlice:
		e.op(t, out, "slice_by_size",
			arg("begin", k("begin", ints(a.Begin))),
			arg("size", k("size", ints(a.Size))),
			arg("x", in(0)))
	case dataflow.OpPad:
		pv, err := fp16Values("pad value", []float64{a.PadValue})
		if err != nil {
			return err
		}
		e.op(t, out, "pad",
			arg("constant_val", k("constant_val", mil.FP16(pv[0]))),
			arg("mode", k("mode", mil.String("constant"))),
			arg("pad", k("pad", ints(a.Pads))),
			arg("x", in(0)))
	default:
		return fmt.Errorf("lower: node %d: no MIL emission for op %q: %w", n.ID, n.Op, ErrUnsupported)
	}
	e.vars[n.ID] = out
	return nil
}
