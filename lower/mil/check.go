package mil

import (
	"errors"
	"fmt"
)

// ErrCheck is the sentinel every *CheckError wraps.
var ErrCheck = errors.New("mil: invalid program")

// CheckError reports a semantic error found by Program.Check. Pos is zero
// for nodes that were built rather than parsed.
type CheckError struct {
	Pos Pos
	Msg string
}

func (e *CheckError) Error() string { return "mil: " + e.Pos.String() + ": " + e.Msg }

// Unwrap returns ErrCheck.
func (e *CheckError) Unwrap() error { return ErrCheck }

// Check performs light semantic checks and returns the first error found,
// as a *CheckError:
//   - function names are unique;
//   - within a function, every variable is defined once (as an input or an
//     op output) and before it is used in an argument, attribute or tuple;
//   - the function's outputs name defined variables;
//   - every op has at least one output and a kind;
//   - every literal holds as many values as its type has elements, in the
//     slice its dtype selects, integers within their dtype's range, and
//     every type's dtype is known;
//   - names (functions, opsets, variables, op kinds, arguments) are
//     identifiers [A-Za-z_][A-Za-z0-9_@]*, the version is empty or digits
//     and dots, and tuples nest at most 64 deep.
//
// A program that passes Check prints as text that Parse accepts, and
// printing is then a fixed point. Check does not check op signatures or
// shapes.
func (p *Program) Check() error {
	if p.Version != "" && !isVersion(p.Version) {
		return &CheckError{Msg: fmt.Sprintf("version %q is not digits and dots", p.Version)}
	}
	funcs := make(map[string]Pos)
	for _, f := range p.Functions {
		if f == nil {
			return &CheckError{Msg: "nil function"}
		}
		if !isIdent(f.Name) || !isIdent(f.Opset) {
			return &CheckError{Pos: f.Pos, Msg: fmt.Sprintf("function name %q or opset %q is not an identifier", f.Name, f.Opset)}
		}
		if prev, dup := funcs[f.Name]; dup {
			return &CheckError{Pos: f.Pos, Msg: fmt.Sprintf("function %s redefined (first defined at %s)", f.Name, prev)}
		}
		funcs[f.Name] = f.Pos
		if err := f.check(); err != nil {
			return err
		}
	}
	return nil
}

func (f *Function) check() error {
	defined := make(map[string]Pos, len(f.Inputs)+len(f.Ops))
	define := func(v Var) error {
		if !isIdent(v.Name) {
			return &CheckError{Pos: v.Pos, Msg: fmt.Sprintf("variable name %q is not an identifier", v.Name)}
		}
		if err := checkType(v.Pos, v.Type); err != nil {
			return err
		}
		if prev, dup := defined[v.Name]; dup {
			return &CheckError{Pos: v.Pos, Msg: fmt.Sprintf("%s redefined (first defined at %s)", v.Name, prev)}
		}
		defined[v.Name] = v.Pos
		return nil
	}
	for _, v := range f.Inputs {
		if err := define(v); err != nil {
			return err
		}
	}
	// later maps the names defined further down, to tell use-before-define
	// from an undefined name.
	later := make(map[string]Pos)
	for _, op := range f.Ops {
		if op != nil {
			for _, v := range op.Outputs {
				if _, ok := later[v.Name]; !ok {
					later[v.Name] = v.Pos
				}
			}
		}
	}
	var use func(e Expr, depth int) error
	use = func(e Expr, depth int) error {
		switch e := e.(type) {
		case *Ref:
			if e == nil {
				break
			}
			if !isIdent(e.Name) {
				return &CheckError{Pos: e.Pos, Msg: fmt.Sprintf("variable name %q is not an identifier", e.Name)}
			}
			if _, ok := defined[e.Name]; ok {
				return nil
			}
			if at, ok := later[e.Name]; ok {
				return &CheckError{Pos: e.Pos, Msg: fmt.Sprintf("%s used before its definition at %s", e.Name, at)}
			}
			return &CheckError{Pos: e.Pos, Msg: fmt.Sprintf("undefined variable %s", e.Name)}
		case *Tuple:
			if e == nil {
				break
			}
			if depth >= maxDepth {
				return &CheckError{Pos: e.Pos, Msg: "tuples nested too deeply"}
			}
			for _, x := range e.Elems {
				if err := use(x, depth+1); err != nil {
					return err
				}
			}
			return nil
		case *Literal:
			if e == nil {
				break
			}
			return checkLiteral(e)
		}
		return &CheckError{Msg: "nil value"}
	}
	for _, op := range f.Ops {
		if op == nil {
			return &CheckError{Pos: f.Pos, Msg: "nil op in function " + f.Name}
		}
		if !isIdent(op.Kind) {
			return &CheckError{Pos: op.Pos, Msg: fmt.Sprintf("op kind %q is not an identifier", op.Kind)}
		}
		if len(op.Outputs) == 0 {
			return &CheckError{Pos: op.Pos, Msg: op.Kind + " op without outputs"}
		}
		for _, list := range [2][]Arg{op.Args, op.Attrs} {
			for _, a := range list {
				if !isIdent(a.Name) {
					return &CheckError{Pos: op.Pos, Msg: fmt.Sprintf("%s argument name %q is not an identifier", op.Kind, a.Name)}
				}
				if err := use(a.Value, 0); err != nil {
					if ce, ok := err.(*CheckError); ok && ce.Pos == (Pos{}) {
						ce.Pos = op.Pos
						ce.Msg += " in " + op.Kind + " argument " + a.Name
					}
					return err
				}
			}
		}
		for _, v := range op.Outputs {
			if v.Pos == (Pos{}) {
				v.Pos = op.Pos
			}
			if err := define(v); err != nil {
				return err
			}
		}
	}
	for i, name := range f.Outputs {
		if _, ok := defined[name]; !ok {
			pos := f.Pos
			if i < len(f.OutputPos) {
				pos = f.OutputPos[i]
			}
			return &CheckError{Pos: pos, Msg: fmt.Sprintf("output %s of function %s is not defined", name, f.Name)}
		}
	}
	return nil
}

func checkType(pos Pos, t Type) error {
	if !KnownDType(t.DType) {
		return &CheckError{Pos: pos, Msg: fmt.Sprintf("unknown dtype %q", t.DType)}
	}
	if !t.Tensor && len(t.Shape) > 0 {
		return &CheckError{Pos: pos, Msg: fmt.Sprintf("scalar %s type has a shape", t.DType)}
	}
	if elementCount(t) < 0 {
		return &CheckError{Pos: pos, Msg: fmt.Sprintf("type %s has a negative or overflowing shape", t)}
	}
	return nil
}

func checkLiteral(l *Literal) error {
	if err := checkType(l.Pos, l.Type); err != nil {
		return err
	}
	if l.Blob != nil {
		return nil
	}
	want := elementCount(l.Type)
	if n := l.valueCount(); n != want {
		return &CheckError{Pos: l.Pos, Msg: fmt.Sprintf("%s literal holds %d values of its dtype, want %d", l.Type, n, want)}
	}
	if info := dtypes[l.Type.DType]; info.bits > 0 && info.bits < 64 {
		lo, hi := -int64(1)<<(info.bits-1), int64(1)<<(info.bits-1)-1
		if info.class == classUint {
			lo, hi = 0, int64(1)<<info.bits-1
		}
		for _, v := range l.Ints {
			if v < lo || v > hi {
				return &CheckError{Pos: l.Pos, Msg: fmt.Sprintf("value %d out of range for %s", v, l.Type.DType)}
			}
		}
	}
	return nil
}

// isIdent reports whether s matches [A-Za-z_][A-Za-z0-9_@]*.
func isIdent(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentChar(s[i]) {
			return false
		}
	}
	return true
}
