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
// dispatch. Which device: Settings.Device, or shim.Open("") shared by the
// package (the ANE where present, the simulator elsewhere).
//
// Supported lengths are the products of 2, 3 and 5 up to MaxLen = 2¹⁸ (per
// 2-D transform too); any other length is ErrUnsupported with the nearest
// supported lengths in the message.
//
// # Stages
//
// A transform of n ≤ 256 points is one dense DFT matmul. A longer one is the
// four-step FFT (Gentleman and Sande 1966; Bailey 1990, "FFTs in external or
// hierarchical memory", J. Supercomputing 4, §2): n = n₁·n₂ with the input
// index j = j₁·n₂ + j₂, a DFT of length n₁ over j₁, a multiplication by the
// twiddles exp(−2πi·j₂k₁/n), a DFT of length n₂ over j₂, and the output at
// k₁ + n₁·k₂; applied recursively, n splits into the fewest blocks of at
// most 256 points (MaxBlock), as balanced as possible: 4096 = 64·64,
// 65536 = 256·256, 2¹⁸ = 64·64·64. A 2-D transform is the same sequence of
// stages over the blocks of both dimensions, with no twiddles between the
// dimensions.
//
// Complex values travel as real pairs. Before a stage the data is the
// tensor [1, 2f, P, Q]: the channels hold the real and then the imaginary
// parts of the f values of the index digit the stage contracts, P the
// signals and the frequency digits done, Q the index digits to come. A
// stage is a 1×1 conv over the channels with the 2f×2f real form of the
// block's DFT matrix, a constant in the weight blob: a matmul whose
// contraction is 2f real terms, on the engine's wide accumulator. The
// twiddles are elementwise constants on [f, Q], applied to the real and
// imaginary halves (channel slices, never width offsets, which saturate
// above 4094 on M1–M4). A reshape and a rank-5 transpose then bring the
// next digit onto the channels. The host only scales, lays out the input
// and reads the output in digit-reversed order, O(n).
//
// # Scaling
//
// The host scales every signal by a power of two so that its largest
// complex modulus lies in [2¹², 2¹³), and every block is scaled by 2^−s
// with 2^s ≥ f, so that no stage grows the largest modulus: every matmul
// output stays at or below 2¹³ by construction, a factor 4 under the
// engine's matmul cliff of 32752, whatever the input (a constant input
// reaches the bound; the package's tests check it in exact arithmetic). s is
// lowered where 2^−s would make a nonzero entry an fp16 subnormal (the
// engine may flush them), and the input scaling takes the growth left over.
// The output is unscaled on the host, exactly. NaN or ±Inf input, or one
// whose transform would overflow float64, is ErrRange.
//
// # FP16
//
// One pass in fp16. A dense transform removes every rounding but the
// result's: the host splits each scaled input x into a 5-bit head x_h and
// the fp16 tail x_l, each DFT entry W into a 6-bit head W_h and the fp16
// tail W_l, and the conv contracts [x_l | x_h·2⁻¹¹ | x_h] against
// [W_h | W_l·2¹¹ | W_h]: x_h·W_h is exact in fp16 and the small terms are
// 2⁻⁵ of it, so their roundings are below 2⁻¹⁶ (3× the work of a plain
// dense matmul, on at most 512 channels). A staged transform adds, per
// stage, the rounding of the entries, of the products and of the stage
// output, and per twiddle that of its entries, two products and a sum.
// Measured against gonum in float64 (relative L2 error, worst of random
// data, an impulse, a chirp, an off-grid tone and a mixture spanning ten
// orders of magnitude):
//
//   - sim (the wide accumulator the engine has): 2.1e-4 … 3.4e-4 for the
//     dense sizes up to 256, 5.7e-4 … 6.5e-4 staged up to 65536 (the
//     bounds 4e-4 and 1e-3);
//   - sim-narrow (the pessimistic model, fp16 running sums in every conv,
//     subnormals flushed): where a device's Info names such an
//     accumulator, FP16 runs an exact digit program instead (see Narrow
//     accumulators): 1.9e-5 … 1.2e-4 at every size up to 65536.
//
// # Compensated
//
// Every stage runs on fixed-point digits, so that nothing the engine does
// rounds. A tensor of values is held as 6 levels of balanced integer digits
// of 6 bits, v = Σ_m d_m·2^(8 − 6m), |d_m| ≤ 33, on grids fixed by the
// stage's bound 2¹³; the constants (DFT blocks, twiddles) as 5 levels of
// 6-bit digits. A digit product is an integer ≤ 1056, exact in fp16, and
// one conv per limb sum s = p + m ≤ 5 adds the products of its pairs of
// weight and data levels in the wide accumulator, exactly (integers below
// 2²²); its fp16 rounding hi_s and, for s ≤ 3, lo_s = S_s − hi_s from a
// second conv that appends −hi_s to the contraction (precision's lo pass)
// hold S_s exactly. Between stages the device turns the (hi, lo) pieces
// back into digits with exact elementwise arithmetic: a part on a level's
// grid is round(r·2^−a) by (t + 1536) − 1536, the rounding step of Rump,
// Ogita and Oishi's ExtractScalar (2008, "Accurate floating-point
// summation part I", SIAM J. Sci. Comput. 31(1), §3), and the remainder
// r − c·2^a is exact; carries keep the digits small. The twiddle multiply
// is elementwise on digits, each product split into 64·ph + pl and added to
// its level, every sum an integer below 2¹¹. The output pieces are added
// on the host in float64. This is the splitting idea of Ozaki, Ogita, Oishi
// and Rump (2012, "Error-free transformation of matrix multiplication",
// Numer. Algorithms 59, §3) carried through the stages on the device.
// Blocks are at most 64 points (MaxCompensatedBlock): 65536 = 64·32·32.
// The work is 34 block passes per stage against FP16's 1, plus hundreds of
// elementwise ops (634 nodes for 1024 points against FP16's 19), so the
// engine time is modeled 5× FP16's at 1024 points and 70× at 65536,
// bandwidth-bound on the digit arithmetic. Measured: sim 8e-10 … 1.3e-7 up
// to 65536 points, 3.4e-7 for a 2-D 512×128 (four stages; the bound
// 1e-6). On an fp16 running sum the exactness of the 6-bit digit sums is
// lost; the narrow digit program below keeps it.
//
// # Narrow accumulators
//
// On a device that adds a matmul's products in an fp16 running sum (the
// simulator's "sim-narrow"; the engine is measured to accumulate wide), a
// sum of K terms rounds K times, about u16·√K relative: 512-term stages
// miss the FP16 bounds by a factor 10, and the wide digit sums of
// Compensated (up to 2²²) are no longer exact. There both modes run digit
// programs whose every operation is exact in fp16: 3-bit balanced digits
// (|d| ≤ 5, |w| ≤ 4, products ≤ 20) and blocks of at most 32 points, the
// pairs of weight and data levels grouped into convs so that, row by row,
// Σ|w|·5 over a conv's terms stays at most 2¹¹: every partial sum, in
// whatever order the accumulator takes them, is then an integer fp16
// holds, and no lo pass is needed (the twiddle products of a level add up
// exactly as they are too). The constants keep 5 digit levels in FP16 (15
// bits) and 10 in Compensated (30 bits); the data levels grow with the
// stages, since the signal that loses most to fixed digit grids, an
// impulse, sits Π f below the bound after blocks of Π f points: 7 to 11
// levels in FP16, 11 to 13 in Compensated (up to 2¹⁸). Measured under
// sim-narrow: FP16 1.9e-5 … 1.2e-4, Compensated 1.1e-9 … 2.7e-7 up to
// 65536 points. The price is work: 65536 points are four 16-point
// stages, and the modeled M1 time is 129 ms in FP16 and 237 ms in
// Compensated, against 1.3 ms for the one-pass FP16 program and 93 ms for
// the wide Compensated one (lower.Estimate; at 1024 points 1.0 and 2.0 ms
// against 0.24 and 1.1 ms), bandwidth-bound on the digit arithmetic.
//
// # Invariants
//
// Inputs are never modified. One transform (or one batch) is one dispatch
// of one program, built once per plan and batch size; Forward and Inverse
// share it (the inverse is conj(DFT(conj(y)))/n on the host). No program
// holds a subnormal constant: entries that would be one are flushed only
// where the lost term lies far below the result's own rounding (the
// 2¹⁸-point twiddles sin(2π/2¹⁸) ≈ 2.4e-5; tails of split DFT entries below
// 2⁻¹⁷). Bad input is an error wrapping ErrShape, ErrUnsupported or
// ErrRange whose message starts with "fft: "; a program the target cannot
// run wraps ErrUnsupported too. Every result is checked on the host in
// O(n): Parseval's identity and two bins recomputed by their defining sums
// in float64 must agree within a quarter of the RMS bin, far above any
// correct device's error and far below a broken one's, or the transform
// fails with ErrDevice instead of returning a wrong number (a device
// returning noise of the right norm, zeros or scaled results is caught).
// The check runs on x and the result multiplied by the same power of two,
// which brings x's largest part to [1/2, 1), so its sums of squares
// neither overflow nor underflow: the modes' accuracy and the check hold
// for any finite signal whose transform fits in float64, subnormal ones
// included.
package fft
