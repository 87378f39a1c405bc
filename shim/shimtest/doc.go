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
// A device's conformance test is one call: shimtest.Test(t, dev). Check
// returns the same results as data, for the `anemone caps` command.
package shimtest
