// Package train trains networks on the device: one program per model
// runs the forward pass, the backward pass (dataflow.Graph.Grad) and the
// optimizer update in one dispatch, compiled once; the weights and the
// optimizer state stay on the device between steps (shim.Session.Carry),
// each minibatch is streamed in, and the host reads only the loss and an
// overflow signal. Reference runs the same step graph through
// dataflow.Eval in float64, with the same seed and batches, so every
// device figure has a float64 twin.
//
// Numerics (fp16 throughout on the device):
//
//   - Dynamic loss scaling: the backward pass differentiates S·loss, S a
//     power of two the host moves (halved on overflow, doubled after a run
//     of steps with room to spare). The device reports the largest
//     magnitude of every forward and backward matmul and conv output;
//     the step is applied only if both are below 2¹⁴ (half the engine's
//     cliff), and the gate is computed on the device, so an overflowed
//     step changes nothing. Backward contractions saturate at the cliff,
//     so an overflow never turns into a NaN (0·Inf) that could defeat the
//     gate. No optimizer step may reach 2¹⁵ in its unit (a change of 32
//     for a compensated weight), which fp16 could not add: where the
//     optimizer's bound (any gradient, any weight) allows one, the step is
//     gated on the device the same way, skipped and an error wrapping
//     ErrOverflow; where it does not (Adam below a learning rate of about
//     0.25 for compensated weights, SGD below 1), the program has no step
//     gate, which would cost about a fifth of a step, and a schedule that
//     raises the rate past the bound is ErrConfig.
//   - Optimizer state is in a fixed gradient unit (the gradient times
//     2¹⁰, whatever S is) and Adam keeps √v, not v: v's range is twice
//     the gradient's in binades and does not fit fp16.
//   - Compensated updates (the default): each weight is a pair (hi, lo)
//     of fp16 tensors, w = hi + lo·2⁻¹⁰; the forward pass reads hi, and
//     the update is added by Fast2Sum, so steps far below hi's resolution
//     accumulate in lo instead of vanishing. PlainFP16 adds the update to
//     hi alone (the ablation).
//
// Mistakes — a batch of the wrong size or with NaN, a cross-entropy target
// that is not a distribution (a label out of range), a learning rate ≤ 0,
// a weight that names no input of the network — are errors wrapping
// ErrConfig, ErrBatch or ErrParam; never a panic.
package train
