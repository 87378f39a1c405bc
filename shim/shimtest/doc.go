// Package shimtest is the conformance suite for devices: for every op in
// the capability registry it builds a small graph, lowers it for the
// device's target, runs it on seeded random inputs drawn from the range the
// op is meant for, and compares each output element with dataflow.Eval (the
// float64 specification) evaluated on the same fp16-rounded inputs.
//
// Each op has an error bound derived from the numerics model (docs/ARCHITECTURE.md):
//
//   - Exact ops (data movement, abs, relu, maximum, minimum, neg): 0.
//   - Correctly rounded elementwise ops: half an fp16 ulp of the exact
//     result; the suite allows 1 ulp, since float32 intermediates and
//     transcendental kernels may add a little.
//   - Transcendentals and composites (exp, log, tanh, sigmoid, gelu, pow,
//     softmax, layer_norm): 2–4 ulps, stated per op.
//   - matmul and conv: each product is rounded to fp16 (relative error u =
//     2⁻¹¹), K products are summed in the accumulator (float32, unit
//     2⁻²⁴, or fp16 under a narrow model), and the sum is rounded once:
//     |err| ≤ (u + (K−1)·u_acc)·Σ|aᵢbᵢ| + ½ulp(result). Σ|aᵢbᵢ| is
//     computed by evaluating the same graph on |inputs|.
//   - reduce_sum and reduce_mean accumulate in fp16: (K−1)·u·Σ|xᵢ| + ½ulp.
//
// The engine's transcendentals are table-based, not correctly rounded, and
// whether it flushes subnormals is unmeasured. On the hardware and on a
// narrow (pessimistic) model, the bound of pow, sqrt, rsqrt, exp, log,
// tanh, sigmoid and gelu grows by 2⁻¹⁰·|exact| (two ulps), and a result
// within its bound of the subnormal range may be off by a further 2⁻¹⁴
// (flushed to zero). A 1 % error, about twenty ulps, fails every op that
// is not exact by construction. Inputs are drawn in fp16's normal range
// (or zero), never subnormal.
//
// # Layers
//
// CheckLayers runs every layer of package nn the same way — Linear as a
// 1×1 conv and as a matmul, LinearShift past the 32752 cliff, Conv2D with
// BatchNorm folded (plain, and strided, grouped and shifted for large
// inputs), LayerNorm built and native, RMSNorm, ReLU, GELU in its four
// forms, SiLU, Softmax on logits of ±2000 and along channels, max, average
// and global average pooling, Residual, multi-head Attention with and
// without the causal mask, and Embedding as a one-hot conv and matmul —
// each built with seeded float64 weights into one graph, lowered, run and
// compared with dataflow.Eval of that graph.
//
// A layer's bound is a forward error analysis of its graph, node by node:
// each element carries its exact value v and a bound e on |device − v|.
// Inputs enter exact (they are fp16 already); a constant enters with its
// fp16 rounding (all of it below fp16's normal range, where the lowering
// flushes). Each op's bound is the sum of two parts:
//
//   - the largest change of its exact result when every operand element
//     moves within its bound: add ex + ey; mul |x|·ey + |y|·ex + ex·ey;
//     div and pow their exact worst case; a monotone function
//     |f(x ± e) − f(x)|; gelu 1.13·e (a bound on its slope); maximum,
//     minimum and reduce_max the largest bound that can reach the result;
//     matmul and conv Σ |a|·eb + ea·(|b| + eb); softmax the exact ratio
//     bound with each element weighted by its probability (a shift of the
//     whole row, x − max x, costs nothing); layer_norm (eᵢ + max e +
//     |z|·rms e)/(σ − rms e), then γ and β;
//   - its own allowance, as the op cases grant it, at the largest
//     magnitude its exact result can reach: the same ulps, the same
//     dot-product formula (K counting the products that may be nonzero),
//     the same table error and subnormal flush on approximate devices.
//
// Second-order terms are kept, so a device that meets every op's bound
// meets the layer's: the bound follows from u = 2⁻¹¹, the accumulator's
// unit and the layer's sizes and data, never from an earlier run.
//
// Such a bound is a worst case over every rounding the ops may make, and
// a composite's grows with its depth: Result.Detects is the smallest
// relative error a case is sure to catch. On the wide model every layer
// case catches a 1 % error except attention (about 2 %), whose bound
// composes four contractions; on the narrow model a contraction of K
// products may legitimately lose (K−1)·u of Σ|terms|, over 2 % at K = 48,
// so those cases catch 1.3–4.4 % and attention 6–7 % (every other layer
// case still catches 1 %).
//
// A device's conformance test is one call: shimtest.Test(t, dev), which
// runs both. Check and CheckLayers return the same results as data, for
// the `anemone caps` and `anemone selftest` commands.
package shimtest
