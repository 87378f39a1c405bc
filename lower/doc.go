// Package lower turns a dataflow graph into one ANE program: MIL text, a
// weight blob, and the signature of its inputs and outputs.
//
// Lower runs in three steps, after checking every tensor's shape (rank
// and every axis) and the weight file's size (engine.WeightFileLimit)
// against the Target from the shapes alone, so that an oversized graph
// fails with ErrUnsupported before any constant is copied or built:
//
//  1. Legalize: small named passes rewrite ops the engine lacks or runs
//     badly into ones it runs well: rsqrt → pow(x, −0.5) (the compiler
//     rejects rsqrt), neg → mul by −1, square → mul, a reduce_sum over the
//     last axis → matmul with a ones vector (reduce_sum accumulates in fp16,
//     matmul in a wide accumulator), a matmul with a constant 2-D right
//     operand → 1×1 conv, and a transpose that moves only unit dimensions →
//     reshape.
//  2. Check the legalized graph against the Target's limits (rank, spatial
//     extent, conv kernel, channels) and the capability registry, so that
//     an op or size the target lacks fails here with ErrUnsupported, never
//     at dispatch. (The zero constants of a family's contraction padding
//     are counted against the weight file as that pass builds them.)
//  3. Emit MIL, once the weight file's exact size (header, every tensor
//     constant, the zero rows that fill packed output surfaces) is known
//     to be within the limit: every program surface is an fp16 tensor in
//     the canonical layout [1, C, 1, S], S padded to the target's row
//     alignment (64 bytes through M4, 128 on M5). On every hardware target
//     and the simulator's the program binds one input and one output
//     surface: the logical
//     inputs are bands of its rows, sliced apart at channel offsets (never
//     width offsets), and the outputs are stacked by binary concats, in
//     the tree that copies the fewest elements (a large output joins the
//     others once).
//     Program.PackInputs and UnpackOutputs, and the devices, do the
//     packing; callers see logical tensors only.
//
// What every emitted program guarantees the engine, checked by Lint on
// each one (so every program any test builds is linted): at most one input
// and one output surface where the target packs; concat of exactly two
// values; every fp16 tensor constant in the one weight file (scalars
// inline, as public programs write them); no subnormal constant (tiny
// weight entries are flushed to zero only where that is below the tensor's
// own fp16 resolution, otherwise Lower fails with ErrRange); no mul by a
// constant zero; no empty program.
//
// Estimate prices a program with the published roofline model of the
// engine (bytes, flops and modeled time per ANE family); it is a model,
// never a measurement. Invariants: the same graph gives byte-identical MIL and blob (and so the
// same Program.Hash, which the device caches key on); every constant fits
// fp16 or Lower fails with ErrRange; lowering never modifies its input graph.
package lower
