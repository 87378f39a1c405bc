// Package dataflow builds static, shape-checked dataflow graphs of tensor
// operations and evaluates them in float64.
//
// A Graph is built with New and its methods: Input and Const declare named
// tensors, Scalar an anonymous rank-0 constant, the op methods (Add, MatMul,
// Conv2D, ReduceSum, Softmax, LayerNorm, Reshape, Slice, …) append nodes and
// return a Value, and Output names results. Lowering (package lower) turns a
// finished graph into one device program.
//
// Invariants:
//
//   - Sticky first error. Builder methods never panic on user mistakes
//     (a shape mismatch, a bad axis or attribute, an invalid or duplicate
//     name, a zero Value where an operand is required, a Value of another
//     graph). The first mistake is recorded with the op and every shape
//     involved ("dataflow: add: shapes [2 3] and [4 3] do not broadcast:
//     dataflow: shape mismatch"); every later builder call returns the
//     zero Value and does nothing, and Err, Verify, Eval and lowering
//     return that first error, which wraps ErrShape or ErrInvalid.
//   - Shapes are static, of rank ≤ MaxRank (5), every dim ≥ 1, with an
//     element count that fits an int (Input, Const, every op and Verify
//     refuse a larger one, wrapping ErrShape); rank 0 is a scalar. All data
//     is row-major (the last axis varies fastest).
//   - Nodes are appended in topological order: every input ID of a node is
//     smaller than its own ID, and IDs are the nodes' indices in Nodes().
//   - Attributes are stored normalized (negative axes resolved, axes sorted,
//     −1 sizes resolved, conv defaults filled in), so consumers read them
//     as they are.
//   - Names of inputs, consts and outputs are MIL identifiers
//     ([A-Za-z_][A-Za-z0-9_]*), unique across all three. Scalars are consts
//     with an empty Name and take no name.
//   - Inputs and consts are Float16, and every op's result has its
//     operands' dtype. Building is linear in the number of nodes.
//
// Eval is the specification: plain float64 code that defines the meaning of
// every op (following coremltools' MIL definitions where they apply). The
// simulator, the real device and every lowering rewrite are tested against
// it. Verify re-checks a finished graph, including each node's shape against
// what its op infers from its inputs.
//
// A Graph is not safe for concurrent building; a finished graph may be
// evaluated by several goroutines at once.
package dataflow
