// Package sim is the simulator device: it executes a lowered program from its
// MIL text and weight blob alone, with the Apple Neural Engine's measured fp16
// numerics and correctness cliffs. It registers itself with package shim as
// "sim" (the wide accumulator the hardware has) and "sim-narrow" (a
// pessimistic variant).
//
// # Strictness
//
// Compile parses the MIL text with lower/mil, reads the blob and checks the
// program the way the engine would, so that a program the simulator accepts
// is one the ANE should accept too:
//
//   - exactly one function, main, with the target's opset; its inputs and
//     outputs are the program's surfaces, each tensor<fp16, [1, C, 1, S]>,
//     and every logical input and output is a band of rows of one of them;
//     on a target with PackedIO (the simulator's) main binds exactly one
//     input and one output surface;
//   - every op is one of the supported set below and every keyword argument is
//     known for that op, required ones present, of the right kind: fp16 tensors
//     for data, named consts (int32, bool, string or fp16) for parameters;
//     inline literals are not accepted as arguments;
//   - every declared output type equals the inferred type (dtype and shape);
//   - every tensor lies within the target's limits (rank ≤ MaxRank, last
//     dimension ≤ MaxSpatial, other dimensions ≤ MaxChannels, conv kernel ≤
//     MaxKernel, contraction ≤ MaxSpatial);
//   - weights are BLOBFILE(path = "@model_path/weights/weight.bin", offset)
//     where offset names an fp16 metadata record of the right byte size;
//     every fp16 tensor constant (rank ≥ 1) comes from the blob: inline
//     tensor literals are refused, as no public program that runs on the
//     engine has one (scalar fp16 constants and int32, bool and string
//     parameters stay inline);
//   - constants are finite fp16 values, none subnormal (inline or in the
//     blob: whether the engine flushes subnormals is unmeasured) and no
//     nonzero literal that rounds to zero;
//   - concat takes at most two inputs (wider concats are reported
//     rejected); mul by a constant zero, scalar or all-zero tensor, is
//     refused (mul(reduce_output, 0) is reported to fail to compile);
//   - the program computes something: it has a compute op, and no output
//     is an input or a const, unchanged or only reshaped (the engine's
//     runtime is reported to crash on empty programs);
//   - rsqrt is rejected (the ANE rejects it; use pow(x, -0.5)), and so are
//     rank-1 matmul operands, pad modes other than "constant", fp32 constants
//     and every op outside the supported set.
//
// Rejections for features the engine lacks or limits it imposes wrap
// shim.ErrUnsupported; malformed programs wrap ErrInvalid; both carry the
// line:col of the offending statement. A MIL syntax error comes back wrapping
// the parser's *mil.SyntaxError.
//
// Supported ops: const, add, sub, mul, real_div, pow, maximum, minimum
// (numpy broadcasting), abs, square, sqrt, exp, log, tanh, sigmoid, relu,
// gelu, matmul, conv (2-D), reduce_sum, reduce_mean, reduce_max, softmax,
// layer_norm, reshape, transpose, concat, slice_by_size, pad.
//
// # The numerics model (the package invariant)
//
// Every tensor is stored as IEEE binary16, rounded to nearest even; overflow
// gives ±Inf and subnormals are kept. Values are held as float32 slices that
// carry fp16 values exactly.
//
//   - Elementwise add, sub, mul, real_div, square, sqrt: the exact result of
//     the fp16 operands rounded once to fp16. They are computed in float32
//     (sqrt in float64, then float32) and then rounded to fp16: float32's
//     24-bit significand has at least 2·11+2 bits, so this double rounding is
//     innocuous (Figueroa's theorem) and the result equals the exact value
//     rounded once. maximum, minimum, abs and relu are exact.
//   - pow, exp, log, tanh, sigmoid, gelu: the float64 result of the fp16
//     operands converted to float32, then rounded to fp16 (a float32 result
//     rounded to fp16). log(x, epsilon) takes ln(x + ε) with the exact sum.
//   - matmul and conv: the operands are fp16; each product is rounded to fp16;
//     the products are summed in float32 in their natural order (matmul:
//     k = 0…K−1; conv: over input channels, then kernel rows, then kernel
//     columns, padding positions holding zeros); the sum is rounded to fp16.
//     Under Narrow the running sum is also rounded to fp16 after every
//     addition. A conv bias is added afterwards as an fp16 add: the rounded
//     sum plus the bias, rounded again.
//   - reduce_sum and reduce_mean: a narrow fp16 running sum in row-major index
//     order over the reduced elements, each partial sum rounded to fp16 (a sum
//     of 4096 ones stalls at 2048); the mean is that sum divided by the count,
//     rounded once. reduce_max is exact.
//   - softmax and layer_norm (a model choice: the engine's kernels are not
//     measured): computed in float32 from the fp16 inputs (max, exponentials,
//     sum and quotient; mean, biased variance, 1/√(σ²+ε), scale and shift),
//     each output rounded once to fp16.
//   - reshape, transpose, concat, slice_by_size and pad move fp16 values
//     without changing them.
//
// Wide is the model of the hardware; Narrow is a pessimistic variant for
// accuracy claims that must hold either way.
//
// # Cliffs
//
// Both variants reproduce the engine's failures below fp16's range:
//
//   - matmul and conv: when the accumulated sum s (the float32 sum under
//     Wide, the fp16 running sum under Narrow) exceeds 32752 = 65504/2 in
//     magnitude, the output is ±Inf with s's sign; otherwise it is s rounded
//     to fp16. 32752 is itself an fp16 value, the largest below 2¹⁵, so an
//     output is never finite above it. Only the output counts, not the
//     partial sums (they overflow at fp16's range, as ever). A conv bias is
//     added to the rounded output as an fp16 add, and the same rule applies
//     to that sum. Under Narrow, whose sum is an fp16 value, the rule reads
//     |s| ≥ 32768: the variants share the cliff, Narrow only loses more
//     precision on the way.
//   - slice_by_size on a target with lower.Target.WidthSliceClamp (the
//     simulator's, and M1–M4; not M5): a slice whose begin on the last axis
//     is nonzero turns every |x| > 4094 into ±Inf. Slices at channel
//     offsets, as the packed I/O of every lowered program uses, are exact.
//
// Narrow, as a pessimistic model of the engine, also
//
//   - flushes subnormals to zero (keeping the sign) in every op's operands
//     and results: the input surfaces before the first op, every op's
//     output after it (products inside a matmul or conv are not flushed);
//   - gives sqrt, pow, exp, log, tanh, sigmoid and gelu (the engine's are
//     table-based, not correctly rounded) a relative error of up to 2⁻¹⁰:
//     the float64 result f times 1 + δ, then rounded to float32 and fp16,
//     where δ is a multiple of 2⁻²⁰ in [−2⁻¹⁰, 2⁻¹⁰] given by a 32-bit
//     integer hash of the op and its operands' fp16 bit patterns. δ is
//     deterministic: a run is reproducible on every machine, and
//     |out − f| ≤ 2⁻¹⁰·|f| + (2⁻¹¹ + 2⁻²⁴)(1 + 2⁻¹⁰)·|f| in the normal range.
//
// # Headroom
//
// A test can ask how close a run came to the cliffs. Device.RecordHeadroom
// turns recording on; Device.Headroom then returns, for the last run that
// recorded, each computing op's largest |output| and its cliff (32752 for
// matmul and conv, 4094 for a clamped width-offset slice, 65504 for the
// rest), so that a test asserts a margin such as Ratio() ≤ 0.5. Backend
// finds the simulator behind the *shim.Cache that shim.Open returns.
//
// # Running
//
// Executable.Run rounds each input to fp16 and rejects a value that rounds
// to ±Inf or is NaN (shim.ErrRange, naming the input and index); it packs the
// logical inputs into their bands of the [1, C, 1, S] input surface,
// executes the plan and unpacks the outputs from the output surface. An output holding ±Inf or NaN is returned together
// with an error wrapping shim.ErrRange that names the output and index: fp16
// overflow is detected, never silent. Runs on one device are serialized, as
// on the engine; Compile and Run are safe for concurrent use. matmul and conv
// spread their work over runtime.GOMAXPROCS goroutines.
//
// # Speed
//
// The shapes the solvers run (package krylov) take fast paths that compute
// the model above bit for bit, products summed in their natural order
// (tests compare them with the generic kernels on data with subnormal and
// overflowing products, ±Inf and NaN):
//
//   - a 1×1 conv on a [N, C, 1, 1] input and a matmul with at most four rows
//     on one side run as matrix-vector products, four rows at a time; a
//     conv whose kernel has at most 32 taps runs directly, a tap at a time
//     over a row of outputs. Their products are rounded without a branch,
//     subnormals included, or by Veltkamp's split when bounds prove every
//     nonzero product normal, or not at all when the operands' magnitudes
//     and grids prove every product an fp16 value (the compensated
//     operators' integer digits); per-row maxima, or the largest product
//     exponent tracked on the way, send whatever may overflow to the exact
//     path; zero weights and padding are skipped where that is exact.
//   - A const weight is prepared once, at Compile: its bounds and, for a
//     matrix, the runs of zero columns to skip.
//   - Slot buffers are allocated on the first Run and reused; slots whose
//     lifetimes do not overlap share memory, so that a program of many
//     ops on long vectors keeps its working set in the caches.
package sim
