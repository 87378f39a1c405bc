// Package engine is the contract between the compiler and the devices:
// every fact about the Apple Neural Engine that more than one package
// relies on, defined once, and the program they exchange. Lowering reads a
// Target to decide what to emit, the simulator to decide what to accept
// and how to compute, the darwin device to check what it hands the
// framework, and the solvers to size their programs. A fact copied
// elsewhere is a bug (a test scans the module for numeric copies).
//
// The program (Program: MIL text, weight blob, logical I/O and surfaces)
// has one identity, ProgramHash; one map between a logical tensor and its
// band of a surface, EachRow; and one layout check, CheckLayout, which
// every device makes before it binds a buffer.
//
// The facts are reports, not laws: each carries its source in
// docs/ENGINE.md, and a family's value is what was measured on that
// family. Where families disagree, Strict (the simulator's default target)
// takes the strictest of the rules that refuse a program (the limits per
// axis, the surface minimum, packed I/O, the compile budget), so that a
// program the simulator accepts is one every family should accept. Row
// alignment (64 elements on M5, 32 elsewhere) and the rules that change
// results instead (InnerMultiple, Rounding, FlushSubnormalProducts,
// PartialSumZero) are each family's: a program is lowered for the family
// it runs on.
//
// Invariants:
//   - A Target's limits are inclusive maxima per axis of a [1, C, H, W]
//     tensor; RowLength pads a row to the target's alignment.
//   - Cliff, SliceClamp and Headroom are magnitudes in fp16 units; the
//     design rule is that every matmul and conv output stays below
//     Headroom by construction, half the Cliff.
//   - This package imports only the standard library and fp16.
package engine
