package sim

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/shim"
)

// value is what the compiler knows about a MIL variable.
type value struct {
	name  string
	pos   mil.Pos
	dtype string
	shape []int

	// data: an fp16 tensor, held in slot at run time.
	data bool
	slot int

	// isConst: defined by const; its value is one of these, by dtype.
	isConst bool
	halfs   []float32 // fp16, already rounded
	ints    []int64
	bools   []bool
	strs    []string

	// convPrep caches a const conv weight's bounds and rows, by groups, for
	// the convs that share it.
	convPrep map[int]*convWeights
}

func (v *value) describe() string {
	kind := "tensor"
	if v.isConst {
		kind = "const"
	}
	if len(v.shape) == 0 {
		return fmt.Sprintf("%s %s scalar", v.dtype, kind)
	}
	return fmt.Sprintf("%s %s of shape %s", v.dtype, kind, shapeString(v.shape))
}

// kernel computes one op's output into out from the slot buffers b.
type kernel func(b [][]float32, out []float32, narrow bool)

// step is one op of the plan.
type step struct {
	run kernel
	out int
	ins []int // the slots it reads

	// For the headroom report: the op, its output variable and statement,
	// and the magnitude its outputs must stay within.
	op    string
	name  string
	pos   mil.Pos
	cliff float64
}

// plan is a compiled program: slot sizes, constant data, I/O slots, steps.
type plan struct {
	sizes   []int
	consts  [][]float32 // per slot: the data of a const slot, nil otherwise
	inputs  []int       // slot of each input surface, in the program's order
	outputs []int       // slot of each output surface, in the program's order
	steps   []step
}

type compiler struct {
	t         lower.Target
	reference bool // no fast paths: the generic kernels only (tests)
	prog      *lower.Program
	blob      *mil.BlobFile
	vars      map[string]*value
	plan      *plan
}

func (c *compiler) newSlot(size int, data []float32) int {
	c.plan.sizes = append(c.plan.sizes, size)
	c.plan.consts = append(c.plan.consts, data)
	return len(c.plan.sizes) - 1
}

// compile checks p against target t and builds its plan.
func compile(t lower.Target, p *lower.Program, reference bool) (*plan, error) {
	if p == nil {
		return nil, invalidf(mil.Pos{}, "nil program")
	}
	prog, err := mil.Parse(p.MIL)
	if err != nil {
		return nil, &Error{Msg: err.Error(), Err: ErrInvalid, Cause: err}
	}
	if err := prog.Check(); err != nil {
		return nil, &Error{Msg: err.Error(), Err: ErrInvalid, Cause: err}
	}
	if err := p.CheckLayout(); err != nil {
		return nil, invalidf(mil.Pos{}, "%v", err)
	}
	c := &compiler{t: t, reference: reference, prog: p, vars: map[string]*value{}, plan: &plan{}}
	if len(p.Blob) > 0 {
		bf, err := mil.ReadBlob(p.Blob)
		if err != nil {
			return nil, &Error{Msg: "weight blob: " + err.Error(), Err: ErrInvalid, Cause: err}
		}
		c.blob = bf
	}
	if len(prog.Functions) != 1 || prog.Functions[0].Name != "main" {
		names := make([]string, len(prog.Functions))
		for i, f := range prog.Functions {
			names[i] = f.Name
		}
		return nil, invalidf(mil.Pos{}, "the program must have exactly one function, main; it has %v", names)
	}
	fn := prog.Functions[0]
	if fn.Opset != t.Opset {
		return nil, unsupportedf(fn.Pos, "function main has opset %s; target %s takes %s", fn.Opset, t.Name, t.Opset)
	}
	if err := c.inputs(fn); err != nil {
		return nil, err
	}
	for _, op := range fn.Ops {
		if err := c.op(op); err != nil {
			return nil, err
		}
	}
	if err := c.outputs(fn); err != nil {
		return nil, err
	}
	if err := c.nonEmpty(fn); err != nil {
		return nil, err
	}
	return c.plan, nil
}

// nonEmpty rejects a program that computes nothing: one without a compute
// op, or one that returns an input or a const (directly or reshaped),
// which the engine's runtime is reported to crash on.
func (c *compiler) nonEmpty(fn *mil.Function) error {
	if len(c.plan.steps) == 0 {
		return unsupportedf(fn.Pos, "function main has no compute op: the engine does not run empty programs; do such work on the host")
	}
	from := map[int]string{}
	for _, in := range fn.Inputs {
		if v := c.vars[in.Name]; v != nil {
			from[v.slot] = fmt.Sprintf("the input %q", in.Name)
		}
	}
	for i, name := range fn.Outputs {
		v := c.vars[name]
		if v == nil {
			continue
		}
		pos := fn.Pos
		if i < len(fn.OutputPos) {
			pos = fn.OutputPos[i]
		}
		if v.isConst {
			return unsupportedf(pos, "output %q is a const: the engine does not run a program whose output no op computes; take the value on the host instead", name)
		}
		if src, ok := from[v.slot]; ok {
			return unsupportedf(pos, "output %q is %s, unchanged: the engine does not run a program whose output no op computes; take the value on the host instead", name, src)
		}
	}
	return nil
}

// checkSurfaces validates the program's surface list against main's
// inputs or outputs, by name and in order, and each surface's size
// against the target's minimum.
func checkSurfaces(t lower.Target, kind string, surfaces []lower.Surface, names []string) error {
	for _, sf := range surfaces {
		if b := 2 * sf.Size(); len(sf.Shape) == 4 && t.MinSurfaceBytes > 0 && b < t.MinSurfaceBytes {
			return unsupportedf(mil.Pos{}, "%s surface %q of shape %s holds %d bytes; target %s fails to evaluate surfaces below %d bytes (lower the program for this target: it pads them)", kind, sf.Name, shapeString(sf.Shape), b, t.Name, t.MinSurfaceBytes)
		}
	}
	if len(surfaces) != len(names) {
		return invalidf(mil.Pos{}, "function main has %d %ss, the program lists %d %s surfaces", len(names), kind, len(surfaces), kind)
	}
	for i, sf := range surfaces {
		d := sf.Shape
		if len(d) != 4 || d[0] != 1 || d[2] != 1 || d[1] < 1 || d[3] < 1 {
			return invalidf(mil.Pos{}, "%s surface %q: shape %s is not [1, C, 1, S]", kind, sf.Name, shapeString(d))
		}
		if sf.Name != names[i] {
			return invalidf(mil.Pos{}, "%s surface %d is %q, function main's %s %d is %q", kind, i, sf.Name, kind, i, names[i])
		}
	}
	return nil
}

func (c *compiler) inputs(fn *mil.Function) error {
	if c.t.PackedIO && len(fn.Inputs) > 1 {
		return unsupportedf(fn.Pos, "function main binds %d input surfaces; target %s takes one (pack the inputs along the channel axis)", len(fn.Inputs), c.t.Name)
	}
	names := make([]string, len(fn.Inputs))
	for i, in := range fn.Inputs {
		names[i] = in.Name
	}
	if err := checkSurfaces(c.t, "input", c.prog.InputSurfaces, names); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, spec := range c.prog.Inputs {
		if seen[spec.Name] {
			return invalidf(fn.Pos, "the program's signature lists input %q twice", spec.Name)
		}
		seen[spec.Name] = true
	}
	for i, in := range fn.Inputs {
		sf := c.prog.InputSurfaces[i]
		if c.vars[in.Name] != nil {
			return invalidf(in.Pos, "function main declares input %q twice", in.Name)
		}
		want := mil.TensorType("fp16", sf.Shape...)
		if !in.Type.Tensor || in.Type.DType != "fp16" || !equalShapes(in.Type.Shape, sf.Shape) {
			if in.Type.DType != "fp16" {
				return unsupportedf(in.Pos, "input %q is %s: program inputs must be fp16 (the engine's I/O is fp16)", in.Name, typeString(in.Type))
			}
			return invalidf(in.Pos, "input %q is declared %s, the program's surface says %s", in.Name, typeString(in.Type), typeString(want))
		}
		if err := c.limits(in.Pos, in.Name, sf.Shape); err != nil {
			return err
		}
		v := &value{name: in.Name, pos: in.Pos, dtype: "fp16", shape: sf.Shape, data: true}
		v.slot = c.newSlot(numel(v.shape), nil)
		c.vars[in.Name] = v
		c.plan.inputs = append(c.plan.inputs, v.slot)
	}
	return nil
}

func (c *compiler) outputs(fn *mil.Function) error {
	pos := func(name string) mil.Pos {
		for i, n := range fn.Outputs {
			if n == name && i < len(fn.OutputPos) {
				return fn.OutputPos[i]
			}
		}
		return fn.Pos
	}
	if c.t.PackedIO && len(fn.Outputs) > 1 {
		return unsupportedf(fn.Pos, "function main returns %d output surfaces; target %s takes one (concatenate the outputs along the channel axis)", len(fn.Outputs), c.t.Name)
	}
	seen := map[string]bool{}
	for _, n := range fn.Outputs {
		if seen[n] {
			return invalidf(pos(n), "function main returns %q twice", n)
		}
		seen[n] = true
	}
	if err := checkSurfaces(c.t, "output", c.prog.OutputSurfaces, fn.Outputs); err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, spec := range c.prog.Outputs {
		if listed[spec.Name] {
			return invalidf(fn.Pos, "the program's signature lists output %q twice", spec.Name)
		}
		listed[spec.Name] = true
	}
	for i, name := range fn.Outputs {
		sf := c.prog.OutputSurfaces[i]
		v := c.vars[name]
		if v == nil {
			return invalidf(pos(name), "output %q is not defined", name)
		}
		if !v.data {
			return unsupportedf(pos(name), "output %q is a %s: program outputs must be fp16 tensors", name, v.describe())
		}
		if !equalShapes(v.shape, sf.Shape) {
			return invalidf(pos(name), "output %q has shape %s, the program's surface says %s", name, shapeString(v.shape), shapeString(sf.Shape))
		}
		c.plan.outputs = append(c.plan.outputs, v.slot)
	}
	return nil
}

// limits checks a tensor shape against the target.
func (c *compiler) limits(pos mil.Pos, name string, shape []int) error {
	t := c.t
	if len(shape) > t.MaxRank {
		return unsupportedf(pos, "%q has rank %d, beyond the target's limit of %d", name, len(shape), t.MaxRank)
	}
	for i, d := range shape {
		if d < 1 {
			return invalidf(pos, "%q has shape %s: dimensions must be at least 1", name, shapeString(shape))
		}
		if i == len(shape)-1 {
			if d > t.MaxSpatial {
				return unsupportedf(pos, "%q has shape %s: last dimension %d exceeds the target's spatial limit of %d", name, shapeString(shape), d, t.MaxSpatial)
			}
		} else if d > t.MaxChannels {
			return unsupportedf(pos, "%q has shape %s: dimension %d exceeds the target's limit of %d", name, shapeString(shape), d, t.MaxChannels)
		}
	}
	return nil
}

func (c *compiler) define(op *mil.Op, v *value) error {
	if _, dup := c.vars[v.name]; dup {
		return invalidf(op.Pos, "variable %q redefined", v.name)
	}
	c.vars[v.name] = v
	return nil
}

// checkAttrs allows the name attribute (a string, required) and the listed
// others.
func checkAttrs(op *mil.Op, others ...string) error {
	hasName := false
	for _, a := range op.Attrs {
		switch {
		case a.Name == "name":
			l, ok := a.Value.(*mil.Literal)
			if !ok || l.Type.DType != "string" || len(l.Type.Shape) != 0 || len(l.Strings) != 1 {
				return invalidf(op.Pos, "op %q: attribute name must be a string literal", op.Kind)
			}
			hasName = true
		case slices.Contains(others, a.Name):
		default:
			return invalidf(op.Pos, "op %q: unknown attribute %q", op.Kind, a.Name)
		}
	}
	if !hasName {
		return invalidf(op.Pos, "op %q has no name attribute", op.Kind)
	}
	return nil
}

func (c *compiler) op(op *mil.Op) error {
	if op.Kind == "const" {
		return c.constOp(op)
	}
	spec, ok := opSpecs[op.Kind]
	if !ok {
		msg := fmt.Sprintf("op %q is not supported", op.Kind)
		if h := rejectedHints[op.Kind]; h != "" {
			msg += " (" + h + ")"
		}
		return unsupportedf(op.Pos, "%s", msg)
	}
	if len(op.Outputs) != 1 {
		return invalidf(op.Pos, "op %q has %d outputs, want 1", op.Kind, len(op.Outputs))
	}
	if err := checkAttrs(op); err != nil {
		return err
	}
	a, err := c.bind(op, spec)
	if err != nil {
		return err
	}
	b, err := spec.build(c, a)
	if err != nil {
		return err
	}
	out := op.Outputs[0]
	decl := out.Type
	if decl.DType != "fp16" || (len(decl.Shape) > 0 && !decl.Tensor) || !equalShapes(decl.Shape, b.shape) {
		inferred := mil.TensorType("fp16", b.shape...)
		return invalidf(op.Pos, "%s: declared type %s of %q does not match the inferred type %s", op.Kind, typeString(decl), out.Name, typeString(inferred))
	}
	if err := c.limits(op.Pos, out.Name, b.shape); err != nil {
		return err
	}
	v := &value{name: out.Name, pos: op.Pos, dtype: "fp16", shape: b.shape, data: true}
	if b.alias != nil {
		v.slot = b.alias.slot
		if b.alias.isConst {
			v.isConst, v.halfs = true, b.alias.halfs
		}
	} else {
		v.slot = c.newSlot(numel(b.shape), nil)
		cliff := b.cliff
		if cliff == 0 {
			cliff = maxHalf
		}
		c.plan.steps = append(c.plan.steps, step{run: b.run, out: v.slot, ins: a.slots(),
			op: op.Kind, name: out.Name, pos: op.Pos, cliff: cliff})
	}
	return c.define(op, v)
}

// constOp decodes a const once: fp16 data goes to a const slot, int32,
// bool and string values stay with the compiler as parameters.
func (c *compiler) constOp(op *mil.Op) error {
	if len(op.Args) != 0 {
		return invalidf(op.Pos, "const takes no arguments")
	}
	if len(op.Outputs) != 1 {
		return invalidf(op.Pos, "const has %d outputs, want 1", len(op.Outputs))
	}
	if err := checkAttrs(op, "val"); err != nil {
		return err
	}
	lit, ok := op.Attr("val").(*mil.Literal)
	if !ok {
		return invalidf(op.Pos, "const needs a literal val attribute")
	}
	out := op.Outputs[0]
	if out.Type.DType != lit.Type.DType || !equalShapes(out.Type.Shape, lit.Type.Shape) {
		return invalidf(op.Pos, "const %q is declared %s but its value is %s", out.Name, typeString(out.Type), typeString(lit.Type))
	}
	n := lit.Type.Elements()
	v := &value{name: out.Name, pos: op.Pos, dtype: lit.Type.DType, shape: slices.Clone(lit.Type.Shape), isConst: true}
	pos := op.Pos
	if lit.Blob != nil && lit.Type.DType != "fp16" {
		return unsupportedf(pos, "const %q: weights of dtype %s are not supported (fp16 only)", out.Name, lit.Type.DType)
	}
	switch lit.Type.DType {
	case "fp16":
		var vals []float32
		if lit.Blob != nil {
			var err error
			if vals, err = c.blobValues(pos, out.Name, lit); err != nil {
				return err
			}
		} else {
			if len(lit.Type.Shape) > 0 {
				return unsupportedf(pos, "const %q is an inline fp16 tensor literal of shape %s: no program known to run on the engine has one; put tensor constants in the weight blob (BLOBFILE)", out.Name, shapeString(lit.Type.Shape))
			}
			if len(lit.Floats) != n {
				return invalidf(pos, "const %q holds %d values, its type has %d elements", out.Name, len(lit.Floats), n)
			}
			vals = make([]float32, n)
			for i, f := range lit.Floats {
				vals[i] = round64(f)
				if f != 0 && vals[i] == 0 {
					return unsupportedf(pos, "const %q element %d is %g, which rounds to zero in fp16: scale it into fp16's normal range (|x| ≥ 2⁻¹⁴)", out.Name, i, f)
				}
			}
		}
		for i, x := range vals {
			if !isHalfFinite(x) {
				return errAt(pos, shim.ErrRange, "const %q element %d is %g, not a finite fp16 value", out.Name, i, x)
			}
			if x != 0 && x > -minNormal && x < minNormal {
				return unsupportedf(pos, "const %q element %d is %g, an fp16 subnormal: whether the engine flushes subnormals is unmeasured; scale it into fp16's normal range (|x| ≥ 2⁻¹⁴)", out.Name, i, x)
			}
		}
		if err := c.limits(op.Pos, out.Name, v.shape); err != nil {
			return err
		}
		v.halfs, v.data = vals, true
		v.slot = c.newSlot(n, vals)
	case "int32":
		if len(lit.Ints) != n {
			return invalidf(pos, "const %q holds %d values, its type has %d elements", out.Name, len(lit.Ints), n)
		}
		v.ints = lit.Ints
	case "bool":
		if len(lit.Bools) != n {
			return invalidf(pos, "const %q holds %d values, its type has %d elements", out.Name, len(lit.Bools), n)
		}
		v.bools = lit.Bools
	case "string":
		if len(lit.Strings) != n {
			return invalidf(pos, "const %q holds %d values, its type has %d elements", out.Name, len(lit.Strings), n)
		}
		v.strs = lit.Strings
	default:
		return unsupportedf(pos, "const %q of dtype %s is not supported: the ANE computes in fp16; parameters are int32, bool or string", out.Name, lit.Type.DType)
	}
	return c.define(op, v)
}

func (c *compiler) blobValues(pos mil.Pos, name string, lit *mil.Literal) ([]float32, error) {
	ref := lit.Blob
	if ref.Path != lower.WeightPath {
		return nil, invalidf(pos, "const %q: weight path %q, want %q", name, ref.Path, lower.WeightPath)
	}
	if c.blob == nil {
		return nil, invalidf(pos, "const %q refers to the weight blob, but the program has none", name)
	}
	e, err := c.blob.At(ref.Offset)
	if err != nil {
		return nil, &Error{Pos: pos, Msg: fmt.Sprintf("const %q: no blob metadata record at offset %d", name, ref.Offset), Err: ErrInvalid, Cause: err}
	}
	if e.DType != mil.BlobFP16 {
		return nil, invalidf(pos, "const %q: blob at offset %d holds %s data, want fp16", name, ref.Offset, e.DType)
	}
	n := lit.Type.Elements()
	if len(e.Data) != 2*n {
		return nil, invalidf(pos, "const %q: blob at offset %d holds %d bytes, its type %s needs %d", name, ref.Offset, len(e.Data), typeString(lit.Type), 2*n)
	}
	vals := make([]float32, n)
	fp16.Decode(vals, e.Data)
	return vals, nil
}

// Argument kinds.
type argKind uint8

const (
	kData       argKind = iota // an fp16 tensor (op output, input or const)
	kTuple                     // a tuple of fp16 tensors
	kInt                       // const int32 scalar
	kInts                      // const int32 rank-1 tensor
	kBool                      // const bool scalar
	kString                    // const string scalar
	kHalf                      // const fp16 scalar
	kHalfTensor                // const fp16 tensor
)

func (k argKind) String() string {
	return [...]string{"an fp16 tensor", "a tuple of fp16 tensors", "a const int32 scalar", "a const rank-1 int32 tensor",
		"a const bool scalar", "a const string scalar", "a const fp16 scalar", "a const fp16 tensor"}[k]
}

type param struct {
	name     string
	kind     argKind
	required bool
}

type built struct {
	shape []int
	run   kernel
	alias *value  // set instead of run when the output is its input reinterpreted
	cliff float64 // the magnitude the op's outputs must stay within; 0 for fp16's range
}

type opSpec struct {
	params []param
	build  func(c *compiler, a *args) (built, error)
}

// args are an op's bound arguments.
type args struct {
	op     *mil.Op
	vals   map[string]*value
	tuples map[string][]*value
	pos    map[string]mil.Pos
}

func (a *args) errorf(format string, x ...any) error {
	return invalidf(a.op.Pos, "%s: %s", a.op.Kind, fmt.Sprintf(format, x...))
}

// slots lists the slots of the op's tensor arguments.
func (a *args) slots() []int {
	var s []int
	for _, v := range a.vals {
		if v.data {
			s = append(s, v.slot)
		}
	}
	for _, vs := range a.tuples {
		for _, v := range vs {
			s = append(s, v.slot)
		}
	}
	return s
}

func (a *args) has(name string) bool { return a.vals[name] != nil }

func (a *args) data(name string) *value { return a.vals[name] }

func (a *args) int(name string, def int) int {
	if v := a.vals[name]; v != nil {
		return int(v.ints[0])
	}
	return def
}

func (a *args) ints(name string) []int {
	v := a.vals[name]
	if v == nil {
		return nil
	}
	out := make([]int, len(v.ints))
	for i, x := range v.ints {
		out[i] = int(x)
	}
	return out
}

func (a *args) bool(name string, def bool) bool {
	if v := a.vals[name]; v != nil {
		return v.bools[0]
	}
	return def
}

func (a *args) str(name, def string) string {
	if v := a.vals[name]; v != nil {
		return v.strs[0]
	}
	return def
}

func (a *args) half(name string, def float32) float32 {
	if v := a.vals[name]; v != nil {
		return v.halfs[0]
	}
	return def
}

// bind resolves and type-checks an op's keyword arguments against its spec.
func (c *compiler) bind(op *mil.Op, spec opSpec) (*args, error) {
	a := &args{op: op, vals: map[string]*value{}, tuples: map[string][]*value{}, pos: map[string]mil.Pos{}}
	for _, arg := range op.Args {
		var p *param
		for i := range spec.params {
			if spec.params[i].name == arg.Name {
				p = &spec.params[i]
			}
		}
		if p == nil {
			known := make([]string, len(spec.params))
			for i, q := range spec.params {
				known[i] = q.name
			}
			return nil, invalidf(op.Pos, "%s has no argument %q (it takes %s)", op.Kind, arg.Name, strings.Join(known, ", "))
		}
		if _, dup := a.pos[arg.Name]; dup {
			return nil, invalidf(op.Pos, "%s: argument %q given twice", op.Kind, arg.Name)
		}
		switch e := arg.Value.(type) {
		case *mil.Literal:
			return nil, unsupportedf(op.Pos, "%s: argument %q is an inline literal; declare it as a named const", op.Kind, arg.Name)
		case *mil.Tuple:
			a.pos[arg.Name] = e.Pos
			if p.kind != kTuple {
				return nil, invalidf(op.Pos, "%s: argument %q must be %s, not a tuple", op.Kind, arg.Name, p.kind)
			}
			if len(e.Elems) == 0 {
				return nil, invalidf(op.Pos, "%s: argument %q is an empty tuple", op.Kind, arg.Name)
			}
			for _, el := range e.Elems {
				r, ok := el.(*mil.Ref)
				if !ok {
					return nil, unsupportedf(op.Pos, "%s: argument %q holds an inline literal; declare it as a named const", op.Kind, arg.Name)
				}
				v, err := c.resolve(op, r)
				if err != nil {
					return nil, err
				}
				if !v.data {
					return nil, invalidf(op.Pos, "%s: %q in argument %q is a %s, want an fp16 tensor", op.Kind, r.Name, arg.Name, v.describe())
				}
				a.tuples[arg.Name] = append(a.tuples[arg.Name], v)
			}
		case *mil.Ref:
			a.pos[arg.Name] = e.Pos
			if p.kind == kTuple {
				return nil, invalidf(op.Pos, "%s: argument %q must be a tuple of fp16 tensors", op.Kind, arg.Name)
			}
			v, err := c.resolve(op, e)
			if err != nil {
				return nil, err
			}
			if !kindOK(p.kind, v) {
				return nil, invalidf(op.Pos, "%s: argument %q must be %s; %q is a %s", op.Kind, arg.Name, p.kind, v.name, v.describe())
			}
			a.vals[arg.Name] = v
		default:
			return nil, invalidf(op.Pos, "%s: argument %q has an unknown form", op.Kind, arg.Name)
		}
	}
	for _, p := range spec.params {
		if _, ok := a.pos[p.name]; p.required && !ok {
			return nil, invalidf(op.Pos, "%s: missing required argument %q", op.Kind, p.name)
		}
	}
	return a, nil
}

func (c *compiler) resolve(op *mil.Op, r *mil.Ref) (*value, error) {
	v := c.vars[r.Name]
	if v == nil {
		return nil, invalidf(op.Pos, "%s: undefined variable %q", op.Kind, r.Name)
	}
	return v, nil
}

func kindOK(k argKind, v *value) bool {
	scalar := len(v.shape) == 0
	switch k {
	case kData:
		return v.data
	case kInt:
		return v.isConst && v.dtype == "int32" && scalar
	case kInts:
		return v.isConst && v.dtype == "int32" && len(v.shape) == 1
	case kBool:
		return v.isConst && v.dtype == "bool" && scalar
	case kString:
		return v.isConst && v.dtype == "string" && scalar
	case kHalf:
		return v.isConst && v.dtype == "fp16" && scalar
	case kHalfTensor:
		return v.isConst && v.dtype == "fp16"
	}
	return false
}

// rejectedHints explain ops the ANE is known to reject or mishandle
// (as public projects report) and name the replacement.
var rejectedHints = map[string]string{
	"rsqrt":          "use pow(x, -0.5)",
	"tile":           "it corrupts the engine's state; use concat",
	"slice_by_index": "use slice_by_size",
	"cumsum":         "it has no hardware path; use matmul with a triangular ones matrix",
	"reduce_prod":    "it has no hardware path",
	"linear":         "use conv with a 1×1 kernel or matmul",
	"cast":           "programs compute in fp16 throughout",
	"inverse":        "use real_div",
}

// sortedAxes normalizes axes against rank: each in [−rank, rank), no
// repeats; returned ascending.
func sortedAxes(a *args, axes []int, rank int) ([]int, error) {
	out := make([]int, 0, len(axes))
	for _, ax := range axes {
		n, ok := normAxis(ax, rank)
		if !ok {
			return nil, a.errorf("axis %d out of range for rank %d", ax, rank)
		}
		if slices.Contains(out, n) {
			return nil, a.errorf("axis %d repeated", ax)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

// defaultLayerNormEpsilon is MIL's default, 1e-5, rounded to fp16 (0x1.5p-17).
var defaultLayerNormEpsilon = round64(1e-5)
