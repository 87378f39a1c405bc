package sim

import (
	"errors"
	"fmt"

	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/shim"
)

// ErrInvalid reports a malformed program: an unknown variable, a missing or
// ill-typed argument, a declared type that does not match the inferred one,
// a signature that does not match the program's IOSpecs, a bad weight
// reference. Features the engine lacks and limits it imposes wrap
// shim.ErrUnsupported instead.
var ErrInvalid = errors.New("sim: invalid program")

// Error is the error type of Compile and Run. Pos is the position in the
// MIL text of the statement at fault, zero when none applies. Err is the
// sentinel it wraps (ErrInvalid, shim.ErrUnsupported, shim.ErrRange,
// shim.ErrShape or shim.ErrClosed), and Cause an underlying error (such as
// a *mil.SyntaxError), if any.
type Error struct {
	Pos   mil.Pos
	Msg   string
	Err   error
	Cause error
}

func (e *Error) Error() string {
	if e.Pos.Line == 0 {
		return "sim: " + e.Msg
	}
	return "sim: " + e.Pos.String() + ": " + e.Msg
}

// Unwrap returns the sentinel and the cause.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

func errAt(pos mil.Pos, sentinel error, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

func invalidf(pos mil.Pos, format string, args ...any) *Error {
	return errAt(pos, ErrInvalid, format, args...)
}

func unsupportedf(pos mil.Pos, format string, args ...any) *Error {
	return errAt(pos, shim.ErrUnsupported, format, args...)
}

// zeroPos marks errors that belong to no statement.
var zeroPos mil.Pos
