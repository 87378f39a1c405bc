package reference

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// them, so callers can test with errors.Is.
var (
	// ErrShape reports mismatched lengths or dimensions, or a non-square
	// matrix where a square one is needed.
	ErrShape = errors.New("reference: shape mismatch")
	// ErrInput reports an invalid argument: an empty problem, NaN or Inf in
	// the data, a negative tolerance, an index out of range.
	ErrInput = errors.New("reference: invalid input")
	// ErrSingular reports a matrix that is singular to working precision.
	ErrSingular = errors.New("reference: matrix is singular")
	// ErrNotConverged reports an iterative solver that stopped (iteration
	// limit or breakdown) before reaching its tolerance. The result returned
	// alongside holds the last iterate and Converged == false.
	ErrNotConverged = errors.New("reference: not converged")
)
