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
//   - Bad input is reported, never panicked on: every function that can
//     reject its arguments, the test-problem generators (Poisson2D,
//     RandSVD, ...) included, returns an error wrapping one of ErrShape,
//     ErrInput, ErrSingular or ErrNotConverged whose message names the
//     function and the offending value. Functions without an error result
//     (FFT, RelErr, Cond2, IsSPD, ...) signal bad data (nil, empty,
//     mismatched lengths) by an empty, NaN or false result as documented.
//     The exceptions are the indexing contract of the Operator methods and
//     CSR.At and CSR.Row, which panic on out-of-range lengths or indices as
//     slice indexing does, and typed nil pointers (a nil *CSR or *mat.Dense
//     inside a non-nil interface), which are programming errors.
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
