// Package sim is the simulator device: it executes a lowered program from its
// MIL text and weight blob alone, with the Apple Neural Engine's measured fp16
// numerics (shared/docs/DESIGN.md, "The simulator's numerics model";
// ANE_FACTS.md §5). It registers itself with package shim as "sim" (the wide
// accumulator the hardware has) and "sim-narrow" (a pessimistic variant).
//
// # Strictness
//
// Compile parses the MIL text with lower/mil, reads the blob and checks the
// program the way the engine would, so that a program the simulator accepts
// is one the ANE should accept too:
//
//   - exactly one function, main, with the target's opset; its inputs and
//     outputs match the program's IOSpecs by name, each tensor<fp16, [1, C, 1, S]>;
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
//     constants must be finite fp16;
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
// Wide is the model DESIGN.md states for the hardware; Narrow is a
// pessimistic variant for accuracy claims that must hold either way.
//
// # Running
//
// Executable.Run rounds each input to fp16 and rejects a value that rounds
// to ±Inf or is NaN (shim.ErrRange, naming the input and index); it packs the
// logical inputs into the [1, C, 1, S] device layout, executes the plan and
// unpacks the outputs. An output holding ±Inf or NaN is returned together
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
