package mil

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tError
	tIdent
	tInt    // decimal integer, optionally negative
	tFloat  // decimal or hexadecimal float, or -inf / -nan
	tString // text holds the unescaped value
	tLParen
	tRParen
	tLBrack
	tRBrack
	tLBrace
	tRBrace
	tLAngle
	tRAngle
	tComma
	tEq
	tSemi
	tArrow
)

var punctText = [...]string{
	tLParen: "(",
	tRParen: ")",
	tLBrack: "[",
	tRBrack: "]",
	tLBrace: "{",
	tRBrace: "}",
	tLAngle: "<",
	tRAngle: ">",
	tComma:  ",",
	tEq:     "=",
	tSemi:   ";",
	tArrow:  "->",
}

// token is one lexical token. text is the raw spelling for identifiers and
// numbers, and the unescaped value for strings.
type token struct {
	kind tokKind
	pos  Pos
	text string
}

// describe spells the token for an error message.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tIdent:
		return fmt.Sprintf("identifier %s", t.text)
	case tInt, tFloat:
		return "number " + t.text
	case tString:
		s := t.text
		if len(s) > 32 {
			s = s[:32] + "..."
		}
		return fmt.Sprintf("string %q", s)
	case tError:
		return "invalid token"
	}
	return "'" + punctText[t.kind] + "'"
}

// lexer splits MIL source text into tokens. Columns count bytes.
type lexer struct {
	s         string
	off       int
	line      int
	lineStart int
	err       *SyntaxError
}

func newLexer(src []byte) lexer {
	return lexer{s: string(src), line: 1}
}

func (l *lexer) pos(off int) Pos { return Pos{Line: l.line, Col: off - l.lineStart + 1} }

func (l *lexer) fail(off int, format string, args ...any) token {
	l.err = &SyntaxError{Pos: l.pos(off), Msg: fmt.Sprintf(format, args...)}
	return token{kind: tError, pos: l.err.Pos}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isHex(c byte) bool    { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
func isIdentChar(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '@'
}

// scan returns the next token. On a lexical error it returns a tError token
// and sets l.err.
func (l *lexer) scan() token {
	s := l.s
	for l.off < len(s) {
		c := s[l.off]
		switch {
		case c == '\n':
			l.off++
			l.line++
			l.lineStart = l.off
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			l.off++
			continue
		case c == '/' && l.off+1 < len(s) && s[l.off+1] == '/':
			if i := strings.IndexByte(s[l.off:], '\n'); i >= 0 {
				l.off += i
			} else {
				l.off = len(s)
			}
			continue
		}
		break
	}
	start := l.off
	if start >= len(s) {
		return token{kind: tEOF, pos: l.pos(start)}
	}
	c := s[start]
	switch {
	case isLetter(c):
		i := start + 1
		for i < len(s) && isIdentChar(s[i]) {
			i++
		}
		l.off = i
		return token{kind: tIdent, pos: l.pos(start), text: s[start:i]}
	case isDigit(c), c == '.' && start+1 < len(s) && isDigit(s[start+1]):
		return l.number(start)
	case c == '-':
		if start+1 < len(s) {
			switch d := s[start+1]; {
			case d == '>':
				l.off = start + 2
				return token{kind: tArrow, pos: l.pos(start)}
			case isDigit(d), d == '.':
				return l.number(start)
			case d == 'i' || d == 'n':
				i := start + 1
				for i < len(s) && isIdentChar(s[i]) {
					i++
				}
				if w := s[start+1 : i]; w == "inf" || w == "nan" {
					l.off = i
					return token{kind: tFloat, pos: l.pos(start), text: s[start:i]}
				}
			}
		}
		return l.fail(start, "unexpected character '-'")
	case c == '"':
		return l.str(start)
	}
	var k tokKind
	switch c {
	case '(':
		k = tLParen
	case ')':
		k = tRParen
	case '[':
		k = tLBrack
	case ']':
		k = tRBrack
	case '{':
		k = tLBrace
	case '}':
		k = tRBrace
	case '<':
		k = tLAngle
	case '>':
		k = tRAngle
	case ',':
		k = tComma
	case '=':
		k = tEq
	case ';':
		k = tSemi
	default:
		r, _ := utf8.DecodeRuneInString(s[start:])
		return l.fail(start, "unexpected character %q", r)
	}
	l.off = start + 1
	return token{kind: k, pos: l.pos(start)}
}

// number scans [-] digits [. digits] [e [+-] digits], or the C99 hex float
// [-] 0x hexdigits [. hexdigits] p [+-] digits.
func (l *lexer) number(start int) token {
	s := l.s
	i := start
	if s[i] == '-' {
		i++
	}
	kind := tInt
	if i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
		i += 2
		digits := 0
		for i < len(s) && isHex(s[i]) {
			i++
			digits++
		}
		if i < len(s) && s[i] == '.' {
			i++
			for i < len(s) && isHex(s[i]) {
				i++
				digits++
			}
		}
		if digits == 0 {
			return l.fail(start, "malformed hexadecimal float %q", s[start:i])
		}
		if i >= len(s) || s[i] != 'p' && s[i] != 'P' {
			return l.fail(start, "hexadecimal float %q needs a 'p' exponent", s[start:i])
		}
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || !isDigit(s[i]) {
			return l.fail(start, "malformed exponent in %q", s[start:i])
		}
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		kind = tFloat
	} else {
		digits := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
		if i < len(s) && s[i] == '.' {
			kind = tFloat
			i++
			for i < len(s) && isDigit(s[i]) {
				i++
				digits++
			}
		}
		if digits == 0 {
			return l.fail(start, "malformed number %q", s[start:i])
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			kind = tFloat
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '-') {
				i++
			}
			if i >= len(s) || !isDigit(s[i]) {
				return l.fail(start, "malformed exponent in %q", s[start:i])
			}
			for i < len(s) && isDigit(s[i]) {
				i++
			}
		}
	}
	if i < len(s) && (isIdentChar(s[i]) || s[i] == '.') {
		return l.fail(start, "malformed number %q", s[start:i+1])
	}
	l.off = i
	return token{kind: kind, pos: l.pos(start), text: s[start:i]}
}

// str scans a double-quoted string. Escapes: \" \\ \n \t \r. A raw newline
// ends the line and is an error.
func (l *lexer) str(start int) token {
	s := l.s
	i := start + 1
	// Fast path: no escapes.
	for i < len(s) && s[i] != '"' && s[i] != '\\' && s[i] != '\n' {
		i++
	}
	if i < len(s) && s[i] == '"' {
		l.off = i + 1
		return token{kind: tString, pos: l.pos(start), text: s[start+1 : i]}
	}
	var b strings.Builder
	b.WriteString(s[start+1 : i])
	for {
		if i >= len(s) || s[i] == '\n' {
			return l.fail(start, "unterminated string")
		}
		c := s[i]
		switch c {
		case '"':
			l.off = i + 1
			return token{kind: tString, pos: l.pos(start), text: b.String()}
		case '\\':
			if i+1 >= len(s) {
				return l.fail(start, "unterminated string")
			}
			switch e := s[i+1]; e {
			case '"', '\\':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				r, _ := utf8.DecodeRuneInString(s[i+1:])
				return l.fail(i, "unknown escape \\%c in string", r)
			}
			i += 2
		default:
			b.WriteByte(c)
			i++
		}
	}
}
