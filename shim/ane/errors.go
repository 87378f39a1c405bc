package ane

import (
	"errors"
	"fmt"
	"strings"

	"github.com/anemone-go/anemone/shim"
)

// sentinel is a package error that also matches a shim error under
// errors.Is, so callers can test either the specific or the general cause.
type sentinel struct {
	msg    string
	parent error
}

func (s *sentinel) Error() string { return s.msg }
func (s *sentinel) Unwrap() error { return s.parent }

// Errors wrapped by this package.
var (
	// ErrDevice reports that a call into AppleNeuralEngine.framework failed.
	// Every *Error wraps it.
	ErrDevice = errors.New("ane: Neural Engine call failed")
	// ErrBudget reports that the per-process compile budget is used up; it
	// is shim.ErrBudget, which every device wraps.
	ErrBudget = shim.ErrBudget
	// ErrLayout reports a compiled model whose I/O layout this package cannot
	// drive, or that does not match the program's inputs and outputs. It
	// matches shim.ErrUnsupported under errors.Is.
	ErrLayout error = &sentinel{"ane: unexpected I/O layout", shim.ErrUnsupported}
	// ErrProgram reports a lower.Program this device will not compile
	// (malformed, or lowered for a target it cannot honour). It matches
	// shim.ErrUnsupported under errors.Is.
	ErrProgram error = &sentinel{"ane: program not accepted", shim.ErrUnsupported}
	// ErrClash reports that the framework gave a program the model
	// identifier of a different program still open in this process. The
	// framework names the model's directory, and is reported to share the
	// compiled program, by that identifier, so running it would run the
	// other program's weights.
	ErrClash = errors.New("ane: two programs share one model identifier")
)

// within adds context to an error of this package, keeping its message
// starting with the package name: an ErrLayout error becomes
// "ane: unexpected I/O layout: <ctx>: <detail>", still wrapping ErrLayout;
// any other becomes "ane: <ctx>: <err>", wrapping err.
func within(ctx string, err error) error {
	if errors.Is(err, ErrLayout) {
		detail := strings.TrimPrefix(err.Error(), ErrLayout.Error()+": ")
		return fmt.Errorf("%w: %s: %s", ErrLayout, ctx, detail)
	}
	return fmt.Errorf("ane: %s: %w", ctx, err)
}

// ANE error codes from the framework's _ANEErrors table.
// The table comes from a decompiled iOS 18.2 image; that macOS uses the same
// numbers is unconfirmed.
const (
	CodeEntitlement      = 1
	CodeTimeout          = 3
	CodeProgramCreation  = 4
	CodeInferenceOverrun = 5
	CodeProgramLoad      = 6
	CodeInference        = 8
	CodeFileAccess       = 9
	CodeInvalidModel     = 10
	CodeMapFailure       = 13
	CodeUnmapFailure     = 14
	CodeChainingPrepare  = 15
	CodeFileNotFound     = 16
	CodeProgramNotFound  = 23
)

var codeMessages = map[int]string{
	CodeEntitlement:      "missing entitlement",
	CodeTimeout:          "timeout",
	CodeProgramCreation:  "program creation failure",
	CodeInferenceOverrun: "inference overflow",
	CodeProgramLoad:      "program load failure",
	CodeInference:        "program inference error (status 0x1d is reported for unequal or too small surfaces)",
	CodeFileAccess:       "file access error",
	CodeInvalidModel:     "invalid model",
	CodeMapFailure:       "IOSurface map failure",
	CodeUnmapFailure:     "IOSurface unmap failure",
	CodeChainingPrepare:  "program chaining prepare error",
	CodeFileNotFound:     "file not found",
	CodeProgramNotFound:  "program not found",
}

// ErrorDomain is the NSError domain of the framework's own errors. The
// meanings of the _ANEErrors codes above are applied only to errors of
// exactly this domain: a code from any other domain (POSIX, Mach, the
// compiler's) means something else.
const ErrorDomain = "com.apple.appleneuralengine"

// CodeMessage describes an ANE error code, or says that it is unknown.
func CodeMessage(code int) string {
	if m, ok := codeMessages[code]; ok {
		return m
	}
	return fmt.Sprintf("unknown ANE error code %d", code)
}

// Cause is one error of an NSError's chain of underlying errors
// (userInfo[NSUnderlyingErrorKey], then that error's own, and so on).
type Cause struct {
	Domain string
	Code   int
	Desc   string // its localizedDescription
}

func (c Cause) String() string {
	var b strings.Builder
	if c.Desc != "" {
		b.WriteString(c.Desc)
		b.WriteString(" ")
	}
	b.WriteString("(")
	if c.Domain == ErrorDomain {
		fmt.Fprintf(&b, "%s, ", CodeMessage(c.Code))
	}
	fmt.Fprintf(&b, "code %d", c.Code)
	if c.Domain != "" {
		b.WriteString(", " + c.Domain)
	}
	b.WriteString(")")
	return b.String()
}

// Error is a failed framework call, with the NSError it returned if any.
// It wraps ErrDevice and, where one applies, a shim sentinel: compile and
// descriptor failures and invalid-model codes wrap shim.ErrUnsupported (the
// program was rejected); an entitlement failure wraps shim.ErrNoDevice.
//
// A compile failure's own text is usually just "ANECCompile() FAILED"; what
// the compiler objected to is in the underlying errors, which Error appends.
type Error struct {
	Op     string  // "descriptor", "compile", "load", "map", "evaluate", ...
	Code   int     // NSError code; 0 when the call returned NO without an NSError
	Domain string  // NSError domain
	Desc   string  // NSError localizedDescription
	Causes []Cause // the NSError's underlying errors, outermost first
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("ane: ")
	b.WriteString(e.Op)
	b.WriteString(" failed")
	switch {
	case e.Code == 0 && e.Domain == "":
		b.WriteString(" (no NSError)")
	case e.Domain == ErrorDomain:
		fmt.Fprintf(&b, ": %s (code %d, %s)", CodeMessage(e.Code), e.Code, e.Domain)
	case e.Domain == "":
		fmt.Fprintf(&b, ": code %d", e.Code)
	default:
		fmt.Fprintf(&b, ": code %d in domain %s", e.Code, e.Domain)
	}
	if e.Desc != "" {
		b.WriteString(": " + e.Desc)
	}
	for _, c := range e.Causes {
		b.WriteString("; underlying error: ")
		b.WriteString(c.String())
	}
	return b.String()
}

// Unwrap returns ErrDevice and the shim sentinel that applies, if any.
func (e *Error) Unwrap() []error {
	errs := []error{ErrDevice}
	if s := e.shimSentinel(); s != nil {
		errs = append(errs, s)
	}
	return errs
}

func (e *Error) shimSentinel() error {
	switch e.Op {
	case "descriptor", "compile":
		return shim.ErrUnsupported
	}
	if e.Domain != ErrorDomain {
		return nil
	}
	switch e.Code {
	case CodeEntitlement:
		return shim.ErrNoDevice
	case CodeProgramCreation, CodeInvalidModel:
		return shim.ErrUnsupported
	}
	return nil
}
