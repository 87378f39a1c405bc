package lower

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower/mil"
)

// buildInfo is the header every program carries; hand-written programs with
// these values compile on hardware (ANE_FACTS §2).
var buildInfo = []mil.KV{
	{Key: "coremlc-component-MIL", Value: "3510.2.1"},
	{Key: "coremlc-version", Value: "3505.4.1"},
	{Key: "coremltools-component-milinternal", Value: ""},
	{Key: "coremltools-version", Value: "9.0"},
}

// inlineLimit: consts with fewer elements are written inline, larger ones go
// to the weight file, as coremltools decides (MIL_OPS §1).
const inlineLimit = 10

// emitter writes one MIL function for a legalized graph.
type emitter struct {
	t     Target
	nodes []*dataflow.Node
	fn    *mil.Function
	blob  *mil.BlobWriter
	vars  []string // MIL variable holding each node's value
	used  map[string]bool
	seq   int
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

// fp16Literal checks that every value fits fp16 and returns them rounded.
func fp16Values(what string, data []float64) ([]float64, error) {
	out := make([]float64, len(data))
	for i, v := range data {
		h := fp16.FromFloat64(v)
		if math.IsNaN(v) || h.IsInf() {
			return nil, fmt.Errorf("lower: %s element %d is %g, beyond fp16's range ±%g: %w", what, i, v, fp16.MaxValue, ErrRange)
		}
		out[i] = h.Float64()
	}
	return out, nil
}

func (e *emitter) emitConst(n *dataflow.Node) error {
	base := n.Name
	if base == "" {
		base = fmt.Sprintf("c%d", n.ID)
	}
	vals, err := fp16Values(fmt.Sprintf("constant %q", base), n.Data)
	if err != nil {
		return err
	}
	var lit *mil.Literal
	switch {
	case len(n.Shape) == 0:
		lit = mil.FP16(vals[0])
	case len(vals) < inlineLimit:
		lit = &mil.Literal{Type: typ(n.Shape), Floats: vals}
	default:
		off := e.blob.Add(mil.BlobFP16, mil.FP16Data(vals))
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

// emitInput declares the device input [1, C, 1, S] and recovers the logical
// tensor: slice off the row padding, reshape to the logical shape.
func (e *emitter) emitInput(n *dataflow.Node, spec IOSpec) {
	e.fn.Inputs = append(e.fn.Inputs, mil.Var{Type: mil.TensorType("fp16", spec.DeviceShape...), Name: n.Name})
	v := n.Name
	c, rowLen := spec.Rows(), spec.RowLen()
	if spec.Stride() != rowLen {
		out := e.fresh(n.Name + "_unpad")
		v = e.op(mil.TensorType("fp16", 1, c, 1, rowLen), out, "slice_by_size",
			arg("begin", ref(e.constant(out+"_begin", mil.Int32s(0, 0, 0, 0)))),
			arg("size", ref(e.constant(out+"_size", mil.Int32s(1, c, 1, rowLen)))),
			arg("x", ref(v)))
	}
	if !dataflow.Shape(n.Shape).Equal(dataflow.Shape{1, c, 1, rowLen}) {
		out := e.fresh(n.Name + "_logical")
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

// emitOutput lays a logical value out as the device output [1, C, 1, S].
func (e *emitter) emitOutput(name string, n *dataflow.Node, spec IOSpec) {
	c, rowLen, stride := spec.Rows(), spec.RowLen(), spec.Stride()
	v := e.vars[n.ID]
	if stride == rowLen {
		e.reshape(v, name, dataflow.Shape{1, c, 1, rowLen})
	} else {
		v = e.reshape(v, e.fresh(name+"_rows"), dataflow.Shape{1, c, 1, rowLen})
		e.op(mil.TensorType("fp16", spec.DeviceShape...), name, "pad",
			arg("constant_val", ref(e.constant(name+"_pad_value", mil.FP16(0)))),
			arg("mode", ref(e.constant(name+"_pad_mode", mil.String("constant")))),
			arg("pad", ref(e.constant(name+"_pad", mil.Int32s(0, 0, 0, 0, 0, 0, 0, stride-rowLen)))),
			arg("x", ref(v)))
	}
	e.fn.Outputs = append(e.fn.Outputs, name)
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
	out := e.fresh(fmt.Sprintf("v%d", n.ID))
	if n.Name != "" && n.Op != dataflow.OpInput && n.Op != dataflow.OpConst {
		out = e.fresh(n.Name)
	}
	in := func(i int) mil.Expr { return ref(e.vars[n.Inputs[i]]) }
	a := n.Attrs
	t := typ(n.Shape)
	k := func(suffix string, lit *mil.Literal) mil.Expr { return ref(e.constant(out+"_"+suffix, lit)) }
	switch n.Op {
	case dataflow.OpAdd, dataflow.OpSub, dataflow.OpMul, dataflow.OpDiv, dataflow.OpPow, dataflow.OpMaximum, dataflow.OpMinimum:
		e.op(t, out, c.MIL, arg("x", in(0)), arg("y", in(1)))
	case dataflow.OpAbs, dataflow.OpSqrt, dataflow.OpExp, dataflow.OpTanh, dataflow.OpSigmoid, dataflow.OpRelu:
		e.op(t, out, c.MIL, arg("x", in(0)))
	case dataflow.OpLog:
		e.op(t, out, "log", arg("epsilon", k("epsilon", mil.FP16(0))), arg("x", in(0)))
	case dataflow.OpGelu:
		mode := a.Gelu
		if mode == "" {
			mode = dataflow.GeluExact
		}
		e.op(t, out, "gelu", arg("mode", k("mode", mil.String(string(mode)))), arg("x", in(0)))
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
		vals := &mil.Tuple{}
		for i := range n.Inputs {
			vals.Elems = append(vals.Elems, in(i))
		}
		e.op(t, out, "concat",
			arg("axis", k("axis", mil.Int32(a.Axis))),
			arg("interleave", k("interleave", mil.Bool(false))),
			arg("values", vals))
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
