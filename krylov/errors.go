package krylov

import "errors"

// Errors wrapped by the solvers.
var (
	// ErrShape reports mismatched dimensions.
	ErrShape = errors.New("krylov: shape mismatch")
	// ErrInput reports NaN or Inf in the input (b, X0, the initial residual
	// b − A·X0, or ‖A‖∞, including one that overflows float64 or is
	// subnormal) or a setting out of range.
	ErrInput = errors.New("krylov: invalid input")
	// ErrNotSPD reports an operator that is not symmetric positive definite,
	// detected before CG runs (a zero operator, a negative diagonal entry,
	// a Stencil2D or Dense that is not symmetric) or by the iteration (a
	// search direction with pᵀAp < 0).
	ErrNotSPD = errors.New("krylov: operator is not symmetric positive definite")
	// ErrNotConverged reports a solve that stopped before reaching Tol. The
	// result is returned with it, history attached.
	ErrNotConverged = errors.New("krylov: not converged")
	// ErrUnsupported reports a problem past the device's limits (too many
	// unknowns, said when the operator is built) or a mode the operator has
	// no form for.
	ErrUnsupported = errors.New("krylov: unsupported")
)
