// Package precision is how anemone gets float64 answers out of fp16
// hardware: range-checked conversion to fp16, exact power-of-two scaling and
// equilibration, limb splitting, compensated matrix products on a device,
// an iterative-refinement driver and error metrics.
//
// # The three tools (docs/ARCHITECTURE.md)
//
//  1. Scale. Every value entering a device is multiplied by a power of two
//     (Pow2Scale, ScaleToFP16: the largest entry into [1, 2), see
//     Pow2Target) or equilibrated (Equilibrate, SqueezeScale), and unscaled
//     on the way out. Scaling by a power of two is exact, so it adds no
//     error; it only decides which values stay in fp16's normal range. A
//     vector whose dynamic range is wider than fp16's moves as several
//     limbs, each with its own exponent (SplitToFP16).
//  2. Compensate. Operands are split into limbs of small balanced integer
//     digits (SplitVector, SplitMatrix) whose products fp16 holds exactly
//     and whose sums the wide float32 accumulator of a matmul holds
//     exactly; each group of limb products comes back as an fp16 (hi, lo)
//     pair, and the host adds the pairs in float64 (MatVec, MatMulPlan).
//  3. Refine. The host keeps x and computes residuals in float64; the
//     device solves for corrections of the scaled residual (Refine).
//
// # Invariants
//
//   - Inputs are never modified; results are new slices or the dst the
//     caller passes.
//   - Every scaling is by a power of two and every exponent is returned or
//     kept, so unscaling is exact: x·2^e·2^−e == x (barring float64
//     underflow of entries more than 2¹⁰²² below a vector's largest).
//   - NaN and ±Inf inputs, values beyond what scaling can bring into fp16
//     range, and fp16 overflow on the device are errors wrapping ErrRange,
//     never silent Infs. Length or dimension mismatches wrap ErrShape,
//     unsupported options ErrInvalid; sizes past a device target's limits
//     fail in lowering (lower.ErrUnsupported). Nothing panics on user input.
//   - Limb digits are integers d with |d| ≤ 2^(bits−1), bits ≤ MaxBits = 6:
//     a product of two digits has magnitude ≤ 2^(2·bits−2) ≤ 1024 and is
//     exact in fp16. A compensated pass sums at most 2^(26−2·bits) such
//     products per output (16384 at 6 bits), so every float32 partial sum
//     is an integer (in units of the pass's power-of-two shift) of magnitude
//     ≤ 2²⁴ and exact; longer contractions are cut into chunks added on the
//     host.
//   - Accuracy claims name the numerics model they hold under: "sim" (the
//     wide float32 accumulator docs/ARCHITECTURE.md states for the ANE) or
//     "sim-narrow" (an fp16 accumulator). Compensated exactness needs the
//     wide accumulator; under sim-narrow a compensated product is still
//     better than a plain one but not exact (see TestLimbTable).
//   - Refine never loops on failure: stagnation, divergence and an
//     exhausted budget are detected and returned (ErrStagnated,
//     ErrDiverged, ErrBudget) together with the best iterate and the
//     residual history.
package precision
