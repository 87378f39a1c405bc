// Package nn builds neural networks on the same graph, lowering and
// dispatch stack as the solvers: layers are functions that add ops to a
// *dataflow.Graph and return a dataflow.Value, weights come from
// safetensors files, and a model is a graph built once and run many times
// through package shim.
//
// Layers: Linear (a 1×1 conv), Conv2D with BatchNorm folded into the
// weights at build time, LayerNorm, RMSNorm, ReLU, GELU (native or built
// from tanh/sigmoid), SiLU, Softmax, MaxPool2D, AvgPool2D, GlobalAvgPool,
// Residual, multi-head Attention (optionally causal) and Embedding (a
// matmul with one-hot tokens). Models: CNN, Encoder (pre-norm
// transformer) and ResNet (ResNet-18-shaped), each with a configuration
// (SmallCNN, SmallEncoder, MiniLM, ResNet18) and seeded RandomWeights.
// Layouts: activations are channel-first [N, C, H, W] (T vectors of D
// features are [1, D, 1, T], the engine's native layout) or rows [M, D];
// the feature axis is axis 1. Weights use PyTorch's layouts and names.
//
// Invariants (what a layer guarantees the engine, docs/ENGINE.md §7):
//
//   - Every contraction — linear, conv, mean, variance, pooling average —
//     is a conv or matmul (wide accumulator), never a reduce_sum.
//   - No constant is subnormal: weight entries below fp16's normal range
//     are flushed only where they change every output row by less than
//     u = 2⁻¹¹ of its absolute sum, otherwise the whole weight is scaled
//     up by a power of two and the output scaled back exactly.
//   - Softmax subtracts the row maximum; the causal mask adds the finite
//     MaskValue; LayerNorm and RMSNorm divide by the row's largest
//     magnitude before squaring, so any finite input and any ε ≥ 0 is
//     safe (the native layer_norm op is an option).
//   - Conv and matmul outputs stay below the engine's 32752 cliff as far
//     as the caller's bound on the input says: LinearShift, ConvOptions
//     Shift and Bound fold a power of two into the weights and unfold it
//     after with an exact multiply.
//   - No width-offset slices where values can be large: max pooling slices
//     the last axis only at offset 0.
//
// Mistakes — a missing or misshapen weight, an epsilon the native op cannot
// hold, heads that do not divide the features — are recorded in the graph
// (Graph.Err and lowering return them) and wrap ErrWeight, ErrShape or
// ErrRange; a malformed file wraps ErrFormat.
package nn
