package ane

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/shim"
)

func TestCodeMessage(t *testing.T) {
	tests := []struct {
		code int
		want string
	}{
		{1, "missing entitlement"},
		{3, "timeout"},
		{4, "program creation failure"},
		{5, "inference overflow"},
		{6, "program load failure"},
		{9, "file access error"},
		{10, "invalid model"},
		{13, "IOSurface map failure"},
		{14, "IOSurface unmap failure"},
		{15, "program chaining prepare error"},
		{16, "file not found"},
		{23, "program not found"},
		{2, "unknown ANE error code 2"},
		{-7, "unknown ANE error code -7"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, CodeMessage(tc.code), "code %d", tc.code)
	}
	require.Contains(t, CodeMessage(8), "program inference error")
	require.Contains(t, CodeMessage(8), "0x1d")
}

func TestError(t *testing.T) {
	tests := []struct {
		name    string
		err     *Error
		msg     string
		shimErr error // nil: wraps no shim sentinel
	}{
		{"compile", &Error{Op: "compile", Code: 4, Domain: ErrorDomain, Desc: "InvalidMILProgram"},
			"ane: compile failed: program creation failure (code 4, com.apple.appleneuralengine): InvalidMILProgram", shim.ErrUnsupported},
		{"compile without NSError", &Error{Op: "compile"}, "ane: compile failed (no NSError)", shim.ErrUnsupported},
		{"descriptor", &Error{Op: "descriptor", Desc: "returned nil"}, "ane: descriptor failed (no NSError): returned nil", shim.ErrUnsupported},
		{"load", &Error{Op: "load", Code: 6, Domain: ErrorDomain}, "ane: load failed: program load failure (code 6, com.apple.appleneuralengine)", nil},
		{"load invalid model", &Error{Op: "load", Code: 10, Domain: ErrorDomain}, "ane: load failed: invalid model (code 10, com.apple.appleneuralengine)", shim.ErrUnsupported},
		{"evaluate", &Error{Op: "evaluate", Code: 8, Domain: ErrorDomain}, "", nil},
		{"entitlement", &Error{Op: "load", Code: 1, Domain: ErrorDomain}, "ane: load failed: missing entitlement (code 1, com.apple.appleneuralengine)", shim.ErrNoDevice},
		{"other domain", &Error{Op: "evaluate", Code: 4, Domain: "NSPOSIXErrorDomain", Desc: "Interrupted"},
			"ane: evaluate failed: code 4 in domain NSPOSIXErrorDomain: Interrupted", nil},
		// A domain that merely contains the ANE's name is not the ANE's:
		// code 1 there is not an entitlement failure.
		{"lookalike domain", &Error{Op: "load", Code: 1, Domain: "com.apple.appleneuralengine.compiler"},
			"ane: load failed: code 1 in domain com.apple.appleneuralengine.compiler", nil},
		{"code without domain", &Error{Op: "load", Code: 10}, "ane: load failed: code 10", nil},
		{"kern_return", &Error{Op: "IOSurfaceLock", Code: 1, Domain: "kern_return_t"}, "ane: IOSurfaceLock failed: code 1 in domain kern_return_t", nil},
		// The top-level text of a compile failure says nothing; the
		// underlying errors carry the compiler's complaint, and are appended
		// in order, with ANE code meanings only for the ANE's own domain.
		{"compile with underlying", &Error{Op: "compile", Code: 4, Domain: ErrorDomain, Desc: "ANECCompile() FAILED", Causes: []Cause{
			{Domain: "com.apple.ANECompiler", Code: 1, Desc: "InvalidMILProgram: unknown op 'rsqrt'"},
			{Domain: ErrorDomain, Code: 10, Desc: "bad net"},
		}}, "ane: compile failed: program creation failure (code 4, com.apple.appleneuralengine): ANECCompile() FAILED" +
			"; underlying error: InvalidMILProgram: unknown op 'rsqrt' (code 1, com.apple.ANECompiler)" +
			"; underlying error: bad net (invalid model, code 10, com.apple.appleneuralengine)", shim.ErrUnsupported},
		{"underlying without text", &Error{Op: "load", Code: 6, Domain: ErrorDomain, Causes: []Cause{{Code: 3}}},
			"ane: load failed: program load failure (code 6, com.apple.appleneuralengine); underlying error: (code 3)", nil},
	}
	sentinels := []error{shim.ErrUnsupported, shim.ErrNoDevice, shim.ErrRange, shim.ErrShape, shim.ErrClosed}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.msg != "" {
				require.Equal(t, tc.msg, tc.err.Error())
			}
			var err error = tc.err
			require.ErrorIs(t, err, ErrDevice)
			for _, s := range sentinels {
				require.Equal(t, s == tc.shimErr, errors.Is(err, s), "%v", s)
			}
			var e *Error
			require.ErrorAs(t, errors.Join(errors.New("x"), err), &e)
			require.Equal(t, tc.err.Code, e.Code)
		})
	}
}

func TestSentinels(t *testing.T) {
	require.ErrorIs(t, ErrLayout, shim.ErrUnsupported)
	require.ErrorIs(t, ErrProgram, shim.ErrUnsupported)
	require.NotErrorIs(t, ErrLayout, ErrProgram)
	require.NotErrorIs(t, ErrBudget, shim.ErrUnsupported)
}
