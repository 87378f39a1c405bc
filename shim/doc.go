// Package shim is the device layer: it compiles lowered programs and runs
// them on the Neural Engine (package shim/ane, darwin/arm64) or on the
// simulator (package shim/sim), behind one interface.
//
// Open picks a device by name ("ane", "sim", "sim-narrow"), by the
// ANEMONE_DEVICE environment variable, or by default the ANE when present and
// the simulator otherwise. Backends register themselves from their init
// functions; package shim/backends links the default ones, and every
// package that runs on a device imports it, so a program needs no import
// of its own.
//
// Compiles are scarce: the engine is reported to fail after about 119 per
// process, and each costs tens of milliseconds. Every device counts them
// against a Budget (DefaultCompileBudget) and refuses the next with an
// error wrapping ErrBudget. The device Open returns is a Cache: it keys
// compiled programs by content hash and keeps them until it is closed —
// it never evicts and never recompiles — and CompileReported says whether
// a request compiled and what the compile is modeled to cost. A program
// is compiled once per shape; what changes between dispatches is data.
//
// A Session runs one program repeatedly on surfaces that stay on the
// device: inputs written once stay there (a matrix, weights), Carry makes
// an output the next dispatch's input (a solver's vectors, optimizer
// state), and values cross as fp16 encodings converted in one pass with
// one range check. Executable.Run, the simple form, takes and returns
// float32 slices and checks every run the same way on every backend:
// inputs of the wrong count or length fail with ErrShape, inputs beyond
// fp16's range with ErrRange, and an output holding ±Inf or NaN (an fp16
// overflow inside the program) with ErrRange too. Overflow is never
// silent: a Session reports it when the host reads the tensor.
//
// The capability registry (lower.Capabilities) records, per op, whether
// each target runs it natively, through a rewrite, or not at all; the
// conformance suite in shim/shimtest checks every registered op on a device.
package shim
