// Package linalg is dense linear algebra on the device: products (MatMul,
// MatVec) in FP16, Compensated and Float64 modes, float64-accurate solves
// (Factorize, Solve, SolveMany), inverses (Inverse) and the spectral norm
// (Norm2). Inputs and outputs are gonum types; the O(n³) work runs as
// matmuls on the device, the host keeps float64 bookkeeping of lower order.
//
// Solves are LU with partial pivoting refined by GMRES-IR (Carson and
// Higham, SIAM J. Sci. Comput. 39(6), 2017, and 40(2), 2018; the fp16-LU
// form of Haidar, Tomov, Dongarra and Higham, SC18). A is first scaled by
// powers of two on both sides (Higham, Pranesh and Zounon, SIAM J. Sci.
// Comput. 41(4), 2019, with Ruiz's iteration), so row and column scalings
// cost no accuracy. The elimination is right-looking in panels of b
// columns: the host factors each n×b panel (O(n²·b) in all; for the fp16
// factors in float32 from 256 columns, whose rounding is far below fp16's)
// and the device applies the trailing update A₂₂ −= L₂₁·U₁₂. The whole n×n matrix stays
// resident on the device in fp16 (Session.Carry) and one program per size
// updates it with zero-padded operands: about 3× LU's flops, but one
// compile, no trailing-matrix round trips, O(n·b) host traffic a step.
// This was chosen over size classes (a compile each) and over
// host-resident updates (n² conversions a step). When the fp16
// factors are too weak (large condition estimates of A and of the
// equilibrated B both, or a first refinement step that gains less than
// 1e-3), the matrix is refactored with the trailing matrix in float64 on
// the host and compensated device products.
// Factorization.Cond is LAPACK's dgecon estimator on the factors. The
// host's O(n²) passes (equilibration, the first write of the matrix, the
// refinement's products with B) run on every core, as gonum's LU, the
// baseline, does; the refinement's triangular solves are blocked, so that
// all but their diagonal blocks are matrix–vector products.
//
// Accumulators: compensated products need the float32 accumulator of the
// ANE ("sim"); once per device the package probes whether partial sums are
// rounded to fp16 instead ("sim-narrow"), and then uses 10 limbs of 3 bits
// for Compensated and refuses Float64 (Stats.Narrow).
//
// Invariants: every value written to the device is scaled by a power of
// two into fp16's range, and every matmul output is bounded below 2¹⁴ by
// construction (each function documents how); inputs are never modified;
// bad input returns an error wrapping ErrShape, ErrRange, ErrSingular,
// ErrInvalid or ErrUnsupported, a result short of its tolerance comes back
// with ErrNotConverged and its history, never a panic or a NaN. Stats
// report device dispatches, flops and modeled engine and compile time
// (lower.Estimate, lower.EstimateCompile), and the host's time (the
// simulator's own run time excluded) and flops.
package linalg
