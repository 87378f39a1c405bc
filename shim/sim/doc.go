// Package sim is the simulator device: it executes a lowered program from its
// MIL text and weight blob alone, with the Apple Neural Engine's measured fp16
// numerics and correctness cliffs. It registers itself with package shim as
// "sim" (the wide accumulator the hardware has) and "sim-narrow" (a
// pessimistic variant, for accuracy claims that must hold either way).
//
// Compile is strict: it parses the MIL text with lower/mil, reads the blob
// and checks the program the way the engine would, so that a program the
// simulator accepts is one the ANE should accept too. It refuses anything
// public programs that run on the engine do not show: more than one input
// or output surface on a packed target, ops or arguments outside the
// supported set, declared types that differ from inferred ones, tensors past
// the target's limits, inline tensor constants, subnormal or zero-rounded
// constants, concats of more than two inputs, a mul by a constant zero, an
// empty program, rsqrt. Rejections for features the engine lacks or limits
// it imposes wrap shim.ErrUnsupported, malformed programs ErrInvalid; both
// carry the line:col of the offending statement.
//
// # The numerics model (the package invariant)
//
// Every tensor is IEEE binary16, rounded to nearest even; overflow gives
// ±Inf. Elementwise arithmetic is the exact result rounded once;
// transcendentals are a float32 result rounded to fp16; matmul and conv
// round each product to fp16, sum in float32 in their natural order and
// round the sum once (Narrow: an fp16 running sum); reduce_sum and
// reduce_mean keep an fp16 running sum in both variants. Both reproduce the
// engine's cliffs below fp16's range: a matmul or conv output above 32752
// in magnitude is ±Inf, and on a target with lower.Target.WidthSliceClamp
// a slice at a nonzero last-axis offset turns |x| > 4094 into ±Inf. Narrow
// also flushes subnormals to zero and gives transcendentals a deterministic
// relative error of up to 2⁻¹⁰. Fast paths for the solvers' shapes compute
// this model bit for bit.
//
// Run rounds inputs to fp16 and refuses ±Inf and NaN; an output holding
// ±Inf or NaN comes back with an error wrapping shim.ErrRange: overflow is
// detected, never silent. Runs on one device are serialized, as on the
// engine; Compile and Run are safe for concurrent use. Device.RecordHeadroom
// and Device.Headroom tell a test how close a run came to the cliffs.
//
// docs/SIM.md states every check, the model op by op, and the fast paths.
package sim
