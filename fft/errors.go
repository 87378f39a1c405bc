package fft

import "errors"

// Errors wrapped by the functions of this package. Every message starts
// with "fft: " and says what was wrong and what to do.
var (
	// ErrShape reports an empty input, or lengths that do not match the
	// plan or the stated dimensions.
	ErrShape = errors.New("fft: shape mismatch")
	// ErrUnsupported reports a transform length that is not a product of
	// 2, 3 and 5 within the supported range, or a precision mode the
	// package does not offer; the message names the nearest supported
	// lengths.
	ErrUnsupported = errors.New("fft: unsupported")
	// ErrRange reports input that no power-of-two scaling brings into the
	// device's fp16 range: NaN, ±Inf, or magnitudes whose transform would
	// overflow float64.
	ErrRange = errors.New("fft: value out of range")
	// ErrDevice reports a device result that fails the host's consistency
	// check (Parseval's identity and two bins recomputed in float64): the
	// device is faulty, or its numerics are not those of the model.
	ErrDevice = errors.New("fft: device result failed the consistency check")
)
