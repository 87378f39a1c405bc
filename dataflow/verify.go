package dataflow

import "fmt"

// Verify checks a finished graph and returns the first problem, or nil:
//   - the error the builder recorded, if any (returned as is);
//   - a graph without outputs;
//   - a node whose ID is not its index, or whose inputs do not exist
//     (dangling) or do not precede it;
//   - a node whose shape, dtype or attributes disagree with what its op
//     infers from its inputs (so a node edited after building is caught);
//   - invalid or duplicate names among inputs, consts and outputs; a const
//     whose data length does not match its shape; an Inputs list that is not
//     exactly the input nodes in creation order; an output naming no node.
//
// Every error but the builder's wraps ErrInvalid or ErrShape. Verify runs in
// time linear in the size of the graph.
func Verify(g *Graph) error {
	if g == nil {
		return errNilGraph
	}
	if g.err != nil {
		return g.err
	}
	const op Op = "verify"
	if len(g.outputs) == 0 {
		return opError(op, ErrInvalid, "graph has no outputs")
	}
	names := make(map[string]bool, len(g.inputs)+len(g.outputs))
	claim := func(what, name string) error {
		if !validName(name) {
			return opError(op, ErrInvalid, "%s has invalid name %q", what, name)
		}
		if names[name] {
			return opError(op, ErrInvalid, "%s: duplicate name %q", what, name)
		}
		names[name] = true
		return nil
	}
	var inputs []int
	var shapes []Shape
	var dtypes []DType
	for i, n := range g.nodes {
		if n == nil {
			return opError(op, ErrInvalid, "node %d is nil", i)
		}
		if n.ID != i {
			return opError(op, ErrInvalid, "node at index %d has ID %d", i, n.ID)
		}
		shapes, dtypes = shapes[:0], dtypes[:0]
		for _, id := range n.Inputs {
			if id < 0 || id >= len(g.nodes) {
				return opError(op, ErrInvalid, "node %d (%s) reads node %d, which does not exist", i, n.Op, id)
			}
			if id >= i {
				return opError(op, ErrInvalid, "node %d (%s) reads node %d, which does not precede it", i, n.Op, id)
			}
			shapes = append(shapes, g.nodes[id].Shape)
			dtypes = append(dtypes, g.nodes[id].DType)
		}
		switch n.Op {
		case OpInput, OpConst:
			if len(n.Inputs) != 0 {
				return opError(op, ErrInvalid, "node %d (%s) has inputs", i, n.Op)
			}
			if p := shapeProblem(n.Shape); p != "" {
				return opError(op, ErrShape, "node %d (%s %s): %s", i, n.Op, n.Name, p)
			}
			if n.DType != Float16 {
				return opError(op, ErrInvalid, "node %d (%s %s) has dtype %v, want fp16", i, n.Op, n.Name, n.DType)
			}
			if n.Op == OpInput {
				inputs = append(inputs, i)
				if err := claim(fmt.Sprintf("input node %d", i), n.Name); err != nil {
					return err
				}
				continue
			}
			if len(n.Data) != n.Shape.Size() {
				return opError(op, ErrShape, "const node %d %q has %d values, shape %v needs %d", i, n.Name, len(n.Data), n.Shape, n.Shape.Size())
			}
			if n.Name == "" && len(n.Shape) == 0 {
				continue // an anonymous scalar
			}
			if err := claim(fmt.Sprintf("const node %d", i), n.Name); err != nil {
				return err
			}
		default:
			s, dt, err := infer(n.Op, shapes, dtypes, &n.Attrs)
			if err != nil {
				return fmt.Errorf("dataflow: verify: node %d: %w", i, err)
			}
			if !s.Equal(n.Shape) || dt != n.DType {
				return opError(op, ErrShape, "node %d (%s) has shape %v %v, its inputs give %v %v", i, n.Op, n.Shape, n.DType, s, dt)
			}
			if n.Name != "" && !validName(n.Name) {
				return opError(op, ErrInvalid, "node %d (%s) has invalid name %q", i, n.Op, n.Name)
			}
		}
	}
	if len(inputs) != len(g.inputs) {
		return opError(op, ErrInvalid, "graph lists %d inputs but has %d input nodes", len(g.inputs), len(inputs))
	}
	for k, id := range g.inputs {
		if id != inputs[k] {
			return opError(op, ErrInvalid, "graph input %d is node %d, want input node %d", k, id, inputs[k])
		}
	}
	for _, o := range g.outputs {
		if o.Node < 0 || o.Node >= len(g.nodes) {
			return opError(op, ErrInvalid, "output %q names node %d, which does not exist", o.Name, o.Node)
		}
		if err := claim("output", o.Name); err != nil {
			return err
		}
	}
	return nil
}
