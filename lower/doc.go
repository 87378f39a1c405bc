// Package lower turns a dataflow graph into one ANE program: MIL text, a
// weight blob, and the signature of its inputs and outputs.
//
// Lower runs in three steps:
//
//  1. Legalize: small named passes rewrite ops the engine lacks or runs
//     badly into ones it runs well: rsqrt → pow(x, −0.5) (the compiler
//     rejects rsqrt), neg → mul by −1, square → mul, a reduce_sum over the
//     last axis → matmul with a ones vector (reduce_sum accumulates in fp16,
//     matmul in a wide accumulator), a matmul with a constant 2-D right
//     operand → 1×1 conv, and a transpose that moves only unit dimensions →
//     reshape.
//  2. Check the legalized graph against the Target's limits (rank, spatial
//     extent, conv kernel, channels) and the capability registry, so that an
//     op or size the target lacks fails here with ErrUnsupported, never at
//     dispatch.
//  3. Emit MIL: every program input and output is an fp16 tensor in the
//     canonical layout [1, C, 1, S], S padded to a multiple of 32 elements
//     (rows 64-byte aligned); inside the program, inputs are sliced and
//     reshaped to their logical shapes and outputs padded back. Constants of
//     ten or more elements go to the one weight file, smaller ones inline.
//
// Invariants: the same graph gives byte-identical MIL and blob (and so the
// same Program.Hash, which the device caches key on); every constant fits
// fp16 or Lower fails with ErrRange; lowering never modifies its input graph.
package lower
