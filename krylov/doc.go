// Package krylov solves linear systems A·x = b with Krylov methods run on
// the Neural Engine in fp16 and refined on the host to float64 accuracy.
//
// CG (symmetric positive definite A, optionally Jacobi-preconditioned) and
// GMRES(m) (general A) each unroll their inner iterations into one device
// program, built once per operator and reused by every dispatch and every
// later solve. The host keeps x in float64, recomputes the true residual
// r = b − A·x in float64 after each dispatch, and stops when
// ‖r‖₂/‖b‖₂ ≤ Settings.Tol.
//
// Invariants:
//
//   - Every device vector is scaled into fp16's comfortable range: the
//     operator by a power of two (‖2^σ·A‖∞ < 1) and, for a badly scaled
//     dense matrix, by power-of-two diagonals: CG works on S·A·S (S from the
//     diagonal), GMRES on R·A·C (precision.Equilibrate), while the host keeps
//     the original system, vectors to a fixed norm
//     near √n/2, and any vector whose norm may grow is first divided by its
//     largest entry. Every dot product is a matmul (the engine's wide
//     accumulator), never a reduce_sum (an fp16 accumulator).
//   - CG carries its search direction across dispatches and replaces the
//     residual with the host's float64 one ("reliable updates"); it does not
//     restart. On Poisson 128² it needs 1.3–1.6× the iterations of float64 CG.
//   - Precision FP16 multiplies by fl16(A); it converges while κ(A)·2⁻¹¹ is
//     well below 1 (κ ≤ 1e4 in the tests). Compensated applies a dense A (or
//     a stencil whose scaled coefficients are fp16 numbers) from limb-split
//     digits, so that A·p is known to twice fp16's precision, and lets the
//     device explore while the host minimizes: the device returns its search
//     directions and their images, and the host takes the optimal step over
//     the recent ones in float64 (A-norm for CG over the last 128, residual
//     norm for GMRES over the last 256). Tested to κ = 1e6 (CG) and on
//     nonsymmetric κ = 1e4 (full GMRES).
//   - Inputs are never modified. Bad input returns an error wrapping
//     ErrShape, ErrInput, ErrNotSPD or ErrUnsupported; a solve that does not
//     reach Tol returns its result (Converged false, History attached) with
//     ErrNotConverged. Nothing loops forever: MaxDispatches bounds every solve,
//     and stagnation ends it early.
//
// Which device: Settings.Device, or shim.Open("") shared by the package: the
// ANE where present, the simulator elsewhere (see package shim).
package krylov
