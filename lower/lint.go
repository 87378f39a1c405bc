package lower

import (
	"errors"
	"fmt"
	"math"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower/mil"
)

// ErrLint reports a program that breaks one of the rules the lowering
// guarantees the engine (see Lint).
var ErrLint = errors.New("lower: program breaks a hardware rule")

// Lint checks a program against the rules every emitted program keeps,
// because the engine's compiler is reported to reject or mishandle the
// alternatives:
//
//   - on a target with PackedIO, at most one input and one output surface,
//     and the program's surfaces are main's inputs and outputs;
//   - concat takes exactly two values;
//   - every fp16 tensor constant lives in the weight blob (scalars and
//     int32, bool and string parameters may be inline);
//   - no fp16 constant is subnormal;
//   - no mul has a constant zero operand (it fails to compile after a
//     reduction, and it is a term that should not be emitted at all);
//   - the program computes something: it has a compute op and no output is
//     directly an input or a constant;
//   - on a target with InnerMultiple, every matmul contracts over a
//     multiple of it; with MinSurfaceBytes, no surface is smaller.
//
// Lower runs Lint on every program it emits; the simulator enforces the
// same rules independently. Errors wrap ErrLint and name the op and its
// line:col in the MIL text.
func Lint(p *Program, t Target) error {
	if p == nil {
		return fmt.Errorf("lower: lint: nil program: %w", ErrLint)
	}
	prog, err := mil.Parse(p.MIL)
	if err != nil {
		return fmt.Errorf("lower: lint: %v: %w", err, ErrLint)
	}
	var blob *mil.BlobFile
	if len(p.Blob) > 0 {
		if blob, err = mil.ReadBlob(p.Blob); err != nil {
			return fmt.Errorf("lower: lint: weight blob: %v: %w", err, ErrLint)
		}
	}
	if len(prog.Functions) != 1 {
		return fmt.Errorf("lower: lint: %d functions, want one (main): %w", len(prog.Functions), ErrLint)
	}
	fn := prog.Functions[0]
	bad := func(pos mil.Pos, format string, args ...any) error {
		return fmt.Errorf("lower: lint: %s: %s: %w", pos, fmt.Sprintf(format, args...), ErrLint)
	}
	if t.PackedIO && (len(fn.Inputs) > 1 || len(fn.Outputs) > 1) {
		return bad(fn.Pos, "main binds %d input and %d output surfaces; target %s takes one of each", len(fn.Inputs), len(fn.Outputs), t.Name)
	}
	if len(fn.Inputs) != len(p.InputSurfaces) || len(fn.Outputs) != len(p.OutputSurfaces) {
		return bad(fn.Pos, "main has %d inputs and %d outputs; the program lists %d and %d surfaces", len(fn.Inputs), len(fn.Outputs), len(p.InputSurfaces), len(p.OutputSurfaces))
	}
	for i, in := range fn.Inputs {
		if in.Name != p.InputSurfaces[i].Name {
			return bad(in.Pos, "input %d is %q; the program's surface is %q", i, in.Name, p.InputSurfaces[i].Name)
		}
	}
	for i, out := range fn.Outputs {
		if out != p.OutputSurfaces[i].Name {
			return bad(fn.Pos, "output %d is %q; the program's surface is %q", i, out, p.OutputSurfaces[i].Name)
		}
	}

	if t.MinSurfaceBytes > 0 {
		for _, surfs := range [][]Surface{p.InputSurfaces, p.OutputSurfaces} {
			for _, sf := range surfs {
				if b := 2 * sf.Size(); b < t.MinSurfaceBytes {
					return bad(fn.Pos, "surface %q of shape %v holds %d bytes; target %s's surfaces need at least %d", sf.Name, sf.Shape, b, t.Name, t.MinSurfaceBytes)
				}
			}
		}
	}
	shapes := map[string][]int{} // every variable's shape
	bools := map[string]bool{}   // the bool consts
	for _, in := range fn.Inputs {
		shapes[in.Name] = in.Type.Shape
	}
	for _, op := range fn.Ops {
		for _, o := range op.Outputs {
			shapes[o.Name] = o.Type.Shape
		}
		if lit, ok := op.Attr("val").(*mil.Literal); ok && op.Kind == "const" && len(lit.Bools) == 1 && len(op.Outputs) == 1 {
			bools[op.Outputs[0].Name] = lit.Bools[0]
		}
	}
	if m := t.InnerMultiple; m > 1 {
		for _, op := range fn.Ops {
			if op.Kind != "matmul" {
				continue
			}
			var x []int
			tx := false
			for _, a := range op.Args {
				if r, ok := a.Value.(*mil.Ref); ok {
					switch a.Name {
					case "x":
						x = shapes[r.Name]
					case "transpose_x":
						tx = bools[r.Name]
					}
				}
			}
			if len(x) < 2 {
				continue
			}
			k := x[len(x)-1]
			if tx {
				k = x[len(x)-2]
			}
			if k%m != 0 {
				return bad(op.Pos, "matmul contracts over %d, not a multiple of %d: target %s returns zeros for it", k, m, t.Name)
			}
		}
	}

	inputs := map[string]bool{}
	for _, in := range fn.Inputs {
		inputs[in.Name] = true
	}
	zero := map[string]bool{}   // consts that are all zeros
	consts := map[string]bool{} // every const
	compute := 0
	for _, op := range fn.Ops {
		if op.Kind == "const" {
			name := op.Name()
			if len(op.Outputs) == 1 {
				name = op.Outputs[0].Name
			}
			consts[name] = true
			lit, _ := op.Attr("val").(*mil.Literal)
			if lit == nil || lit.Type.DType != "fp16" {
				continue
			}
			if lit.Blob != nil {
				// On the fp16 bits: a subnormal has a zero exponent and a
				// nonzero fraction.
				data, err := blobData(blob, lit)
				if err != nil {
					return bad(op.Pos, "const %q: %v", name, err)
				}
				allZero := true
				for i := 0; i < len(data); i += 2 {
					h := fp16.Bits(uint16(data[i]) | uint16(data[i+1])<<8)
					if h&0x7c00 == 0 && h&0x3ff != 0 {
						return bad(op.Pos, "const %q element %d is %g, subnormal in fp16", name, i/2, h.Float64())
					}
					allZero = allZero && h&0x7fff == 0
				}
				zero[name] = allZero
				continue
			}
			if len(lit.Type.Shape) > 0 {
				return bad(op.Pos, "const %q is an inline fp16 tensor literal; tensors go through the weight blob", name)
			}
			allZero := true
			for i, v := range lit.Floats {
				if v != 0 && math.Abs(v) < fp16.MinNormal {
					return bad(op.Pos, "const %q element %d is %g, subnormal in fp16", name, i, v)
				}
				allZero = allZero && v == 0
			}
			zero[name] = allZero
			continue
		}
		compute++
		for _, a := range op.Args {
			switch v := a.Value.(type) {
			case *mil.Literal:
				if v.Type.DType == "fp16" && len(v.Type.Shape) > 0 && v.Blob == nil {
					return bad(op.Pos, "%s: argument %q is an inline fp16 tensor literal", op.Kind, a.Name)
				}
			case *mil.Tuple:
				if op.Kind == "concat" && len(v.Elems) != 2 {
					return bad(op.Pos, "concat of %d values; the engine takes exactly two (use a tree of binary concats)", len(v.Elems))
				}
			case *mil.Ref:
				if op.Kind == "mul" && zero[v.Name] {
					return bad(op.Pos, "mul by the constant zero %q; drop the term instead", v.Name)
				}
			}
		}
	}
	if compute == 0 {
		return bad(fn.Pos, "the program has no compute op (the engine's compiler crashes on empty programs)")
	}
	for _, out := range fn.Outputs {
		if inputs[out] || consts[out] {
			return bad(fn.Pos, "output %q is an input or a constant, not a computed value", out)
		}
	}
	return nil
}

// blobData returns the fp16 bytes of a tensor constant in the weight blob.
func blobData(blob *mil.BlobFile, lit *mil.Literal) ([]byte, error) {
	if blob == nil {
		return nil, errors.New("refers to a weight blob the program does not have")
	}
	e, err := blob.At(lit.Blob.Offset)
	if err != nil {
		return nil, err
	}
	if e.DType != mil.BlobFP16 || len(e.Data) != 2*lit.Type.Elements() {
		return nil, fmt.Errorf("blob record at %d holds %d bytes of %s, want %d of fp16", lit.Blob.Offset, len(e.Data), e.DType, 2*lit.Type.Elements())
	}
	return e.Data, nil
}
