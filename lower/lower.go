package lower

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower/mil"
)

// Lower compiles a finished graph into one program for target t: it
// verifies the graph, runs the legalization passes, checks the result
// against the target's limits and emits MIL text and the weight blob.
// The same graph always gives byte-identical MIL and blob.
func Lower(g *dataflow.Graph, t Target) (*Program, error) {
	if g == nil {
		return nil, fmt.Errorf("lower: nil graph: %w", dataflow.ErrInvalid)
	}
	if err := dataflow.Verify(g); err != nil {
		return nil, fmt.Errorf("lower: %w", err)
	}
	if err := checkNames(g); err != nil {
		return nil, err
	}
	// Shapes and the weight file's size are checked before the passes,
	// which copy every constant, and the emitter build anything.
	if err := checkShapes(g, t); err != nil {
		return nil, err
	}
	return lowerChecked(g, t)
}

// lowerChecked is Lower after its checks of the source graph: the
// passes, the legalized graph's limits, and the emitter.
func lowerChecked(g *dataflow.Graph, t Target) (*Program, error) {
	legal, err := Legalize(g)
	if err != nil {
		return nil, err
	}
	if legal, err = legalizeFor(legal, t); err != nil {
		return nil, err
	}
	if err := checkLimits(legal, t); err != nil {
		return nil, err
	}
	return emit(legal, t)
}

// Legalize runs the rewrite passes and returns the graph that is emitted.
func Legalize(g *dataflow.Graph) (*dataflow.Graph, error) {
	for _, p := range passes {
		var err error
		if g, err = p.run(g); err != nil {
			return nil, fmt.Errorf("lower: pass %s: %w", p.name, err)
		}
	}
	return g, nil
}

// checkLimits rejects tensors the target cannot hold.
func checkLimits(g *dataflow.Graph, t Target) error {
	nodes := g.Nodes()
	outName := outputNames(g)
	for _, n := range nodes {
		if err := checkShape(n, t, tensorLabel(n, outName), true); err != nil {
			return err
		}
		switch n.Op {
		case dataflow.OpMatMul:
			x := nodes[n.Inputs[0]].Shape
			k := x[len(x)-1]
			if n.Attrs.TransposeX {
				k = x[len(x)-2]
			}
			if k > t.MaxSpatial {
				return fmt.Errorf("lower: node %d (matmul): contraction length %d exceeds target %s's limit of %d: %w", n.ID, k, t.Name, t.MaxSpatial, ErrUnsupported)
			}
		case dataflow.OpConv2D:
			w := nodes[n.Inputs[1]].Shape
			if w[2] > t.MaxKernel || w[3] > t.MaxKernel {
				return fmt.Errorf("lower: node %d (conv2d): kernel %d×%d exceeds target %s's limit of %d: %w", n.ID, w[2], w[3], t.Name, t.MaxKernel, ErrUnsupported)
			}
		}
		if c, ok := CapabilityOf(n.Op); ok && n.Op != dataflow.OpInput && n.Op != dataflow.OpConst {
			if r := len(n.Shape); c.MinRank > 0 && n.Op == dataflow.OpMatMul && r < c.MinRank {
				return fmt.Errorf("lower: node %d (%s): rank %d below %d: %w", n.ID, n.Op, r, c.MinRank, ErrUnsupported)
			}
		}
	}
	return nil
}

// ioSpec is the device layout of a logical tensor on target t, in a
// surface of its own.
func ioSpec(t Target, name string, shape dataflow.Shape) (IOSpec, error) {
	rows, rowLen := rowsOf(shape)
	if rows > t.MaxChannels {
		n := fmt.Sprint(rows)
		if rows == math.MaxInt {
			n = "over 2⁶³"
		}
		return IOSpec{}, fmt.Errorf("lower: %q of shape %v needs %s device rows (the product of its axes but the last), over target %s's channel limit of %d; split it into several inputs or outputs, or move extent to its last axis: %w", name, shape, n, t.Name, t.MaxChannels, ErrUnsupported)
	}
	return IOSpec{
		Name:        name,
		Shape:       append([]int{}, shape...),
		DeviceShape: []int{1, rows, 1, t.RowLength(rowLen)},
	}, nil
}

// rowsOf is a logical shape's device rows and row length; rows saturate
// at math.MaxInt rather than wrap (dataflow.Shape.Size).
func rowsOf(shape dataflow.Shape) (rows, rowLen int) {
	if r := len(shape); r > 0 {
		return shape[:r-1].Size(), shape[r-1]
	}
	return 1, 1
}

// layout gives each logical tensor its band. Without packing every tensor
// is a surface of its own; with packing they are stacked along the
// channel axis of one surface whose stride fits the longest row. Either
// way every surface is sized to the target's minimum (SurfaceShape).
func layout(t Target, specs []IOSpec, packed bool, kind string) ([]IOSpec, []Surface, error) {
	if !packed {
		surf := make([]Surface, len(specs))
		for i := range specs {
			rows, stride, err := sizedSurface(t, kind, fmt.Sprintf(" of %q", specs[i].Name), specs[i].Rows(), specs[i].Stride())
			if err != nil {
				return nil, nil, err
			}
			specs[i].DeviceShape[3] = stride
			specs[i].Surface = i
			surf[i] = Surface{Name: specs[i].Name, Shape: []int{1, rows, 1, stride}}
		}
		return specs, surf, nil
	}
	if len(specs) == 0 {
		return specs, nil, nil
	}
	stride, rows := 0, 0
	for _, s := range specs {
		stride = max(stride, s.Stride())
		rows += s.Rows()
	}
	if rows > t.MaxChannels {
		return nil, nil, fmt.Errorf("lower: the %ss need %d device rows together, over target %s's channel limit of %d: %w", kind, rows, t.Name, t.MaxChannels, ErrUnsupported)
	}
	rows, stride, err := sizedSurface(t, kind, "", rows, stride)
	if err != nil {
		return nil, nil, err
	}
	ch := 0
	for i := range specs {
		specs[i].DeviceShape[3] = stride
		specs[i].Channel = ch
		ch += specs[i].Rows()
	}
	return specs, []Surface{{Shape: []int{1, rows, 1, stride}}}, nil
}

func emit(g *dataflow.Graph, t Target) (*Program, error) {
	nodes := g.Nodes()
	e := &emitter{
		t:     t,
		nodes: nodes,
		fn:    &mil.Function{Name: "main", Opset: t.Opset},
		blob:  mil.NewBlobWriter(),
		vars:  make([]string, len(nodes)),
		used:  map[string]bool{},
	}
	// Reserve every user-visible name so generated names never take one.
	for _, n := range nodes {
		if n.Name != "" && (n.Op == dataflow.OpInput || n.Op == dataflow.OpConst) {
			e.used[n.Name] = true
		}
	}
	for _, o := range g.Outputs() {
		e.used[o.Name] = true
		if n := nodes[o.Node]; n.Op == dataflow.OpInput || n.Op == dataflow.OpConst {
			return nil, fmt.Errorf("lower: output %q is the graph's %s %q itself: a program must compute something (the engine's compiler crashes on empty programs); return it from the host instead: %w", o.Name, n.Op, n.Name, ErrUnsupported)
		}
	}
	prog := &Program{Target: t.Name}
	for _, id := range g.Inputs() {
		n := nodes[id]
		spec, err := ioSpec(t, n.Name, n.Shape)
		if err != nil {
			return nil, err
		}
		prog.Inputs = append(prog.Inputs, spec)
	}
	for _, o := range g.Outputs() {
		spec, err := ioSpec(t, o.Name, nodes[o.Node].Shape)
		if err != nil {
			return nil, err
		}
		prog.Outputs = append(prog.Outputs, spec)
	}
	var err error
	if prog.Inputs, prog.InputSurfaces, err = layout(t, prog.Inputs, t.PackedIO, "input"); err != nil {
		return nil, err
	}
	if prog.Outputs, prog.OutputSurfaces, err = layout(t, prog.Outputs, t.PackedIO, "output"); err != nil {
		return nil, err
	}
	// The weight file's exact size, before any of it is built.
	if w := weightFileBytes(g, prog); w > weightLimit {
		return nil, weightError(w, true, t)
	}
	e.declareInputs(prog)
	e.planDirect(g, prog)
	inputIdx := 0
	for _, n := range nodes {
		var err error
		switch n.Op {
		case dataflow.OpInput:
			e.emitInput(n, prog.Inputs[inputIdx], prog.InputSurfaces)
			inputIdx++
		case dataflow.OpConst:
			err = e.emitConst(n)
		default:
			err = e.emitOp(n)
		}
		if err != nil {
			return nil, err
		}
	}
	e.emitOutputs(g, prog)
	p := &mil.Program{Version: "1.3", BuildInfo: buildInfo, Functions: []*mil.Function{e.fn}}
	prog.MIL = mil.Print(p)
	if e.blob.Len() > 0 {
		prog.Blob = e.blob.Bytes()
	}
	prog.Hash = engine.ProgramHash(prog.MIL, prog.Blob)
	if err := Lint(prog, t); err != nil {
		return nil, fmt.Errorf("lower: the emitted program breaks a hardware rule (a lowering bug; please report it): %w", err)
	}
	return prog, nil
}

// milKeywords are words of the MIL grammar that a variable may not be named.
var milKeywords = map[string]bool{
	"program": true, "func": true, "tensor": true, "dict": true, "BLOBFILE": true, "const": true,
	"bool": true, "string": true, "fp16": true, "fp32": true, "fp64": true, "bf16": true,
	"int4": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint1": true, "uint2": true, "uint3": true, "uint4": true, "uint6": true, "uint8": true,
	"uint16": true, "uint32": true, "uint64": true, "true": true, "false": true,
	"inf": true, "nan": true,
}

// checkNames rejects user names that would read as MIL keywords.
func checkNames(g *dataflow.Graph) error {
	check := func(name string) error {
		if milKeywords[name] {
			return fmt.Errorf("lower: name %q is a MIL keyword; choose another: %w", name, ErrUnsupported)
		}
		return nil
	}
	for _, n := range g.Nodes() {
		if err := check(n.Name); err != nil {
			return err
		}
	}
	for _, o := range g.Outputs() {
		if err := check(o.Name); err != nil {
			return err
		}
	}
	return nil
}
