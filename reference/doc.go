// Package reference is anemone's independent float64 oracle: textbook
// solvers, FFTs, dense linear algebra and test problems with known answers,
// built only on the Go standard library and gonum.
//
// The device side (dataflow, lower, shim, precision and the numerical
// packages built on them) is tested against this package, so reference
// must stay independent of it: it imports only the standard library and
// gonum.org/v1/gonum, never another anemone package.
//
// # Invariants
//
//   - All arithmetic is IEEE float64 (complex128 for transforms). Nothing is
//     rounded to fp16 or float32.
//   - Every routine is deterministic: the same inputs (and the same seeded
//     *rand.Rand from math/rand/v2) give bit-identical outputs on one
//     platform. Counts such as CG iterations may differ by one or two between
//     architectures because the Go compiler may fuse multiply-adds on arm64.
//   - Inputs are never modified. Results are freshly allocated.
//   - Functions that take data return an error wrapping one of ErrShape,
//     ErrInput, ErrSingular or ErrNotConverged on bad input; they do not
//     panic on it. The test-problem generators (Poisson2D, RandSVD, ...) and
//     the transforms with no error result panic on impossible sizes or
//     parameters, as gonum's constructors do; those are programming errors.
//   - A solver that does not reach its tolerance returns its last iterate
//     with Converged == false and an error wrapping ErrNotConverged.
//
// # Sign and scaling conventions
//
// The forward DFT is unnormalized with exponent −2πi·jk/n; the inverse carries
// the factor 1/n. Finite-difference operators approximate −Δ (positive
// definite) and are scaled by 1/h², so their eigenvalues grow like 1/h².
// Grid point (x, y) of an nx×ny interior grid is vector index y*nx + x.
package reference
