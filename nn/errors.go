package nn

import "errors"

// Errors wrapped by nn. Layer mistakes are recorded in the graph (see
// dataflow.Graph.Fail), so lowering and Graph.Err return them.
var (
	// ErrFormat reports a malformed safetensors file.
	ErrFormat = errors.New("nn: malformed safetensors file")
	// ErrWeight reports a weight that is missing, of a dtype nn does not
	// read, of the wrong shape, or with values that do not fit.
	ErrWeight = errors.New("nn: bad weight")
	// ErrShape reports an activation whose shape does not fit a layer.
	ErrShape = errors.New("nn: shape mismatch")
	// ErrRange reports a value outside what the engine's fp16 numerics
	// take: a non-finite weight, an epsilon in fp16's subnormal range, a
	// scale that does not fit.
	ErrRange = errors.New("nn: value out of range")
)
