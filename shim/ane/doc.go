// Package ane is the real Apple Neural Engine device: it compiles a
// lower.Program through the private AppleNeuralEngine.framework
// (_ANEInMemoryModel) and runs it on IOSurfaces, from pure Go through
// github.com/ebitengine/purego and its objc package, without cgo.
//
// # Status: nothing here has run on hardware
//
// No machine of this project has a Neural Engine: the darwin/arm64 code is
// only compiled and vetted, never executed, and follows the call sequence
// public drivers report working and the attribute dictionaries they have
// logged; treat the device as unverified until it has run on a Mac. The
// pure-Go logic it relies on (layout parsing, binding and packing, weight
// files, options, errors, the budget, program checks, platform decisions,
// the fallback, handles) is untagged and unit-tested on every platform, on
// fixtures in the shape of those dictionaries.
//
// # Design
//
// Each rule answers a report about what real Macs do. With packed I/O a
// program binds one input and one output surface, each logical tensor a
// band of its rows; surfaces are matched to the model's tensors by name,
// positioned by the symbol order the model reports, and read and written
// at the strides it reports, never assumed ones; a layout this package
// cannot verify is rejected with ErrLayout (which matches
// shim.ErrUnsupported), never guessed at. A refused compile of packed
// outputs is retried once with one output surface per output. Open refuses
// (shim.ErrNoDevice) macOS before 15, a virtual machine and a Mac without
// an engine.
//
// # Invariants
//
// Framework calls run on a locked OS thread inside an autorelease pool,
// under one process-wide lock; what is kept is released on Close or, for a
// dropped executable, by a cleanup. Assumptions are never silent: each is
// recorded in the executable's Warnings. Inputs that round to ±Inf or NaN,
// and outputs holding them, are errors wrapping shim.ErrRange. At most
// DefaultCompileBudget compiles are attempted per process (ErrBudget).
// Framework failures are *Error values wrapping ErrDevice.
//
// Every rule and invariant, with its reason: docs/ANE.md. On platforms
// other than darwin/arm64, Available reports false, Open and OpenWith fail
// with shim.ErrNoDevice, and the "ane" device is not registered with shim.
package ane
