package lower

import (
	"fmt"
	"slices"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower/mil"
)

// SplitOutputs returns a copy of a program whose outputs are packed into
// one surface by a tree of concats, with that tree removed: main returns
// each output's band as a surface of its own, [1, C_i, 1, S] at the packed
// surface's stride S, in the outputs' order, and each IOSpec names its own
// surface at channel 0. Inputs, weights and every other op are unchanged.
//
// It is the fallback for a compiler that rejects the packing concats (one
// public driver reports concat rejected outright on M4 Max,
// docs/ENGINE.md §7). The result binds several output surfaces, which Lint
// refuses for a PackedIO target: only a device that chooses this fallback
// runs it. A program whose outputs are not concat-packed (one output, or a
// surface per output already) is an error wrapping ErrUnsupported. Each
// per-output surface meets the program's target's MinSurfaceBytes: a band
// smaller than that is padded with zeros (its rows widened first, then
// rows added, as SurfaceShape sizes a surface) by one pad op.
func SplitOutputs(p *Program) (*Program, error) {
	if p == nil {
		return nil, fmt.Errorf("lower: split outputs: nil program: %w", ErrUnsupported)
	}
	if len(p.OutputSurfaces) != 1 || len(p.Outputs) < 2 {
		return nil, fmt.Errorf("lower: split outputs: %d outputs on %d surfaces; only several outputs packed into one surface can be split: %w", len(p.Outputs), len(p.OutputSurfaces), ErrUnsupported)
	}
	prog, err := mil.Parse(p.MIL)
	if err != nil {
		return nil, fmt.Errorf("lower: split outputs: %v: %w", err, ErrUnsupported)
	}
	if len(prog.Functions) != 1 || len(prog.Functions[0].Outputs) != 1 || prog.Functions[0].Outputs[0] != p.OutputSurfaces[0].Name {
		return nil, fmt.Errorf("lower: split outputs: main does not return the program's one output surface %q: %w", p.OutputSurfaces[0].Name, ErrUnsupported)
	}
	fn := prog.Functions[0]
	def := map[string]int{} // variable -> index of the op defining it
	for i, op := range fn.Ops {
		for _, v := range op.Outputs {
			def[v.Name] = i
		}
	}
	// Walk the concat tree from the surface down to its leaves, the bands.
	drop := map[int]bool{}
	var leaves []string
	var walk func(name string) error
	walk = func(name string) error {
		i, ok := def[name]
		if !ok || fn.Ops[i].Kind != "concat" {
			leaves = append(leaves, name)
			return nil
		}
		op := fn.Ops[i]
		vals, ok := op.Arg("values").(*mil.Tuple)
		if !ok {
			return fmt.Errorf("concat %q has no values tuple", name)
		}
		drop[i] = true
		for _, e := range vals.Elems {
			r, ok := e.(*mil.Ref)
			if !ok {
				return fmt.Errorf("concat %q concatenates a literal", name)
			}
			if err := walk(r.Name); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(fn.Outputs[0]); err != nil {
		return nil, fmt.Errorf("lower: split outputs: %v: %w", err, ErrUnsupported)
	}
	// The bands lie in the surface in channel order.
	order := make([]int, len(p.Outputs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return p.Outputs[a].Channel - p.Outputs[b].Channel })
	if len(leaves) != len(order) {
		return nil, fmt.Errorf("lower: split outputs: the concat tree has %d leaves for %d outputs: %w", len(leaves), len(order), ErrUnsupported)
	}
	stride := p.OutputSurfaces[0].Stride()
	q := *p
	q.Outputs = slices.Clone(p.Outputs)
	q.OutputSurfaces = make([]Surface, len(p.Outputs))
	band := make([]string, len(p.Outputs))
	ch := 0
	for j, i := range order {
		spec := p.Outputs[i]
		shape := []int{1, spec.Rows(), 1, stride}
		if spec.Channel != ch || !slices.Equal(spec.DeviceShape, shape) || !slices.Equal(typeOf(fn, def, leaves[j]), shape) {
			return nil, fmt.Errorf("lower: split outputs: leaf %q of the concat tree is not the band of output %q (%v at row %d): %w", leaves[j], spec.Name, shape, spec.Channel, ErrUnsupported)
		}
		ch += spec.Rows()
		band[i] = leaves[j]
	}
	t, _ := engine.ByName(p.Target) // an unknown target has no minimum
	for _, v := range fn.Inputs {
		def[v.Name] = -1 // names the pads may not take
	}
	var pads []*mil.Op
	for i := range q.Outputs {
		rows := p.Outputs[i].Rows()
		srows, sstride := SurfaceShape(t, rows, stride)
		q.Outputs[i].DeviceShape = []int{1, rows, 1, sstride}
		q.Outputs[i].Surface, q.Outputs[i].Channel = i, 0
		q.OutputSurfaces[i] = Surface{Name: band[i], Shape: []int{1, srows, 1, sstride}}
		if srows == rows && sstride == stride {
			continue
		}
		name := unusedName(def, band[i]+"_surface")
		param := func(suffix string, lit *mil.Literal) string {
			c := unusedName(def, name+suffix)
			pads = append(pads, &mil.Op{Outputs: []mil.Var{{Type: lit.Type, Name: c}}, Kind: "const",
				Attrs: []mil.Arg{{Name: "name", Value: mil.String(c)}, {Name: "val", Value: lit}}})
			return c
		}
		value := param("_pad_value", mil.FP16(0))
		mode := param("_pad_mode", mil.String("constant"))
		widths := param("_pad", mil.Int32s(0, 0, 0, srows-rows, 0, 0, 0, sstride-stride))
		pads = append(pads, &mil.Op{Outputs: []mil.Var{{Type: mil.TensorType("fp16", 1, srows, 1, sstride), Name: name}}, Kind: "pad",
			Args:  []mil.Arg{arg("constant_val", ref(value)), arg("mode", ref(mode)), arg("pad", ref(widths)), arg("x", ref(band[i]))},
			Attrs: []mil.Arg{{Name: "name", Value: mil.String(name)}}})
		q.OutputSurfaces[i].Name, band[i] = name, name
	}
	// Remove the concats, then the parameters only they used.
	kept, gone := map[string]int{}, map[string]int{}
	for i, op := range fn.Ops {
		for _, a := range op.Args {
			if drop[i] {
				countRefs(a.Value, gone)
			} else {
				countRefs(a.Value, kept)
			}
		}
	}
	ops := fn.Ops[:0:0]
	for i, op := range fn.Ops {
		if drop[i] {
			continue
		}
		if op.Kind == "const" && len(op.Outputs) == 1 {
			if n := op.Outputs[0].Name; gone[n] > 0 && kept[n] == 0 {
				continue
			}
		}
		ops = append(ops, op)
	}
	fn.Ops = append(ops, pads...)
	fn.Outputs, fn.OutputPos = band, nil
	q.MIL = mil.Print(prog)
	q.Hash = engine.ProgramHash(q.MIL, q.Blob)
	return &q, nil
}

// typeOf is the shape of variable name: an op output or a function input.
func typeOf(fn *mil.Function, def map[string]int, name string) []int {
	if i, ok := def[name]; ok {
		for _, v := range fn.Ops[i].Outputs {
			if v.Name == name {
				return v.Type.Shape
			}
		}
	}
	for _, v := range fn.Inputs {
		if v.Name == name {
			return v.Type.Shape
		}
	}
	return nil
}

func countRefs(e mil.Expr, uses map[string]int) {
	switch v := e.(type) {
	case *mil.Ref:
		uses[v.Name]++
	case *mil.Tuple:
		for _, x := range v.Elems {
			countRefs(x, uses)
		}
	}
}

// unusedName is base, or base with the least numeric suffix that no
// variable of def has; the name is then reserved in def.
func unusedName(def map[string]int, base string) string {
	name := base
	for k := 2; ; k++ {
		if _, taken := def[name]; !taken {
			def[name] = -1
			return name
		}
		name = fmt.Sprintf("%s_%d", base, k)
	}
}
