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
//     Parse accepts (checked by FuzzParse). The printer writes arguments and
//     attributes in the order the AST holds them, floats as C99 hex floats
//     (0x1p-3, -0x1.8p+1, inf, nan), the buildInfo line only when there is
//     build information, and each literal in the spelling its Type gives:
//     the new (iOS18) scalar spelling (string("x"), int32(1)) for scalar
//     types, tensor<T, []>(v) for rank-0 tensors. The builders String, Bool,
//     Int32 and FP16 make scalars.
//   - The parser also reads the old spellings (program(1.0),
//     dict<tensor<string, []>, tensor<string, []>>, tensor<string, []>("x")),
//     decimal floats, integers in float literals, // comments and both
//     multi-output forms. Every parsed node records its position (line and
//     column, 1-based, columns in bytes), and every parse error is a
//     *SyntaxError "mil: line:col: message" wrapping ErrSyntax.
//   - Parse checks literals locally (dtype spellings, element counts, value
//     kinds, integer ranges); Program.Check checks names (defined once,
//     before use; outputs defined) and returns *CheckError wrapping ErrCheck.
//   - Literal values are exact: floats are kept as float64, not rounded to
//     their dtype; uint64 values are held in Literal.Ints as bit patterns.
//   - The weight file written by BlobWriter is byte-exact MILBlob v2: a
//     64-byte header (count, version 2), then per blob a 64-byte metadata
//     record (0xDEADBEEF, dtype, size, absolute data offset) and the data,
//     each 64-byte aligned and zero-padded, little-endian. BLOBFILE offsets
//     name the metadata record. ReadBlob validates the layout and returns
//     *BlobError wrapping ErrBlob; no input makes it panic (FuzzReadBlob).
//
// The package imports only the standard library and the project's fp16
// package.
package mil
