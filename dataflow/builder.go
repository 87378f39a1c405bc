package dataflow

import (
	"fmt"
	"math"
	"strings"
)

// New returns an empty graph.
func New() *Graph { return &Graph{names: map[string]string{}} }

// Err returns the first error recorded while building, or nil.
// A nil *Graph reports an error wrapping ErrInvalid.
func (g *Graph) Err() error {
	if g == nil {
		return errNilGraph
	}
	return g.err
}

var errNilGraph = fmt.Errorf("dataflow: nil graph: %w", ErrInvalid)

// Nodes returns the nodes in topological (creation) order. Callers must not modify them.
func (g *Graph) Nodes() []*Node {
	if g == nil {
		return nil
	}
	return g.nodes
}

// NumNodes is the number of nodes in g, len(g.Nodes()).
func (g *Graph) NumNodes() int {
	if g == nil {
		return 0
	}
	return len(g.nodes)
}

// Node returns the node behind v, or nil for the zero Value or a value of
// another graph.
func (g *Graph) Node(v Value) *Node {
	if g == nil || v.g != g || v.id < 0 || v.id >= len(g.nodes) {
		return nil
	}
	return g.nodes[v.id]
}

// Inputs returns the IDs of the input nodes, in creation order.
func (g *Graph) Inputs() []int {
	if g == nil {
		return nil
	}
	return g.inputs
}

// Outputs returns the named outputs, in the order they were declared.
func (g *Graph) Outputs() []Output {
	if g == nil {
		return nil
	}
	return g.outputs
}

// Valid reports whether v refers to a node (it is not the zero Value).
func (v Value) Valid() bool { return v.g != nil }

// ID is the node ID of v.
func (v Value) ID() int { return v.id }

// node returns the node behind v, or nil.
func (v Value) node() *Node {
	if v.g == nil || v.id < 0 || v.id >= len(v.g.nodes) {
		return nil
	}
	return v.g.nodes[v.id]
}

// Shape is v's shape (nil for the zero Value). The result is a copy.
func (v Value) Shape() Shape {
	n := v.node()
	if n == nil {
		return nil
	}
	return cloneShape(n.Shape)
}

// cloneShape copies s; unlike Shape.Clone it returns a non-nil Shape{} for
// rank 0, so that only the zero Value has a nil shape.
func cloneShape(s Shape) Shape { return append(Shape{}, s...) }

// DType is v's element type (0 for the zero Value).
func (v Value) DType() DType {
	n := v.node()
	if n == nil {
		return 0
	}
	return n.DType
}

// opError builds the error of a builder, Verify or Eval step:
// "dataflow: <op>: <message>: <sentinel>".
func opError(op Op, sentinel error, format string, args ...any) error {
	return fmt.Errorf("dataflow: %s: %s: %w", op, fmt.Sprintf(format, args...), sentinel)
}

// fail records err as g's first error.
func (g *Graph) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// failf records opError(op, sentinel, format, args...) as g's first error.
func (g *Graph) failf(op Op, sentinel error, format string, args ...any) {
	g.fail(opError(op, sentinel, format, args...))
}

// validName reports whether s is a MIL identifier, [A-Za-z_][A-Za-z0-9_]*.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// checkName validates a user name and reserves it for what ("an input",
// "a const" or "an output"). It reports false after recording an error.
func (g *Graph) checkName(op Op, name, what string) bool {
	if !validName(name) {
		g.failf(op, ErrInvalid, "invalid name %q (want [A-Za-z_][A-Za-z0-9_]*)", name)
		return false
	}
	if g.names == nil {
		g.names = map[string]string{}
	}
	if prev, ok := g.names[name]; ok {
		g.failf(op, ErrInvalid, "duplicate name %q (already names %s)", name, prev)
		return false
	}
	g.names[name] = what
	return true
}

// shapeProblem describes what is wrong with a declared shape (rank above
// MaxRank, a dim below 1, more elements than an int counts), or returns "".
func shapeProblem(s Shape) string {
	if len(s) > MaxRank {
		return fmt.Sprintf("shape %v has rank %d, more than %d", s, len(s), MaxRank)
	}
	for i, d := range s {
		if d < 1 {
			return fmt.Sprintf("shape %v has dim %d = %d, want ≥ 1", s, i, d)
		}
	}
	if _, ok := elements(s); !ok {
		return fmt.Sprintf("shape %v has more elements than an int counts (%d): make the dims smaller", s, math.MaxInt)
	}
	return ""
}

// usable reports whether builder calls may proceed.
func (g *Graph) usable() bool { return g != nil && g.err == nil }

// push appends n, giving it the next ID, and returns its Value.
func (g *Graph) push(n *Node) Value {
	n.ID = len(g.nodes)
	g.nodes = append(g.nodes, n)
	return Value{g: g, id: n.ID}
}

// Input declares a named Float16 input of the given shape (copied). The name
// must be a MIL identifier, unique among inputs, consts and outputs.
func (g *Graph) Input(name string, shape Shape) Value {
	if !g.usable() {
		return Value{}
	}
	if p := shapeProblem(shape); p != "" {
		g.failf(OpInput, ErrShape, "%q: %s", name, p)
		return Value{}
	}
	if !g.checkName(OpInput, name, "an input") {
		return Value{}
	}
	v := g.push(&Node{Op: OpInput, Name: name, Shape: cloneShape(shape), DType: Float16})
	g.inputs = append(g.inputs, v.id)
	g.remember(name, v)
	return v
}

// Const declares a named Float16 constant (a weight); data is copied,
// row-major, and len(data) must equal shape.Size(). The name must be a MIL
// identifier, unique among inputs, consts and outputs.
func (g *Graph) Const(name string, shape Shape, data []float64) Value {
	if !g.usable() {
		return Value{}
	}
	if p := shapeProblem(shape); p != "" {
		g.failf(OpConst, ErrShape, "%q: %s", name, p)
		return Value{}
	}
	if len(data) != shape.Size() {
		g.failf(OpConst, ErrShape, "%q has %d values, shape %v needs %d", name, len(data), shape, shape.Size())
		return Value{}
	}
	if !g.checkName(OpConst, name, "a const") {
		return Value{}
	}
	v := g.push(&Node{Op: OpConst, Name: name, Shape: cloneShape(shape), DType: Float16,
		Data: append([]float64(nil), data...)})
	g.remember(name, v)
	return v
}

func (g *Graph) remember(name string, v Value) {
	if !v.Valid() {
		return
	}
	if g.byName == nil {
		g.byName = map[string]int{}
	}
	g.byName[name] = v.id
}

// ValueOf returns the Value of node id, for tools that walk Nodes (and,
// for instance, declare extra outputs to inspect intermediates).
func (g *Graph) ValueOf(id int) (Value, bool) {
	if g == nil || id < 0 || id >= len(g.nodes) {
		return Value{}, false
	}
	return Value{g: g, id: id}, true
}

// Lookup returns the input or const named name, so that code adding ops to
// a graph can share one constant (a weight) between many uses.
func (g *Graph) Lookup(name string) (Value, bool) {
	if g == nil {
		return Value{}, false
	}
	id, ok := g.byName[name]
	if !ok {
		return Value{}, false
	}
	return Value{g: g, id: id}, true
}

// Scalar declares an anonymous rank-0 Float16 constant. Its node is an
// OpConst with an empty Name and Shape []; it takes no name from the
// namespace of inputs, consts and outputs, so it never clashes with them.
func (g *Graph) Scalar(v float64) Value {
	if !g.usable() {
		return Value{}
	}
	return g.push(&Node{Op: OpConst, Shape: Shape{}, DType: Float16, Data: []float64{v}})
}

// Output names v as a graph output. The name must be a MIL identifier,
// unique among inputs, consts and outputs; one value may be output under
// several names.
func (g *Graph) Output(name string, v Value) {
	const op Op = "output"
	if _, ok := g.operands(op, []string{"value"}, v); !ok {
		return
	}
	if !g.checkName(op, name, "an output") {
		return
	}
	g.outputs = append(g.outputs, Output{Name: name, Node: v.id})
}

// operands checks the operands of a builder call and returns their shapes.
// It reports false (after recording an error, unless one was recorded
// before) when the call must not proceed. labels name the operands in
// messages; a missing label reads "operand i".
func (g *Graph) operands(op Op, labels []string, vals ...Value) ([]Shape, bool) {
	if !g.usable() {
		return nil, false
	}
	shapes := make([]Shape, len(vals))
	for i, v := range vals {
		label := fmt.Sprintf("operand %d", i)
		if i < len(labels) {
			label = labels[i]
		}
		switch {
		case v.g == nil:
			g.failf(op, ErrInvalid, "%s is the zero Value", label)
			return nil, false
		case v.g != g:
			g.failf(op, ErrInvalid, "%s belongs to another graph", label)
			return nil, false
		case v.id < 0 || v.id >= len(g.nodes):
			g.failf(op, ErrInvalid, "%s refers to no node (id %d)", label, v.id)
			return nil, false
		}
		shapes[i] = g.nodes[v.id].Shape
	}
	return shapes, true
}

// emit infers the result shape of op on vals (already checked by operands),
// records any error, and appends the node.
func (g *Graph) emit(op Op, attrs Attrs, shapes []Shape, vals ...Value) Value {
	dtypes := make([]DType, len(vals))
	for i, v := range vals {
		dtypes[i] = g.nodes[v.id].DType
	}
	shape, dtype, err := infer(op, shapes, dtypes, &attrs)
	if err != nil {
		g.fail(err)
		return Value{}
	}
	ids := make([]int, len(vals))
	for i, v := range vals {
		ids[i] = v.id
	}
	return g.push(&Node{Op: op, Inputs: ids, Shape: cloneShape(shape), DType: dtype, Attrs: attrs})
}

// String lists g: one line per node with its ID, op, name, input IDs,
// shape, dtype and attributes, then the outputs and the recorded error.
func (g *Graph) String() string {
	if g == nil {
		return "dataflow.Graph(nil)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dataflow.Graph: %d nodes, %d inputs, %d outputs\n", len(g.nodes), len(g.inputs), len(g.outputs))
	for _, n := range g.nodes {
		if n == nil {
			b.WriteString("  <nil node>\n")
			continue
		}
		fmt.Fprintf(&b, "  %%%d = %s", n.ID, n.Op)
		if n.Name != "" {
			fmt.Fprintf(&b, " %s", n.Name)
		}
		if len(n.Inputs) > 0 {
			b.WriteString("(")
			for i, id := range n.Inputs {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%%%d", id)
			}
			b.WriteString(")")
		}
		fmt.Fprintf(&b, " %v %v", n.Shape, n.DType)
		if a := attrString(n); a != "" {
			b.WriteString(" {" + a + "}")
		}
		b.WriteString("\n")
	}
	for _, o := range g.outputs {
		fmt.Fprintf(&b, "  output %s = %%%d\n", o.Name, o.Node)
	}
	if g.err != nil {
		fmt.Fprintf(&b, "  error: %v\n", g.err)
	}
	return b.String()
}

// attrString formats the attributes n's op uses.
func attrString(n *Node) string {
	a := &n.Attrs
	if d, ok := unaryOps[n.Op]; ok && d.show != nil {
		return d.show(a)
	}
	switch n.Op {
	case OpConst:
		if len(n.Data) == 1 {
			return fmt.Sprintf("val=%g", n.Data[0])
		}
	case OpMatMul:
		return fmt.Sprintf("transpose_x=%v transpose_y=%v", a.TransposeX, a.TransposeY)
	case OpConv2D:
		c := a.Conv
		return fmt.Sprintf("strides=%v pads=%v dilations=%v groups=%d", c.Strides, c.Pads, c.Dilations, c.Groups)
	case OpReduceSum, OpReduceMean, OpReduceMax:
		return fmt.Sprintf("axes=%v keep_dims=%v", a.Axes, a.KeepDims)
	case OpSoftmax, OpConcat:
		return fmt.Sprintf("axis=%d", a.Axis)
	case OpLayerNorm:
		return fmt.Sprintf("axes=%v gamma=%v beta=%v epsilon=%g", a.Axes, a.HasGamma, a.HasBeta, a.Epsilon)
	case OpReshape:
		return fmt.Sprintf("shape=%v", a.Shape)
	case OpTranspose:
		return fmt.Sprintf("perm=%v", a.Perm)
	case OpSlice:
		return fmt.Sprintf("begin=%v size=%v", a.Begin, a.Size)
	case OpPad:
		return fmt.Sprintf("pads=%v value=%g", a.Pads, a.PadValue)
	}
	return ""
}
