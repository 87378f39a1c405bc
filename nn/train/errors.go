package train

import "errors"

// Errors wrapped by train.
var (
	// ErrConfig reports a bad configuration: a learning rate ≤ 0 or one
	// whose device factor fp16 cannot carry (below about 4e-9 or above
	// 65504), a β outside [0, 1), a missing network, loss or optimizer.
	ErrConfig = errors.New("train: bad configuration")
	// ErrParam reports a parameter that does not fit the network: a weight
	// naming no input, an input with no weight, a shape mismatch.
	ErrParam = errors.New("train: bad parameter")
	// ErrBatch reports a batch of the wrong size or with a non-finite value,
	// or, for SoftmaxCrossEntropy, a target row that is not a distribution
	// (the all-zero row OneHot gives a label out of range).
	ErrBatch = errors.New("train: bad batch")
	// ErrOverflow reports a forward pass beyond the engine's safe range,
	// which no loss scale can fix.
	ErrOverflow = errors.New("train: overflow")
	// ErrDevice reports a failure of the device.
	ErrDevice = errors.New("train: device failure")
)
