// Package fft computes discrete Fourier transforms on the Neural Engine:
// complex, real, 2-D and batched, each transform one device program run in
// one dispatch, in FP16 (one pass) or Compensated (limb-split, exact
// products) precision.
//
// Forward is the unnormalized DFT X_k = Σ_j x_j·exp(−2πi·jk/n), the sign
// and scaling of gonum's fourier.CmplxFFT.Coefficients; Inverse divides by
// n, so Inverse(Forward(x)) ≈ x. RealForward returns the n/2+1
// coefficients gonum's fourier.FFT.Coefficients does; Forward2D transforms
// row-major data. NewPlan and NewPlan2D compile a transform once; the
// package functions keep their plans in a cache, so repeated calls compile
// nothing. ForwardMany and InverseMany transform k signals in one
// dispatch. Lengths are the products of 2, 3 and 5 up to MaxLen = 2¹⁸.
// Which device: Settings.Device, or shim.Open("") shared by the package
// (the ANE where present, the simulator elsewhere).
//
// Up to MaxBlock = 256 points a transform is one dense DFT matmul; a longer
// one is the four-step FFT (Gentleman and Sande 1966; Bailey 1990, "FFTs in
// external or hierarchical memory", J. Supercomputing 4, §2) applied
// recursively: each stage is a 1×1 conv with the real form of a block's DFT
// matrix, and twiddles are elementwise constants between stages. The host
// scales each signal by a power of two so that no matmul output exceeds
// 2¹³, a factor 4 under the engine's 32752 cliff, whatever the input. FP16
// splits inputs and DFT entries into heads and tails, so that a dense
// transform rounds only its result. Compensated runs every stage on
// fixed-point digits whose products and sums are exact, the splitting of
// Ozaki, Ogita, Oishi and Rump (2012, "Error-free transformation of matrix
// multiplication", Numer. Algorithms 59) with the rounding step of Rump,
// Ogita and Oishi's ExtractScalar (2008, SIAM J. Sci. Comput. 31(1)). On a
// device whose matmul sums in fp16, both modes run digit programs in which
// no operation rounds. docs/FFT.md derives all of this.
//
// Invariants: inputs are never modified; one transform (or batch) is one
// dispatch of one program, and Forward and Inverse share it; no program
// holds a subnormal constant; bad input is an error wrapping ErrShape,
// ErrUnsupported or ErrRange. Every result is checked on the host in O(n),
// by Parseval's identity and two bins recomputed in float64, so that a
// device computing a wrong transform gives ErrDevice, never a wrong number.
// Accuracy by size and mode: docs/RESULTS.md.
package fft
