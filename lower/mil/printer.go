package mil

import (
	"math"
	"strconv"
)

// Print writes p as MIL text in the coremlc layout: four-space indentation,
// one statement per line, arguments and attributes in AST order, floats as
// C99 hex floats (0x1p-3, -0x1.8p+1, inf, nan), strings with \" \\ \n \t
// \r escaped. The buildInfo line is left out when p.BuildInfo is empty,
// and an empty Version prints as 1.3.
// The output is a pure function of the AST (positions are ignored).
func Print(p *Program) []byte {
	if p == nil {
		return nil
	}
	n := 256
	for _, f := range p.Functions {
		if f != nil {
			n += 128 + 160*len(f.Ops)
		}
	}
	b := make([]byte, 0, n)
	v := p.Version
	if v == "" {
		v = "1.3"
	}
	b = append(b, "program("...)
	b = append(b, v...)
	b = append(b, ")\n"...)
	if len(p.BuildInfo) > 0 {
		b = append(b, "[buildInfo = dict<string, string>({"...)
		for i, kv := range p.BuildInfo {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = append(b, '{')
			b = appendQuoted(b, kv.Key)
			b = append(b, ", "...)
			b = appendQuoted(b, kv.Value)
			b = append(b, '}')
		}
		b = append(b, "})]\n"...)
	}
	b = append(b, "{\n"...)
	for _, f := range p.Functions {
		if f != nil {
			b = appendFunction(b, f)
		}
	}
	b = append(b, "}\n"...)
	return b
}

// String returns Print(p) as a string.
func (p *Program) String() string { return string(Print(p)) }

func appendFunction(b []byte, f *Function) []byte {
	b = append(b, "    func "...)
	b = append(b, f.Name...)
	b = append(b, '<')
	b = append(b, f.Opset...)
	b = append(b, ">("...)
	for i, v := range f.Inputs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendVar(b, v)
	}
	b = append(b, ") {\n"...)
	for _, op := range f.Ops {
		if op != nil {
			b = append(b, "        "...)
			b = appendOp(b, op)
			b = append(b, '\n')
		}
	}
	b = append(b, "    } -> ("...)
	for i, o := range f.Outputs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, o...)
	}
	return append(b, ");\n"...)
}

func appendVar(b []byte, v Var) []byte {
	b = appendType(b, v.Type)
	b = append(b, ' ')
	return append(b, v.Name...)
}

// appendOp writes one statement without indentation or newline.
func appendOp(b []byte, op *Op) []byte {
	for i, v := range op.Outputs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendVar(b, v)
	}
	b = append(b, " = "...)
	b = append(b, op.Kind...)
	b = append(b, '(')
	b = appendArgs(b, op.Args)
	b = append(b, ')')
	if len(op.Attrs) > 0 {
		b = append(b, '[')
		b = appendArgs(b, op.Attrs)
		b = append(b, ']')
	}
	return append(b, ';')
}

// String returns the op as one MIL statement, without indentation.
func (op *Op) String() string { return string(appendOp(nil, op)) }

func appendArgs(b []byte, args []Arg) []byte {
	for i, a := range args {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, a.Name...)
		b = append(b, " = "...)
		b = appendExpr(b, a.Value)
	}
	return b
}

func appendExpr(b []byte, e Expr) []byte {
	switch e := e.(type) {
	case *Ref:
		if e != nil {
			return append(b, e.Name...)
		}
	case *Tuple:
		if e != nil {
			b = append(b, '(')
			for i, x := range e.Elems {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = appendExpr(b, x)
			}
			return append(b, ')')
		}
	case *Literal:
		if e != nil {
			return appendLiteral(b, e)
		}
	}
	return append(b, "<nil>"...)
}

// String returns the type's MIL spelling, as in tensor<fp16, [1, 4]> or bool.
func (t Type) String() string { return string(appendType(nil, t)) }

func appendType(b []byte, t Type) []byte {
	if !t.Tensor {
		return append(b, t.DType...)
	}
	b = append(b, "tensor<"...)
	b = append(b, t.DType...)
	b = append(b, ", ["...)
	for i, d := range t.Shape {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	return append(b, "]>"...)
}

// String returns the literal's MIL spelling.
func (l *Literal) String() string { return string(appendLiteral(nil, l)) }

func appendLiteral(b []byte, l *Literal) []byte {
	b = appendType(b, l.Type)
	b = append(b, '(')
	if l.Blob != nil {
		b = append(b, "BLOBFILE(path = string("...)
		b = appendQuoted(b, l.Blob.Path)
		b = append(b, "), offset = uint64("...)
		b = strconv.AppendUint(b, l.Blob.Offset, 10)
		return append(b, ")))"...)
	}
	list := l.Type.Tensor && len(l.Type.Shape) > 0
	if list {
		b = append(b, '[')
	}
	b = appendValues(b, l)
	if list {
		b = append(b, ']')
	}
	return append(b, ')')
}

// appendValues writes the literal's values, comma separated, from the slice
// its dtype selects; if that slice is empty, from whichever slice is set.
func appendValues(b []byte, l *Literal) []byte {
	which := classOf(l.Type.DType)
	if which == classUint && l.Type.DType != "uint64" {
		which = classInt
	}
	if which == classNone || l.valueCount() == 0 {
		switch {
		case len(l.Floats) > 0:
			which = classFloat
		case len(l.Ints) > 0:
			which = classInt
		case len(l.Bools) > 0:
			which = classBool
		default:
			which = classString
		}
	}
	switch which {
	case classFloat:
		for i, x := range l.Floats {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = AppendHexFloat(b, x)
		}
	case classInt:
		for i, x := range l.Ints {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = strconv.AppendInt(b, x, 10)
		}
	case classUint: // uint64: Ints holds the bit pattern
		for i, x := range l.Ints {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = strconv.AppendUint(b, uint64(x), 10)
		}
	case classBool:
		for i, x := range l.Bools {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = strconv.AppendBool(b, x)
		}
	default:
		for i, x := range l.Strings {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = appendQuoted(b, x)
		}
	}
	return b
}

// AppendHexFloat appends x as a C99 hexadecimal float, the way coremlc
// prints float literals (printf %a): 0x1p-3, 0x0p+0, 0x1.5p-17, -0x1.8p+1,
// and inf, -inf, nan.
func AppendHexFloat(b []byte, x float64) []byte {
	switch {
	case math.IsNaN(x):
		return append(b, "nan"...)
	case math.IsInf(x, 1):
		return append(b, "inf"...)
	case math.IsInf(x, -1):
		return append(b, "-inf"...)
	}
	start := len(b)
	b = strconv.AppendFloat(b, x, 'x', -1, 64)
	// strconv writes at least two exponent digits (p-03); C writes the
	// fewest (p-3). Drop leading zeros of the exponent, keeping one digit.
	p := start
	for b[p] != 'p' {
		p++
	}
	d := p + 2 // first exponent digit, after the sign
	z := d
	for z < len(b)-1 && b[z] == '0' {
		z++
	}
	if z > d {
		b = append(b[:d], b[z:]...)
	}
	return b
}

func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\t':
			esc = `\t`
		case '\r':
			esc = `\r`
		default:
			continue
		}
		b = append(b, s[last:i]...)
		b = append(b, esc...)
		last = i + 1
	}
	b = append(b, s[last:]...)
	return append(b, '"')
}
