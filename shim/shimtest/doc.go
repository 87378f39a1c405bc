// Package shimtest is the conformance suite for devices: for every op in
// the capability registry it builds a small graph, lowers it for the
// device's target, runs it on seeded random inputs drawn from the range the
// op is meant for, and compares each output element with dataflow.Eval (the
// float64 specification) evaluated on the same fp16-rounded inputs.
//
// Each op has an error bound derived from the numerics model, never from an
// earlier run:
//
//   - exact ops (data movement, abs, relu, maximum, minimum, neg): 0;
//   - correctly rounded elementwise ops: 1 fp16 ulp;
//   - transcendentals and composites: 2–4 ulps, stated per op;
//   - matmul and conv: (u + (K−1)·u_acc)·Σ|aᵢbᵢ| + ½ulp(result), with
//     u = 2⁻¹¹, u_acc the accumulator's unit and Σ|aᵢbᵢ| from the same
//     graph evaluated on |inputs|;
//   - reduce_sum and reduce_mean, which accumulate in fp16:
//     (K−1)·u·Σ|xᵢ| + ½ulp.
//
// On the hardware and on a narrow (pessimistic) model the transcendentals'
// bounds grow by 2⁻¹⁰·|exact| (table-based kernels) and results near the
// subnormal range may be flushed. A 1 % error fails every op that is not
// exact by construction.
//
// # Layers
//
// CheckLayers runs every layer of package nn the same way, each built with
// seeded weights into one graph. A layer's bound is a forward error
// analysis of its graph, node by node: each element carries its exact value
// and a bound on the device's deviation from it, propagated through each
// op and increased by that op's own allowance above, second-order terms
// kept, so a device that meets every op's bound meets the layer's.
// Result.Detects is the smallest relative error a case is sure to catch.
//
// A device's conformance test is one call: shimtest.Test(t, dev), which
// runs both. Check and CheckLayers return the same results as data, for
// the `anemone caps` and `anemone selftest` commands. docs/SHIMTEST.md
// states every bound, the layer cases and what each case detects.
package shimtest
