// Package krylov solves linear systems A·x = b with Krylov methods whose
// operator applications run on the Neural Engine in fp16, and whose
// iterate the host keeps in float64.
//
// CG (symmetric positive definite A) is flexible conjugate gradients on the
// host (Notay 2000, "Flexible conjugate gradients", SIAM J. Sci. Comput.
// 22(4), FCG(m) with m = FCGTruncation), preconditioned by a program the
// device applies once per dispatch: for a Stencil2D symmetric about both
// axes, the stencil's exact inverse by sine transforms (FastDiagonalization);
// for any other operator, or with Precond: Polynomial(a), Unroll steps of
// the dot-free Chebyshev iteration (Saad 2003, Iterative Methods for Sparse
// Linear Systems, 2nd ed., Alg. 12.1). GMRES (general A) is flexible
// GMRES(m) on the host (Saad 1993, "A flexible inner-outer preconditioned
// GMRES algorithm", SIAM J. Sci. Comput. 14(2)), one dispatch per step
// applying z ≈ A⁻¹·v: a Newton–Schulz inverse with the acceleration of Pan
// and Schreiber (1991, SIAM J. Sci. Stat. Comput. 12(5)) for a Dense
// matrix, a Chebyshev polynomial for an ellipse holding A's field of
// values (Manteuffel 1977) for any other operator. Both outer iterations
// are flexible and multiply by A in float64, so fp16 rounding on the
// device costs iterations, never accuracy: the host recomputes
// r = b − A·x after each dispatch and stops when ‖r‖₂/‖b‖₂ ≤ Settings.Tol.
// An Operator applies A in float64 on the host (MulVecTo) and in the
// device program (DeviceApply): Dense, Stencil2D or a user type (see the
// Operator example; a GridOperator keeps its vectors on its grid).
//
// Invariants:
//   - Every device value stays in fp16's range by construction: power-of-two
//     scalings keep every conv and matmul output below 2¹⁴, half the
//     engine's cliff; every device dot product is a matmul; no program
//     holds a subnormal constant or multiplies by zero.
//   - The host does bookkeeping only; each program is built once per
//     operator and settings; sizes are checked before any graph is built.
//   - Inputs are never modified; bad input wraps ErrShape, ErrInput,
//     ErrNotSPD or ErrUnsupported; a NaN residual never converges; a solve
//     that misses Tol returns its best iterate with ErrNotConverged, and
//     MaxDispatches bounds every solve.
//
// Settings and Result follow gonum's optimize conventions where the device
// allows. Which device: Settings.Device, or shim.Open("") shared by the
// package. docs/KRYLOV.md gives each invariant and design argument in
// full; docs/RESULTS.md has the iteration counts and timings.
package krylov
