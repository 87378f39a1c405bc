// Package ane is the real Apple Neural Engine device: it compiles a
// lower.Program through the private AppleNeuralEngine.framework
// (_ANEInMemoryModel, ANE_CALLS.md) and runs it on IOSurfaces, from pure Go
// through github.com/ebitengine/purego and its objc package, without cgo.
//
// # Status: never run on hardware by CI
//
// No CI machine and no development machine of this project has a Neural
// Engine. The darwin/arm64 code (runtime_, objc_ and device_darwin_arm64.go)
// is only compiled and vetted, with GOOS=darwin GOARCH=arm64 CGO_ENABLED=0;
// it has never been executed. It follows the call sequence that three public
// drivers report working (ANE_CALLS.md), but treat the device as unverified
// until it has been run on a Mac. The pure-Go logic it relies on is
// untagged and unit-tested on every platform:
//
//   - layout.go: parsing the compiled model's I/O layout from the
//     attributes dictionary (as Go data), validating strides, resolving
//     symbol indices, binding program inputs and outputs to tensors, packing
//     and unpacking fp16 data at the reported strides with fp16 range
//     checks, and sizing IOSurfaces;
//   - weights.go: the weights dictionary and the files written before
//     compiling;
//   - errors.go: ANE error codes and the *Error type;
//   - budget.go: the per-process compile budget;
//   - program.go: program and target checks, and the chip-to-target rule.
//
// The darwin code converts between that Go data and Foundation objects,
// which is the one part of the data path no test here exercises.
//
// # Invariants
//
//   - Every sequence of framework calls runs on a locked OS thread inside an
//     autorelease pool, and everything kept past it (model, request) is
//     retained and released on Close.
//   - Calls through one device, compile, run and close, are serialized by
//     the device's mutex, as the engine runs one program at a time.
//   - Inputs are rounded to fp16 (nearest even); a value that rounds to ±Inf
//     or is NaN is an error wrapping shim.ErrRange naming the input and
//     element, never a silent Inf. An Inf or NaN in an output (the engine
//     saturates overflow silently) is also an error wrapping shim.ErrRange.
//   - Data is written and read at the strides the compiled model reports,
//     never assumed ones; a layout this package cannot verify is rejected
//     with ErrLayout (which matches shim.ErrUnsupported).
//   - Every surface of a request is padded to the largest one's allocation
//     and to at least 48 KiB (DefaultSurfaceOptions), the workarounds for
//     the reported "status=0x1d" evaluation failures.
//   - At most DefaultCompileBudget compiles are attempted per process
//     (ProcessBudget); past it Compile fails with ErrBudget.
//   - Framework failures are *Error values wrapping ErrDevice; compile
//     rejections also wrap shim.ErrUnsupported.
//
// On platforms other than darwin/arm64, Available reports false, Open fails
// with shim.ErrNoDevice, and the "ane" device is not registered with shim.
package ane
