package dataflow

// THIS FILE IS A STUB listing the builder API; the dataflow implementer
// replaces it with real code (graph.go keeps the types).

// New returns an empty graph.
func New() *Graph { return &Graph{names: map[string]string{}} }

// Err returns the first error recorded while building, or nil.
func (g *Graph) Err() error { return g.err }

// Nodes returns the nodes in topological (creation) order. Callers must not modify them.
func (g *Graph) Nodes() []*Node { return g.nodes }

// Node returns the node behind v, or nil for the zero Value.
func (g *Graph) Node(v Value) *Node { panic("stub") }

// Inputs returns the IDs of the input nodes, in creation order.
func (g *Graph) Inputs() []int { return g.inputs }

// Outputs returns the named outputs, in the order they were declared.
func (g *Graph) Outputs() []Output { return g.outputs }

// Valid reports whether v refers to a node (it is not the zero Value).
func (v Value) Valid() bool { return v.g != nil }

// ID is the node ID of v.
func (v Value) ID() int { return v.id }

// Shape is v's shape (nil for the zero Value).
func (v Value) Shape() Shape { panic("stub") }

// DType is v's element type.
func (v Value) DType() DType { panic("stub") }

// Input declares a named Float16 input of the given shape.
func (g *Graph) Input(name string, shape Shape) Value { panic("stub") }

// Const declares a named constant (a weight); data is copied, row-major.
func (g *Graph) Const(name string, shape Shape, data []float64) Value { panic("stub") }

// Scalar declares an anonymous rank-0 constant.
func (g *Graph) Scalar(v float64) Value { panic("stub") }

// Output names v as a graph output.
func (g *Graph) Output(name string, v Value) { panic("stub") }

func (g *Graph) Add(x, y Value) Value     { panic("stub") }
func (g *Graph) Sub(x, y Value) Value     { panic("stub") }
func (g *Graph) Mul(x, y Value) Value     { panic("stub") }
func (g *Graph) Div(x, y Value) Value     { panic("stub") }
func (g *Graph) Pow(x, y Value) Value     { panic("stub") }
func (g *Graph) Maximum(x, y Value) Value { panic("stub") }
func (g *Graph) Minimum(x, y Value) Value { panic("stub") }

func (g *Graph) Neg(x Value) Value                                    { panic("stub") }
func (g *Graph) Abs(x Value) Value                                    { panic("stub") }
func (g *Graph) Square(x Value) Value                                 { panic("stub") }
func (g *Graph) Sqrt(x Value) Value                                   { panic("stub") }
func (g *Graph) Rsqrt(x Value) Value                                  { panic("stub") }
func (g *Graph) Exp(x Value) Value                                    { panic("stub") }
func (g *Graph) Log(x Value) Value                                    { panic("stub") }
func (g *Graph) Tanh(x Value) Value                                   { panic("stub") }
func (g *Graph) Sigmoid(x Value) Value                                { panic("stub") }
func (g *Graph) Relu(x Value) Value                                   { panic("stub") }
func (g *Graph) Gelu(x Value, mode GeluMode) Value                    { panic("stub") }
func (g *Graph) MatMul(x, y Value, transposeX, transposeY bool) Value { panic("stub") }
func (g *Graph) Conv2D(x, w Value, opts Conv2DOptions) Value          { panic("stub") }
func (g *Graph) ReduceSum(x Value, axes []int, keepDims bool) Value   { panic("stub") }
func (g *Graph) ReduceMean(x Value, axes []int, keepDims bool) Value  { panic("stub") }
func (g *Graph) ReduceMax(x Value, axes []int, keepDims bool) Value   { panic("stub") }
func (g *Graph) Softmax(x Value, axis int) Value                      { panic("stub") }
func (g *Graph) LayerNorm(x Value, axes []int, gamma, beta Value, epsilon float64) Value {
	panic("stub")
}
func (g *Graph) Reshape(x Value, shape Shape) Value           { panic("stub") }
func (g *Graph) Transpose(x Value, perm []int) Value          { panic("stub") }
func (g *Graph) Concat(axis int, xs ...Value) Value           { panic("stub") }
func (g *Graph) Slice(x Value, begin, size []int) Value       { panic("stub") }
func (g *Graph) Pad(x Value, pads []int, value float64) Value { panic("stub") }

// Verify checks a finished graph: no recorded error, at least one output,
// every node's inputs precede it, shapes consistent, names unique.
func Verify(g *Graph) error { panic("stub") }

// Eval computes every output of g in float64 from named inputs (row-major,
// len == the input's Shape.Size()). It is the specification of every op.
func Eval(g *Graph, inputs map[string][]float64) (map[string][]float64, error) { panic("stub") }
