// Package selftest probes a device's numerics, cliffs and compiler rules
// and reports what it found: the engine behind `anemone selftest`.
//
// Run compiles small programs on a device (the Neural Engine on a Mac,
// the simulator elsewhere) and runs them. Each probe asks one question:
// where a matmul's output saturates, whether a width-offset slice clamps,
// where a running sum of ones stalls, whether subnormals survive, how
// accurate the transcendentals are, how many inputs a concat takes, how
// inputs bind to surfaces, how rounding ties break, how many programs one
// process may compile, and so on. It sets what the device did beside what
// the simulator's model of the device's target predicts, with a verdict.
// The conformance suite (shimtest, nntest) runs first as one more probe.
//
// Choices and invariants:
//
//   - The model is the reference. On the simulator every probe must agree
//     with it, so a departure there is a bug; on hardware a departure is a
//     finding, and the report is what a Mac user sends back.
//   - The expected column is computed from the device's target
//     (engine.Target: Accumulator, Rounding, FlushSubnormalProducts,
//     PartialSumZero, InnerMultiple, MinSurfaceBytes, WidthSliceClamp,
//     PackedIO, FlushSubnormals, TableError, CompileBudget), never from
//     the device's name: on hardware the chip family's target, on the
//     simulator the target its variant simulates (sim, sim-narrow,
//     sim-m1, sim-m3, sim-m5).
//   - Every probe's program meets its target's rules that the probe is
//     not about, so that it runs on every family: its surfaces hold at
//     least MinSurfaceBytes (padded with channels or columns that compute
//     the same as the first), its rows are RowAlign-aligned, its
//     contractions are multiples of InnerMultiple. Only the probe of a
//     rule breaks it (surface-minimum-size, surface-width-16,
//     matmul-inner-dim-32).
//   - Report's JSON layout is a published format (Schema, docs/HARDWARE.md):
//     its field names do not change, and numbers that are not finite are
//     written as the strings "+Inf", "-Inf" and "NaN" (Num).
//   - A probe that fails or panics becomes a row with VerdictError; the
//     rest of the report survives.
//   - Some probes hand-build their MIL (a small builder over lower/mil)
//     because the lowering would pad or split away the very shape they
//     test: inner dimensions that are not multiples of 32, surface widths
//     that are not multiples of 16, concats of more than two inputs.
//   - Every program is priced by the cost model (lower.Estimate) on the
//     chip's family on hardware and on the target's on the simulator, and
//     the engine's own execution time is set beside it where the backend
//     reports one, so that a report calibrates the model.
//   - The compile-budget count runs last. On hardware it runs only in a
//     full run: it may leave the process unable to compile. On the
//     simulator, which refuses the compile past its target's
//     CompileBudget, it runs in a short run too and gives the compiles it
//     took back afterwards, so that the device compiles after Run as
//     before.
//
// The package sits above shim: it takes any shim.Device and opens none
// itself, and nothing under shim imports it.
package selftest
