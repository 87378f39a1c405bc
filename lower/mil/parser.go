package mil

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSyntax is the sentinel every *SyntaxError wraps.
var ErrSyntax = errors.New("mil: syntax error")

// SyntaxError reports malformed MIL text at a position.
type SyntaxError struct {
	Pos Pos
	Msg string
}

func (e *SyntaxError) Error() string { return "mil: " + e.Pos.String() + ": " + e.Msg }

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// bailout carries a syntax error out of the recursive descent.
type bailout struct{ err *SyntaxError }

// Parse reads MIL text. It accepts what Print writes and also the older
// coremlc spellings: the program(1.0) header with
// dict<tensor<string, []>, tensor<string, []>> buildInfo, rank-0 tensor
// scalars such as tensor<string, []>("x"), decimal floats, integers in float
// literals, nested list literals (flattened), // comments, both multi-output
// forms and any opset tag.
//
// Values are kept as written: a rank-0 tensor literal stays a rank-0 tensor
// (Type.Tensor true), floats are not rounded to their dtype, and uint64
// values are stored in Literal.Ints as their bit pattern. The buildInfo and
// BLOBFILE spellings are normalized, since the AST does not record them.
//
// Parse checks what is local to a literal: dtype spellings, the number of
// elements against the type, the value kind (float, integer, bool, string)
// and integer ranges. It does not check that names are defined; see
// Program.Check. Errors are *SyntaxError.
func Parse(src []byte) (prog *Program, err error) {
	p := &parser{lx: newLexer(src)}
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			prog, err = nil, b.err
		}
	}()
	p.next()
	return p.program(), nil
}

// Format parses src and prints it again: Print(Parse(src)).
func Format(src []byte) ([]byte, error) {
	p, err := Parse(src)
	if err != nil {
		return nil, err
	}
	return Print(p), nil
}

type parser struct {
	lx       lexer
	tok      token // the current token
	ahead    token
	hasAhead bool
	depth    int // tuple nesting
}

// maxDepth bounds the nesting of tuples and of literal lists.
const maxDepth = 64

func (p *parser) next() {
	if p.hasAhead {
		p.tok, p.hasAhead = p.ahead, false
	} else {
		p.tok = p.lx.scan()
	}
	if p.tok.kind == tError {
		panic(bailout{p.lx.err})
	}
}

func (p *parser) peek() token {
	if !p.hasAhead {
		p.ahead, p.hasAhead = p.lx.scan(), true
		if p.ahead.kind == tError {
			panic(bailout{p.lx.err})
		}
	}
	return p.ahead
}

func (p *parser) errorf(pos Pos, format string, args ...any) {
	panic(bailout{&SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...)}})
}

// expect consumes a token of kind k or fails with
// "expected 'k' <context>, found <token>".
func (p *parser) expect(k tokKind, context string) Pos {
	if p.tok.kind != k {
		p.errorf(p.tok.pos, "expected '%s' %s, found %s", punctText[k], context, p.tok.describe())
	}
	pos := p.tok.pos
	p.next()
	return pos
}

// ident consumes an identifier, described by what in errors.
func (p *parser) ident(what string) (string, Pos) {
	if p.tok.kind != tIdent {
		p.errorf(p.tok.pos, "expected %s, found %s", what, p.tok.describe())
	}
	t := p.tok
	p.next()
	return t.text, t.pos
}

// keyword consumes the identifier kw.
func (p *parser) keyword(kw, context string) {
	if p.tok.kind != tIdent || p.tok.text != kw {
		p.errorf(p.tok.pos, "expected %s %s, found %s", kw, context, p.tok.describe())
	}
	p.next()
}

func (p *parser) program() *Program {
	prog := &Program{}
	p.keyword("program", "at start of program")
	p.expect(tLParen, "after program")
	if p.tok.kind != tInt && p.tok.kind != tFloat || !isVersion(p.tok.text) {
		p.errorf(p.tok.pos, "expected version number, found %s", p.tok.describe())
	}
	prog.Version = p.tok.text
	p.next()
	p.expect(tRParen, "after program version")
	if p.tok.kind == tLBrack {
		prog.BuildInfo = p.buildInfo()
	}
	p.expect(tLBrace, "to open program body")
	for p.tok.kind != tRBrace {
		if p.tok.kind != tIdent || p.tok.text != "func" {
			p.errorf(p.tok.pos, "expected func or '}' closing program, found %s", p.tok.describe())
		}
		prog.Functions = append(prog.Functions, p.function())
	}
	p.next()
	if p.tok.kind != tEOF {
		p.errorf(p.tok.pos, "expected end of input after program, found %s", p.tok.describe())
	}
	return prog
}

func isVersion(s string) bool {
	if s == "" || !isDigit(s[0]) || !isDigit(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) && s[i] != '.' {
			return false
		}
	}
	return true
}

// buildInfo parses [buildInfo = dict<K, V>({{"k", "v"}, ...})].
func (p *parser) buildInfo() []KV {
	p.next() // [
	p.keyword("buildInfo", "in program attributes")
	p.expect(tEq, "after buildInfo")
	p.keyword("dict", "after buildInfo =")
	p.expect(tLAngle, "after dict")
	p.stringType()
	p.expect(tComma, "between dict key and value types")
	p.stringType()
	p.expect(tRAngle, "after dict value type")
	p.expect(tLParen, "before dict value")
	p.expect(tLBrace, "to open dict entries")
	var kvs []KV
	if p.tok.kind != tRBrace {
		for {
			p.expect(tLBrace, "to open dict entry")
			k := p.str("dict key")
			p.expect(tComma, "between dict key and value")
			v := p.str("dict value")
			p.expect(tRBrace, "to close dict entry")
			kvs = append(kvs, KV{Key: k, Value: v})
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
	}
	p.expect(tRBrace, "to close dict entries")
	p.expect(tRParen, "after dict value")
	p.expect(tRBrack, "after buildInfo")
	return kvs
}

// stringType parses string or tensor<string, []>.
func (p *parser) stringType() {
	pos := p.tok.pos
	t := p.typ()
	if t.DType != "string" || len(t.Shape) != 0 {
		p.errorf(pos, "buildInfo keys and values must be strings, found type %s", t)
	}
}

func (p *parser) str(what string) string {
	if p.tok.kind != tString {
		p.errorf(p.tok.pos, "expected %s string, found %s", what, p.tok.describe())
	}
	s := p.tok.text
	p.next()
	return s
}

// function parses func name<opset>(inputs) { statements } -> (outputs);
func (p *parser) function() *Function {
	f := &Function{Pos: p.tok.pos}
	p.next() // func
	f.Name, _ = p.ident("function name")
	p.expect(tLAngle, "before opset")
	f.Opset, _ = p.ident("opset name")
	p.expect(tRAngle, "after opset")
	p.expect(tLParen, "before function inputs")
	if p.tok.kind != tRParen {
		for {
			f.Inputs = append(f.Inputs, p.variable())
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
	}
	p.expect(tRParen, "after function inputs")
	p.expect(tLBrace, "to open function body")
	for p.tok.kind != tRBrace {
		if p.tok.kind == tEOF {
			p.errorf(p.tok.pos, "expected statement or '}' closing function %s, found end of input", f.Name)
		}
		f.Ops = append(f.Ops, p.statement())
	}
	p.next()
	p.expect(tArrow, "after function body")
	p.expect(tLParen, "before function outputs")
	if p.tok.kind != tRParen {
		for {
			name, pos := p.ident("output name")
			f.Outputs = append(f.Outputs, name)
			f.OutputPos = append(f.OutputPos, pos)
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
	}
	p.expect(tRParen, "after function outputs")
	if p.tok.kind == tSemi {
		p.next()
	}
	return f
}

// variable parses "type name".
func (p *parser) variable() Var {
	t := p.typ()
	name, pos := p.ident("variable name")
	return Var{Type: t, Name: name, Pos: pos}
}

// typ parses tensor<dtype, [dims]> or a scalar dtype.
func (p *parser) typ() Type {
	if p.tok.kind != tIdent {
		p.errorf(p.tok.pos, "expected type, found %s", p.tok.describe())
	}
	if p.tok.text == "tensor" && p.peek().kind == tLAngle {
		p.next()
		p.next()
		t := Type{Tensor: true, DType: p.dtype()}
		p.expect(tComma, "after tensor dtype")
		p.expect(tLBrack, "before tensor shape")
		if p.tok.kind != tRBrack {
			for {
				if p.tok.kind != tInt {
					p.errorf(p.tok.pos, "expected dimension, found %s", p.tok.describe())
				}
				d, err := strconv.Atoi(p.tok.text)
				if err != nil || d < 0 {
					p.errorf(p.tok.pos, "dimension %s out of range", p.tok.text)
				}
				t.Shape = append(t.Shape, d)
				p.next()
				if p.tok.kind != tComma {
					break
				}
				p.next()
			}
		}
		p.expect(tRBrack, "after tensor shape")
		p.expect(tRAngle, "after tensor type")
		return t
	}
	return Type{DType: p.dtype()}
}

func (p *parser) dtype() string {
	if p.tok.kind != tIdent {
		p.errorf(p.tok.pos, "expected dtype, found %s", p.tok.describe())
	}
	if !KnownDType(p.tok.text) {
		p.errorf(p.tok.pos, "unknown dtype %q", p.tok.text)
	}
	s := p.tok.text
	p.next()
	return s
}

// statement parses outputs = kind(args)[attrs];
func (p *parser) statement() *Op {
	op := &Op{Pos: p.tok.pos}
	if p.tok.kind == tLParen {
		p.next()
		for {
			op.Outputs = append(op.Outputs, p.variable())
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
		p.expect(tRParen, "after statement outputs")
	} else {
		for {
			op.Outputs = append(op.Outputs, p.variable())
			if p.tok.kind != tComma {
				break
			}
			p.next()
		}
	}
	p.expect(tEq, "after statement outputs")
	op.Kind, _ = p.ident("op name")
	p.expect(tLParen, "after op name")
	op.Args = p.args(tRParen, &argumentWords)
	if p.tok.kind == tLBrack {
		p.next()
		op.Attrs = p.args(tRBrack, &attributeWords)
	}
	p.expect(tSemi, "after statement")
	return op
}

// argWords spells the error contexts of argument and attribute lists.
type argWords struct{ name, afterName, after string }

var (
	argumentWords  = argWords{"argument name", "after argument name", "after arguments"}
	attributeWords = argWords{"attribute name", "after attribute name", "after attributes"}
)

// args parses name = value, ... up to and including the closing token.
func (p *parser) args(close tokKind, w *argWords) []Arg {
	if p.tok.kind == close {
		p.next()
		return nil
	}
	var args []Arg
	for {
		name, _ := p.ident(w.name)
		p.expect(tEq, w.afterName)
		args = append(args, Arg{Name: name, Value: p.value()})
		if p.tok.kind != tComma {
			break
		}
		p.next()
	}
	p.expect(close, w.after)
	return args
}

// value parses a variable reference, a tuple or a literal.
func (p *parser) value() Expr {
	switch p.tok.kind {
	case tLParen:
		t := &Tuple{Pos: p.tok.pos}
		if p.depth++; p.depth > maxDepth {
			p.errorf(p.tok.pos, "tuples nested too deeply")
		}
		defer func() { p.depth-- }()
		p.next()
		if p.tok.kind != tRParen {
			for {
				t.Elems = append(t.Elems, p.value())
				if p.tok.kind != tComma {
					break
				}
				p.next()
			}
		}
		p.expect(tRParen, "after tuple")
		return t
	case tIdent:
		next := p.peek().kind
		if p.tok.text == "tensor" && next == tLAngle || next == tLParen {
			return p.literal()
		}
		r := &Ref{Name: p.tok.text, Pos: p.tok.pos}
		p.next()
		return r
	}
	p.errorf(p.tok.pos, "expected value (variable, literal or tuple), found %s", p.tok.describe())
	return nil
}

// literal parses type(value), type([values]) or type(BLOBFILE(...)).
func (p *parser) literal() *Literal {
	l := &Literal{Pos: p.tok.pos}
	l.Type = p.typ()
	p.expect(tLParen, "after literal type")
	if p.tok.kind == tIdent && p.tok.text == "BLOBFILE" && p.peek().kind == tLParen {
		l.Blob = p.blobfile()
	} else {
		want := elementCount(l.Type)
		if l.Type.Tensor && len(l.Type.Shape) > 0 {
			lbrack := p.expect(tLBrack, "before tensor literal values")
			if p.tok.kind != tRBrack {
				p.elements(l, 0)
			}
			p.expect(tRBrack, "after tensor literal values")
			if n := l.valueCount(); n != want {
				if want < 0 {
					p.errorf(lbrack, "%s literal has %d elements, its shape overflows", l.Type, n)
				}
				p.errorf(lbrack, "%s literal has %d elements, want %d", l.Type, n, want)
			}
		} else {
			p.element(l)
		}
	}
	p.expect(tRParen, "after literal value")
	return l
}

// elements parses a comma-separated list of elements, where an element may
// itself be a bracketed list (flattened).
func (p *parser) elements(l *Literal, depth int) {
	if depth > maxDepth {
		p.errorf(p.tok.pos, "literal lists nested too deeply")
	}
	for {
		if p.tok.kind == tLBrack {
			p.next()
			if p.tok.kind != tRBrack {
				p.elements(l, depth+1)
			}
			p.expect(tRBrack, "after nested literal values")
		} else {
			p.element(l)
		}
		if p.tok.kind != tComma {
			return
		}
		p.next()
	}
}

// element parses one value of l's dtype and appends it.
func (p *parser) element(l *Literal) {
	t := p.tok
	dt := l.Type.DType
	switch info := dtypes[dt]; info.class {
	case classFloat:
		var x float64
		switch {
		case t.kind == tInt || t.kind == tFloat:
			var ok bool
			if x, ok = parseFloat(t.text); !ok {
				p.errorf(t.pos, "malformed number %s", t.text)
			}
		case t.kind == tIdent && t.text == "inf":
			x = math.Inf(1)
		case t.kind == tIdent && t.text == "nan":
			x = math.NaN()
		default:
			p.errorf(t.pos, "expected %s value, found %s", dt, t.describe())
		}
		l.Floats = append(l.Floats, x)
	case classInt, classUint:
		if t.kind != tInt {
			p.errorf(t.pos, "expected %s value, found %s", dt, t.describe())
		}
		v, ok := parseInt(t.text, info)
		if !ok {
			p.errorf(t.pos, "value %s out of range for %s", t.text, dt)
		}
		l.Ints = append(l.Ints, v)
	case classBool:
		if t.kind != tIdent || t.text != "true" && t.text != "false" {
			p.errorf(t.pos, "expected true or false, found %s", t.describe())
		}
		l.Bools = append(l.Bools, t.text == "true")
	case classString:
		if t.kind != tString {
			p.errorf(t.pos, "expected string value, found %s", t.describe())
		}
		l.Strings = append(l.Strings, t.text)
	}
	p.next()
}

// parseFloat converts a number token. Overflow gives ±inf and underflow
// ±0, as in C's strtod.
func parseFloat(s string) (float64, bool) {
	switch s {
	case "-inf":
		return math.Inf(-1), true
	case "-nan":
		return math.NaN(), true
	}
	x, err := strconv.ParseFloat(s, 64)
	return x, err == nil || errors.Is(err, strconv.ErrRange)
}

// parseInt parses a decimal integer and checks it fits the dtype. uint64
// values are returned as their bit pattern.
func parseInt(s string, info dtypeInfo) (int64, bool) {
	if info.class == classUint {
		if strings.HasPrefix(s, "-") {
			return 0, s == "-0" || strings.Trim(s[1:], "0") == ""
		}
		u, err := strconv.ParseUint(s, 10, 64)
		if err != nil || info.bits < 64 && u >= 1<<info.bits {
			return 0, false
		}
		return int64(u), true
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if info.bits < 64 {
		lim := int64(1) << (info.bits - 1)
		if v < -lim || v >= lim {
			return 0, false
		}
	}
	return v, true
}

// blobfile parses BLOBFILE(path = string("..."), offset = uint64(N)); the
// arguments may come in either order, each spelled new or old style.
func (p *parser) blobfile() *BlobRef {
	pos := p.tok.pos
	p.next() // BLOBFILE
	p.next() // (
	var ref BlobRef
	var havePath, haveOffset bool
	for {
		name, npos := p.ident("BLOBFILE argument name")
		p.expect(tEq, "after BLOBFILE argument name")
		vpos := p.tok.pos
		v, ok := p.value().(*Literal)
		switch {
		case name == "path" && !havePath:
			if !ok || v.Blob != nil || v.Type.DType != "string" || len(v.Type.Shape) != 0 {
				p.errorf(vpos, "BLOBFILE path must be a string literal")
			}
			ref.Path, havePath = v.Strings[0], true
		case name == "offset" && !haveOffset:
			if !ok || v.Blob != nil || v.Type.DType != "uint64" || len(v.Type.Shape) != 0 {
				p.errorf(vpos, "BLOBFILE offset must be a uint64 literal")
			}
			ref.Offset, haveOffset = uint64(v.Ints[0]), true
		default:
			p.errorf(npos, "unexpected BLOBFILE argument %s", name)
		}
		if p.tok.kind != tComma {
			break
		}
		p.next()
	}
	p.expect(tRParen, "after BLOBFILE arguments")
	if !havePath || !haveOffset {
		p.errorf(pos, "BLOBFILE needs both path and offset")
	}
	return &ref
}
