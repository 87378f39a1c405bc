// Package linalg is dense linear algebra on the device: matrix products
// (MatMul, MatVec) in FP16, Compensated and Float64 modes, float64-accurate
// solves with one or many right-hand sides (Solve, SolveMany), inverses
// (Inverse) and the spectral norm (Norm2). Inputs and outputs are gonum
// types; every O(n³) operation runs as matmuls on the device, and the host
// keeps float64 bookkeeping only.
//
// # Products
//
// MatMul and MatVec reuse precision's compiled products (precision.NewMatMul):
// operands scaled by powers of two per row and column, one fp16 pass in FP16
// mode, limb-split operands with exact digit products and (hi, lo) outputs
// in Compensated (5 limbs of 6 bits) and Float64 (9 limbs) mode. Contractions
// longer than the target allows are cut into chunks inside the program;
// A's rows into bands of at most the target's spatial limit, one program
// each.
//
// # Two accumulators
//
// Exact digit sums need the float32 accumulator the ANE's matmul is
// documented to have (the simulator's "sim"). The package measures, once per
// device, whether partial sums are rounded to fp16 instead (the pessimistic
// "sim-narrow"): one dispatch of a three-term dot product whose first
// partial sum needs 24 bits. On such a device FP16 products lose about
// 2⁻¹¹·√(k/2) more (4.7e-3 at k = 1024 against 4.1e-4), Compensated
// products switch to 10 limbs of 3-bit digits (the same 30 bits, digit
// products small enough that the running sums of random data stay exact:
// 1.5e-8 to 1.9e-8 measured, about 3.4 times the device work), Float64 is
// ErrUnsupported (no limb split is exact past 36 bits there), and Solve,
// Inverse and Norm2 reach the same accuracy as on the wide device, at
// that higher cost. Stats.Narrow reports which case applied.
//
// # Solves: Newton–Schulz inverse plus iterative refinement
//
// The host must not factor A. Of the two designs the issue names — GMRES-IR
// (Carson and Higham, SIAM J. Sci. Comput. 39(6), 2017, and 40(2), 2018)
// preconditioned by a device inverse, and LU without pivoting after a
// random butterfly transformation (Parker 1995; Baboulin, Dongarra,
// Herrmann and Tomov, ACM TOMS 39(3), 2013) — this package takes the
// approximate inverse, because everything it needs is a matmul and the
// engine is at its best on matmuls: an LU needs n/b dependent panel steps,
// each a dispatch with the trailing matrix crossing to the host and back,
// and its triangular solves are sequential.
//
//  1. Equilibrate: B = D_r·A·D_c with powers of two (precision.Equilibrate,
//     after Higham, Pranesh and Zounon 2019, Alg. 2.1): exact, every entry
//     in [−1, 1].
//  2. Newton–Schulz on the device: X_{k+1} = β_k·X_k·(2I − β_k·B·X_k) from
//     X_0 = Bᵀ/min(‖B‖₁‖B‖∞, ‖B‖²_F) (Schulz 1933; Ben-Israel and Cohen,
//     SIAM J. Numer. Anal. 3(3), 1966), accelerated as in Pan and Schreiber
//     (SIAM J. Sci. Stat. Comput. 12(5), 1991, §3): β_k = 2/(1 + l + 0.1(1 −
//     l)) for a lower bound l of the spectrum of B·X_k, which the host takes
//     from 24 Lanczos steps on B·X_k (an upper bound of the smallest
//     eigenvalue, which errs on the safe side). The smallest eigenvalues grow
//     about 3.6-fold a step instead of 2-fold, then convergence is
//     quadratic: about log(κ²)/log 3.6 + 4 steps of two products each. The
//     iteration is self-correcting (Söderström and Stewart, SIAM J. Numer.
//     Anal. 11(1), 1974), but in the early steps the singular directions
//     with σ_i/σ_1 below the product's relative error ε are lost in its
//     rounding noise, so a mode reaches κ ≈ 1/(10ε): FP16 about 2e3
//     (with an fp16 accumulator far less: at n = 256 κ = 1e2 already needs
//     Compensated), Compensated (ε ≈ 4e-8) about 1e7. By default the FP16
//     iteration is tried first (cheap), and the Compensated one when FP16
//     cannot bring ‖I − B·X‖_F below ½.
//  3. Refinement (Wilkinson; Higham, Accuracy and Stability of Numerical
//     Algorithms, 2nd ed., ch. 12): the host computes R = B − A·X̂ in float64
//     for all right-hand sides, the device the corrections D_c·X·D_r·R in one
//     program (FP16 when κ∞·2⁻¹¹ ≤ 1/16, compensated otherwise), the host
//     adds them. ‖I − A·X̃‖ < ½ makes every step gain a factor 2 or (in
//     practice) far more, down to the stopping rule ‖b − A·x‖∞/(‖A‖∞‖x‖∞ +
//     ‖b‖∞) ≤ 1e-15 of MAGMA's and cuSOLVER's mixed-precision solvers.
//
// Newton–Schulz is most of a solve's device work, so Solve, SolveMany and
// Inverse keep the last four inverses they found, keyed by the *mat.Dense
// pointer (held weakly), a hash of its contents, the device and the
// Precision asked for: a second solve with the same matrix only refines
// (Stats.Cached; Settings.NoCache turns it off). Matrices of other types
// are not cached.
//
// This is the refinement structure of Carson and Higham's three-precision
// analysis with the device inverse as the low-precision solver; their
// GMRES-IR, which tolerates a worse preconditioner, is not needed while
// Newton–Schulz reaches ‖I − A·X‖ < ½ and is left for matrices beyond that.
//
// Inverse refines the Newton–Schulz inverse the same way: R = I − A·X in
// float64 on the host, X += X·R on the device. Norm2 is subspace iteration
// on AᵀA with device products and float64 Rayleigh–Ritz on the host.
//
// # Invariants
//
//   - The host never factors A and never solves with it; its matrices
//     beyond n×k residuals are Lanczos tridiagonals and Ritz problems of
//     size ≤ 24. Its share of the time stays below a quarter of the
//     simulated device time (TestSolveHostShare), and a device whose
//     outputs are noise makes every solve fail (TestSolveAblation).
//   - Every matmul output stays below 2¹⁴ in magnitude by construction
//     (precision's scaling); every value entering the device is scaled by
//     a power of two; one program per dispatch.
//   - Inputs are never modified. Bad input returns an error wrapping
//     ErrShape, ErrRange, ErrSingular, ErrInvalid or ErrUnsupported, never a
//     panic or a NaN; a result short of its tolerance comes back with
//     ErrNotConverged, whose message carries the history and the condition
//     estimate.
//   - Accuracy claims are tested under both numerics models of the
//     simulator, "sim" (float32 accumulation) and "sim-narrow" (fp16); each
//     function's documentation gives the figures of both where they differ.
//     On the narrow device the exactness of compensated digit sums is
//     data-dependent (it holds for the random matrices tested), not
//     guaranteed.
package linalg
