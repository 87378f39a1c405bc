// Package krylov solves linear systems A·x = b with Krylov methods whose
// operator applications run on the Neural Engine in fp16, and whose
// iterate the host keeps in float64.
//
// CG (symmetric positive definite A) is flexible conjugate gradients on the
// host (Notay 2000, "Flexible conjugate gradients", SIAM J. Sci. Comput.
// 22(4), FCG(m) with m = FCGTruncation) preconditioned by a program the
// device applies once per dispatch. For a Stencil2D symmetric about both
// axes (sides up to MaxSpectralSide) the default is the stencil's exact
// inverse, FastDiagonalization: sine transforms as four 1×1 convs and one
// product, 38 device bytes per unknown per dispatch by lower.Estimate, and
// CG reaches 1e-10 in 5–10 dispatches (Poisson and anisotropic stencils,
// 128² to 1024²) whatever the right-hand side, at most 0.05× float64 CG's
// iterations. For every other operator, or with Precond: Polynomial(a),
// each dispatch runs Unroll steps of the Chebyshev
// iteration (Saad 2003, Iterative Methods for Sparse Linear Systems,
// 2nd ed., Alg. 12.1) on [λ_hi/(2k²), λ_hi], λ_hi = ‖2^σ·A‖∞ by
// Gershgorin. The polynomial needs no dot product and no estimate of
// λ_min: it damps A's upper spectrum, and the float64 outer iteration,
// which multiplies by A in float64, handles the rest, so fp16 rounding on
// the device costs outer iterations, never accuracy. Counting every
// application of A (Unroll on the device and one on the host per
// dispatch), CG needs 1.1–1.5× float64 CG's iterations for random
// right-hand sides on Poisson, anisotropic (ε down to 0.01) and
// jumping-coefficient problems; a smooth right-hand side, which float64 CG
// solves in few iterations, costs 1.4–6.5× on constant-coefficient
// stencils: a fixed polynomial does little for the few low modes it
// excites (1.8–4.1× on Poisson in float64 arithmetic already), and the
// device's fp16 directions give every mode some content (see CG), which is
// why a stencil that FastDiagonalization accepts gets that by default. For
// a Stencil2D the polynomial's program holds the state (y, r, d) as three
// channels of one [1, 3, ny, nx] tensor and runs one conv per step, the
// stencil and the vector updates together (12 device bytes per unknown per
// step by lower.Estimate). GMRES (general A) is flexible GMRES(m) on the host
// (Saad 1993, "A flexible inner-outer preconditioned GMRES algorithm",
// SIAM J. Sci. Comput. 14(2)), m = Restart ≤ 32, with one dispatch per
// step applying a device preconditioner z ≈ A⁻¹·v: for a Dense matrix an
// approximate inverse computed on the device once per operator by
// Newton–Schulz with the acceleration of Pan and Schreiber (1991, SIAM J.
// Sci. Stat. Comput. 12(5)), applied as one matmul; for any other operator
// a dot-free Chebyshev polynomial of degree 16 in A for an ellipse holding
// A's field of values (Manteuffel 1977), sixteen device applications of A
// against the host's one. Each program is built once per operator and
// settings and reused by every dispatch and every later solve. The host
// recomputes the true residual r = b − A·x in float64 after each dispatch,
// and stops when ‖r‖₂/‖b‖₂ ≤ Settings.Tol. An Operator is applied both
// ways: in float64 on the host (MulVecTo) and inside the device program
// (DeviceApply); Dense and Stencil2D build the common ones, and a user
// type can implement the interface (see the Operator example), on the
// grid if it implements GridOperator.
//
// Invariants:
//
//   - Every device value is kept inside fp16's comfortable range by
//     construction: the operator is scaled by a power of two
//     (‖2^σ·A‖∞ < 1) and, for a badly scaled dense matrix, by power-of-two
//     diagonals; CG's input residual is scaled to ‖r‖₂ ≤ 2¹² (by 2^−shift
//     more for FastDiagonalization, whose inverse eigenvalues the device
//     multiplies by 2^shift to keep them normal), and each of its
//     polynomial's channels is divided by a power of two chosen from
//     the polynomial's maximum on [0, λ_hi], computed on the host, so that
//     it stays below 2¹³ and every conv and matmul output below 2¹⁴ (half
//     the engine's cliff); b is scaled by a power of two on the host when
//     ‖b‖ is extreme. Every dot product on the device is a matmul, never a
//     reduce_sum (CG's program has none). No program holds a subnormal
//     constant or multiplies by zero.
//   - The host does bookkeeping only: for CG, FCGTruncation directions and
//     their images, two float64 products by A and a few dot products per
//     dispatch; for GMRES, the Arnoldi basis and directions (2m + 1
//     vectors), Gram–Schmidt and the (m+1)×m least squares per step, and
//     one float64 product by A per step (the compensated image of a dense
//     A comes from the device instead). Two checks in the tests hold it to this: a device whose
//     outputs are replaced by noise of their norm makes the solve fail,
//     and the host's time stays below a quarter of the simulated device's.
//   - Precision FP16 multiplies by fl16(A). CG's outer iteration reaches
//     Tol even where κ(A)·2⁻¹¹ ≳ 1 (tested to κ = 1e6): the polynomial in
//     fl16(A) stays positive on A's spectrum, so it remains an SPD
//     preconditioner. Compensated applies a dense A from limb-split
//     digits, so that A·p is known to about twice fp16's precision (for
//     CG, the polynomial is then in A itself; a stencil runs as in FP16).
//     For GMRES on a dense matrix, Compensated runs Newton–Schulz in
//     compensated products (reaching κ ≈ 1e7, against about 2e3 in fp16,
//     though a partly converged fp16 inverse still preconditions: tested to
//     κ = 1e4) and returns A·z with each step; for other operators the
//     modes coincide.
//   - Convergence is tested before any breakdown, and a NaN or infinite
//     residual is never converged. Inputs are never modified. Bad input
//     returns an error wrapping ErrShape, ErrInput, ErrNotSPD or
//     ErrUnsupported, settings a solver ignores are not errors, and those it
//     would have to ignore silently are refused. A solve that does not reach
//     Tol returns, with ErrNotConverged, the best iterate it met (never one
//     worse than x = 0) and its history. Nothing loops forever:
//     MaxDispatches bounds every solve, and stagnation ends it early.
//   - Sizes are checked before any graph is built: a Stencil2D grid, and
//     the grid of a user GridOperator, holds up to MaxGridWidth ×
//     MaxGridHeight points (laid out [1, C, ny, nx], so not limited to one
//     device row, in CG and GMRES alike); a Dense matrix up to
//     MaxDenseUnknowns (past one row its vectors are channel blocks, except
//     in Compensated CG); any other operator at most MaxUnknowns (one
//     device row). Unroll and Restart
//     are bounded by MaxUnroll and MaxRestart, so no setting builds a
//     program without bound.
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
//     FuncEvaluations): a dispatch (one outer CG iteration with Unroll
//     device steps, or one GMRES step) is the unit the host can stop
//     between and the unit of cost, so MaxDispatches bounds it;
//     Result.Iterations counts the device's inner steps. A zero limit means the default here, where in optimize it
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
