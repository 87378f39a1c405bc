package lower

import "errors"

// Errors wrapped by Lower.
var (
	// ErrUnsupported reports a graph the target cannot run: an op it lacks,
	// a dimension past its limits, a dtype it does not take.
	ErrUnsupported = errors.New("lower: unsupported by target")
)

// ErrRange reports a constant that does not fit fp16.
var ErrRange = errors.New("lower: value out of fp16 range")
