// Package krylov solves linear systems A·x = b with Krylov methods run on
// the Neural Engine in fp16 and refined on the host to float64 accuracy.
//
// CG (symmetric positive definite A, optionally Jacobi-preconditioned) and
// GMRES(m) (general A) each unroll their inner iterations into one device
// program, built once per operator and settings and reused by every
// dispatch and every later solve. The host keeps x in float64, recomputes
// the true residual r = b − A·x in float64 after each dispatch, and stops
// when ‖r‖₂/‖b‖₂ ≤ Settings.Tol. An Operator is applied both ways: in
// float64 on the host (MulVecTo) and inside the device program
// (DeviceApply); Dense and Stencil2D build the common ones, and a user type
// can implement the interface (see the Operator example).
//
// Invariants:
//
//   - Every device vector is scaled into fp16's comfortable range: the
//     operator by a power of two (‖2^σ·A‖∞ < 1) and, for a badly scaled
//     dense matrix, by power-of-two diagonals (CG works on S·A·S, GMRES on
//     R·A·C, while the host keeps the original system); vectors to a fixed
//     norm near √n/2; b by a power of two on the host when ‖b‖ is extreme.
//     Every dot product is a matmul (the engine's wide accumulator), never
//     a reduce_sum (an fp16 accumulator). No program holds a subnormal
//     constant or multiplies by zero.
//   - CG carries its search direction across dispatches and replaces the
//     residual with the host's float64 one ("reliable updates"); it does not
//     restart. GMRES's restarts are steps of iterative refinement, each
//     guarded so that no cycle increases the residual.
//   - Precision FP16 multiplies by fl16(A); it converges while κ(A)·2⁻¹¹ is
//     well below 1 (κ ≤ 1e4 in the tests). Compensated applies a dense A (or
//     a stencil whose scaled coefficients are fp16 numbers) from limb-split
//     digits, so that A·p is known to twice fp16's precision; the device
//     returns its search directions and their images, and the host takes
//     the optimal step over the recent ones in float64. Tested to κ = 1e6
//     (CG) and on nonsymmetric κ = 1e4 (full GMRES).
//   - Convergence is tested before any breakdown, and a NaN or infinite
//     residual is never converged. Inputs are never modified. Bad input
//     returns an error wrapping ErrShape, ErrInput, ErrNotSPD or
//     ErrUnsupported, settings a solver ignores are not errors, and those it
//     would have to ignore silently are refused. A solve that does not reach
//     Tol returns, with ErrNotConverged, the best iterate it met (never one
//     worse than x = 0) and its history. Nothing loops forever:
//     MaxDispatches bounds every solve, and stagnation ends it early.
//   - Operators hold at most MaxUnknowns unknowns (one device row), checked
//     when they are built; Unroll and Restart are bounded by MaxUnroll and
//     MaxRestart, so no setting builds a program without bound.
//   - Stats report the time spent building, on the device (the simulator's
//     time, when it is the device) and on the host, and the engine time,
//     bytes and flops of every dispatch as lower.Estimate models them for
//     the device's ANE family (ane-m1 for the simulator). CGProgram and
//     GMRESProgram return the program one dispatch runs, to price it for
//     any family.
//
// # Settings and Result against gonum's conventions
//
// gonum (v0.17) has no linear Krylov solver: mat solves by factorization
// (LU, Cholesky, QR), and optimize.CG is the nonlinear conjugate gradient
// method of optimize.Minimize. The shape here follows optimize's
// conventions where they fit: the solver takes the problem, the start and
// a *Settings whose nil or zero fields mean defaults; vectors are
// []float64, as optimize's initial X and Location.X are; the Result embeds
// its Stats, as optimize.Result does.
//
// Where they differ, the device is why:
//
//   - Limits count dispatches, not iterations (optimize's MajorIterations,
//     FuncEvaluations): a dispatch of Unroll iterations (CG) or one cycle
//     (GMRES) is the unit the host can stop between and the unit of cost, so
//     MaxDispatches bounds it; Result.Iterations still counts inner
//     iterations. A zero limit means the default here, where in optimize it
//     means no limit: a device solve must always end.
//   - Convergence is one fixed test, the float64 relative residual
//     ‖b − A·x‖₂/‖b‖₂ ≤ Tol computed on the host, not a pluggable Converger:
//     the device's own residual is fp16 and drifts from the true one, so
//     only the host's recomputed residual may decide.
//   - The outcome is Converged and an error wrapping a sentinel, not a
//     Status enum: errors.Is(err, ErrNotConverged) distinguishes an
//     unfinished solve (its best iterate returned) from bad input, in the
//     standard library's idiom. The Result is a value, not a pointer.
//   - Settings carry what only a device solver needs: Device, Unroll,
//     Restart and Precision (how exactly the device applies A), and Stats
//     split time into build, device and host, with the modeled engine cost
//     beside them, since the simulator's time says nothing about the
//     engine's.
//
// Which device: Settings.Device, or shim.Open("") shared by the package: the
// ANE where present, the simulator elsewhere (see package shim).
package krylov
