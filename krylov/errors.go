package krylov

import "errors"

// Errors wrapped by the solvers.
var (
	// ErrShape reports mismatched dimensions.
	ErrShape = errors.New("krylov: shape mismatch")
	// ErrInput reports NaN or Inf in the input.
	ErrInput = errors.New("krylov: invalid input")
	// ErrNotSPD reports an operator that is not symmetric positive definite,
	// detected from the CG iteration (a search direction with pᵀAp ≤ 0).
	ErrNotSPD = errors.New("krylov: operator is not symmetric positive definite")
	// ErrNotConverged reports a solve that stopped before reaching Tol. The
	// result is returned with it, history attached.
	ErrNotConverged = errors.New("krylov: not converged")
	// ErrUnsupported reports a problem past the device's limits.
	ErrUnsupported = errors.New("krylov: unsupported")
)
