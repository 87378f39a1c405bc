// Package mil is the textual form of ANE programs: an abstract syntax tree
// for the Model Intermediate Language (MIL) as compiled by Apple's coremlc
// (model.mil), a printer and a parser, and the reader and writer of the
// weight blob file (coremltools' MILBlob storage format, version 2).
//
// The grammar follows shared/docs/MIL_OPS.md §22 and ANE_FACTS.md §2:
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
// Invariants: Print(Parse(Print(p))) == Print(p) byte for byte; the printer
// writes arguments in the order the AST holds them, floats as C99 hex floats
// (0x1p-3), and the new (iOS18) scalar spelling (string("x"), int32(1)). The
// parser also reads the old spelling tensor<string, []>("x"), decimal floats,
// and both multi-output forms. Parse errors carry line and column.
//
// The package imports only the standard library.
package mil
