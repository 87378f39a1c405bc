package linalg

import "errors"

// Errors wrapped by the functions of this package. Every message starts
// with "linalg: " and says what was wrong.
var (
	// ErrShape reports operands whose dimensions do not fit: a product of
	// mismatched matrices, a non-square matrix where a square one is
	// needed, a right-hand side of the wrong length, an empty matrix.
	ErrShape = errors.New("linalg: shape mismatch")
	// ErrRange reports NaN or ±Inf in an input, or a value no power-of-two
	// scaling brings into fp16's range.
	ErrRange = errors.New("linalg: value out of range")
	// ErrSingular reports a matrix that is singular, or so close to it that
	// the device's arithmetic cannot tell: a zero row or column, or a
	// Newton–Schulz iteration that cannot bring ‖I − A·X‖ below 1.
	ErrSingular = errors.New("linalg: matrix is singular to working precision")
	// ErrNotConverged reports a solve, inverse or norm that stopped before
	// reaching its tolerance; the message carries the history and the
	// condition estimate.
	ErrNotConverged = errors.New("linalg: not converged")
	// ErrUnsupported reports a problem past the device's limits.
	ErrUnsupported = errors.New("linalg: unsupported")
	// ErrInvalid reports a setting outside its range (a negative Tol or
	// MaxDispatches, an unknown Precision).
	ErrInvalid = errors.New("linalg: invalid setting")
	// ErrDevice reports device results that fail the host's float64
	// consistency check: a device that does not compute what the program
	// says.
	ErrDevice = errors.New("linalg: device result failed the consistency check")
)
