// Package precision is how anemone gets float64 answers out of fp16
// hardware: range-checked conversion to fp16, exact power-of-two scaling and
// equilibration, limb splitting, compensated matrix products on a device,
// an iterative-refinement driver and error metrics.
//
// # The three tools (docs/ARCHITECTURE.md)
//
//  1. Scale. Every value entering a device is multiplied by a power of two
//     (Pow2Scale, ScaleToFP16, Pow2Target) or equilibrated (Equilibrate,
//     SqueezeScale), exactly, and unscaled on the way out; a vector wider
//     than fp16's range moves as limbs with their own exponents
//     (SplitToFP16).
//  2. Compensate. Operands are split into limbs of small balanced integer
//     digits (SplitVector, SplitMatrix) whose products fp16 holds exactly
//     and whose sums the wide float32 accumulator of a matmul holds
//     exactly; each group of limb products comes back as an fp16 (hi, lo)
//     pair, and the host adds the pairs in float64 (MatVec, MatMulPlan).
//  3. Refine. The host keeps x and residuals in float64; the device solves
//     for corrections of the scaled residual (Refine).
//
// # Invariants
//
//   - Inputs are never modified. Every scaling is by a power of two and its
//     exponent is kept, so unscaling is exact (barring float64 underflow of
//     entries more than 2¹⁰²² below a vector's largest).
//   - NaN and ±Inf inputs, values no scaling brings into fp16's range and
//     fp16 overflow on the device wrap ErrRange, never silent Infs; length
//     mismatches wrap ErrShape, unsupported options ErrInvalid. Nothing
//     panics on user input.
//   - Limb digits are integers d with |d| ≤ 2^(bits−1), bits ≤ MaxBits = 6,
//     so a digit product (≤ 1024) is exact in fp16, and a pass sums at most
//     2^(26−2·bits) of them, so every float32 partial sum is an exact
//     integer ≤ 2²⁴; longer contractions are cut into chunks.
//   - Accuracy claims name their numerics model, "sim" (a wide float32
//     accumulator) or "sim-narrow" (an fp16 one, under which a compensated
//     product is better than a plain one but not exact).
//   - Refine never loops on failure: stagnation, divergence and an exhausted
//     budget return ErrStagnated, ErrDiverged or ErrBudget with the best
//     iterate and the residual history.
//
// docs/PRECISION.md states each tool and invariant in full.
package precision
