// Package ane is the real Apple Neural Engine device: it compiles a
// lower.Program through the private AppleNeuralEngine.framework
// (_ANEInMemoryModel) and runs it on IOSurfaces, from pure Go through
// github.com/ebitengine/purego and its objc package, without cgo.
//
// # Status: nothing here has run on hardware
//
// No CI machine and no development machine of this project has a Neural
// Engine. The darwin/arm64 code (runtime_, objc_ and device_darwin_arm64.go)
// is only compiled and vetted, with GOOS=darwin GOARCH=arm64 CGO_ENABLED=0;
// it has never been executed, and no figure in this package was measured on
// a Mac. It follows the call sequence that public drivers report working,
// and it is shaped by the attribute dictionaries they have logged, but treat
// the device as unverified until it has been run on one. The pure-Go logic
// it relies on is untagged and unit-tested on every platform, on fixtures
// written in the shape of those logged dictionaries:
//
//   - layout.go: parsing the compiled model's I/O layout from the
//     attributes dictionary (as Go data), validating strides and the layout
//     keys, and resolving each surface's position in the symbol order;
//   - bind.go: binding the program's surfaces to the reported tensors by
//     name (a lone surface each way by position), packing and unpacking the logical tensors into their rows of a
//     surface at the reported strides with fp16 range checks, and the order
//     of the request's arrays;
//   - weights.go: the MIL and weights handed to the framework, split into
//     one file per constant on M1, the files written before compiling, and
//     the process-wide identifier registry;
//   - options.go: device options, the optional surface mapping, and where
//     the attributes are read from;
//   - errors.go: ANE error codes and the *Error type;
//   - budget.go: the per-process compile budget;
//   - program.go: program and target checks, every axis of every computed
//     tensor included, and the chip-to-target rule;
//   - platform.go: the macOS-version and device-presence decisions;
//   - fallback.go: when a refused compile is retried with one output
//     surface per output;
//   - handle.go: releasing a dropped executable, and the hardware-time
//     bookkeeping.
//
// The darwin code converts between that Go data and Foundation objects,
// which is the one part of the data path no test here exercises.
//
// # What the device does, and why
//
// Each rule below answers a report about what real Macs do; none has been
// confirmed here.
//
//   - Ports are surfaces. With packed I/O (lower.Target.PackedIO) a program
//     binds one input surface and one output surface, the MIL function's
//     input and output; each logical input or output is a band of rows of
//     its surface, starting at IOSpec.Channel. Several input surfaces have
//     been reported to fail evaluation, and surfaces to be ordered by name:
//     one surface each way sidesteps both. A program without surface lists
//     has one surface per logical tensor.
//   - Names. The model reports each output's Name and Symbol with an
//     "@output" suffix ("y@output" for MIL output y); surfaces are matched
//     to tensors by name after trimming it. One surface and one tensor in a
//     direction are paired by position when the names differ (a logged
//     dictionary names a lone input "a_input0"), with a warning; with
//     several, a surface no tensor matches is an ErrLayout error, never
//     paired by position or by alphabetical order.
//   - Symbol order. A tensor's position comes from procedure 0's symbol
//     index array (ANEFModelDescription.ANEFModelProcedures[0]), which names
//     entries of the symbol array; only without that array is the symbol
//     array itself the order, and a name it holds twice is then refused. The
//     request's arrays hold the surfaces in that order with position =
//     index, as every public driver with hardware results passes them.
//   - Layout. A surface holds max(Channels·PlaneStride, BatchStride) bytes.
//     Batches, Depth and Interleave other than 1, and a PlaneCount other
//     than 1 or Channels, are refused rather than guessed at (a logged M3
//     dictionary shows PlaneCount = Channels for a plain tensor). Data is
//     written and read at the strides the model reports, never assumed
//     ones.
//   - Types. Only the Type values "Float16" and "Float32" are accepted; any
//     other is an ErrLayout error. An entry without a Type is taken for
//     fp16, with a warning.
//   - Attributes are read from the inner _ANEModel when it reports them,
//     else from the _ANEInMemoryModel: public drivers use one or the other.
//   - Mapping. mapIOSurfacesWithRequest: is called only with
//     Options.MapSurfaces (OpenWith); two public drivers never map and one
//     reports that mapping fails on this route. The outcome is recorded in
//     the executable's Mapping, never returned as an error.
//   - Errors. A compile failure's own text is usually just
//     "ANECCompile() FAILED"; the chain of underlying errors
//     (NSUnderlyingErrorKey) is appended to it. The _ANEErrors code
//     meanings (taken from a decompiled iOS image; that macOS shares them is
//     unconfirmed) are applied only to errors of exactly ErrorDomain.
//   - Platform. Open refuses, with shim.ErrNoDevice and the reason, macOS
//     before 15 (programs use the ios18 opset), a virtual machine and a Mac
//     without an engine, asking _ANEDeviceInfo first and the CPU brand only
//     without it.
//   - Fallback. When the compiler refuses a program whose outputs are
//     packed by concats, it is compiled once more with one output surface
//     per output (lower.SplitOutputs), the surfaces padded alike; the
//     executable's Warnings say so. Program still returns the program given.
//   - Weights. On M1 each constant gets a weight file of its own, its record
//     at offset 64 (Options.Weights chooses otherwise).
//   - Hardware time. Unless Options.NoHardwareTime or MapSurfaces, each run
//     asks for the framework's performance statistics through a second
//     request over the same surfaces; a run failing with them is repeated
//     without, and they stay off.
//   - Identity. The framework's model identifier is reported to derive
//     from the MIL text and the weights dictionary's keys only, and to name
//     the model's directory and the daemon's compiled program. So the weight
//     file is named after the hash of the whole program, in the MIL's
//     BLOBFILE paths and the dictionary key alike, and a process-wide
//     registry refuses (ErrClash) an identifier still in use by a program
//     with a different hash.
//
// # Invariants
//
//   - Every sequence of framework calls runs on a locked OS thread inside an
//     autorelease pool, and everything kept past it (model, request) is
//     retained and released on Close.
//   - Every framework call sequence, from any device, holds one
//     process-wide lock; a device's mutex, taken first, guards its own
//     state.
//   - An executable dropped without Close is released by a cleanup once it
//     is unreachable: its framework state lives apart from it and never
//     refers back.
//   - Assumptions are never silent: each is recorded in the executable's
//     Warnings and logged through Options.Logger when one is set.
//   - Inputs are rounded to fp16 (nearest even); a value that rounds to ±Inf
//     or is NaN is an error wrapping shim.ErrRange naming the input and
//     element, never a silent Inf. An Inf or NaN in an output (the engine
//     saturates overflow silently) is also an error wrapping shim.ErrRange.
//   - A layout this package cannot verify is rejected with ErrLayout (which
//     matches shim.ErrUnsupported).
//   - Every surface of a request is padded to the largest one's allocation
//     and to at least 48 KiB (DefaultSurfaceOptions), the workarounds for
//     the reported "status=0x1d" evaluation failures.
//   - At most DefaultCompileBudget compiles are attempted per process
//     (ProcessBudget); past it Compile fails with ErrBudget.
//   - Framework failures are *Error values wrapping ErrDevice; compile
//     rejections also wrap shim.ErrUnsupported.
//
// On platforms other than darwin/arm64, Available reports false, Open and
// OpenWith fail with shim.ErrNoDevice, and the "ane" device is not
// registered with shim.
package ane
