// Package mil is the textual form of ANE programs: an abstract syntax tree
// for the Model Intermediate Language (MIL) as compiled by Apple's coremlc
// (model.mil), a printer and a parser, and the reader and writer of the
// weight blob file (coremltools' MILBlob storage format, version 2).
//
// The grammar follows the MIL text coremlc writes and public drivers hand to
// the engine (docs/ENGINE.md §1):
//
//	program(1.3)
//	[buildInfo = dict<string, string>({{"k", "v"}, ...})]
//	{
//	    func main<ios18>(tensor<fp16, [1, 64, 1, 64]> x) {
//	        tensor<int32, [4]> p = const()[name = string("p"), val = tensor<int32, [4]>([0, 1, 3, 2])];
//	        tensor<fp16, [1, 64, 1, 64]> y = transpose(perm = p, x = x)[name = string("y")];
//	    } -> (y);
//	}
//
// Invariants:
//   - Print(Parse(Print(p))) == Print(p) byte for byte for every program
//     Parse accepts (checked by fuzzing). Print writes each literal in the
//     spelling its Type gives: the iOS18 scalar spelling (string("x"),
//     int32(1)) for scalar types, tensor<T, []>(v) for rank-0 tensors; the
//     builders String, Bool, Int32 and FP16 make scalars.
//   - Parse also reads the older coremlc spellings. Every parsed node records
//     its position (line and column, 1-based, columns in bytes), and every
//     parse error is a *SyntaxError "mil: line:col: message" wrapping
//     ErrSyntax. Parse checks literals locally; Program.Check checks names
//     (defined once, before use; outputs defined), returning *CheckError
//     wrapping ErrCheck.
//   - Literal values are exact: floats are kept as float64, not rounded to
//     their dtype; uint64 values are held in Literal.Ints as bit patterns.
//   - BlobWriter writes byte-exact MILBlob v2: a 64-byte header, then per
//     blob a 64-byte metadata record (0xDEADBEEF, dtype, size, absolute
//     data offset) and the data, each 64-byte aligned, zero-padded and
//     little-endian; BLOBFILE offsets name the metadata record. ReadBlob
//     validates the layout, returns *BlobError wrapping ErrBlob and never
//     panics.
//
// The package imports only the standard library and the project's fp16
// package.
package mil
