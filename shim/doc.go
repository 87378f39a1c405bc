// Package shim is the device layer: it compiles lowered programs and runs
// them on the Neural Engine (package shim/ane, darwin/arm64) or on the
// simulator (package shim/sim), behind one interface.
//
// Open picks a device by name ("ane", "sim", "sim-narrow"), by the
// ANEMONE_DEVICE environment variable, or by default the ANE when present and
// the simulator otherwise. Backends register themselves from their init
// functions, so a program that opens devices imports them, usually blank:
//
//	import _ "github.com/anemone-go/anemone/shim/sim"
//
// The device Open returns is a Cache: it keys compiled programs by content
// hash, keeps at most a budget of them (the engine holds about 120 per
// process) and evicts the least recently used, serializes runs (the engine
// runs one program at a time), and checks every run the same way on every
// backend: inputs of the wrong count or length fail with ErrShape, inputs
// beyond fp16's range with ErrRange, and an output holding ±Inf or NaN (an
// fp16 overflow inside the program) with ErrRange too. Overflow is never
// silent.
//
// The capability registry (lower.Capabilities) records, per op, whether
// each target runs it natively, through a rewrite, or not at all; the
// conformance suite in shim/shimtest checks every registered op on a device.
package shim
