package ane

import (
	"errors"
	"fmt"

	"github.com/anemone-go/anemone/lower"
)

// ConcatPacked reports whether the program's outputs are packed into one
// surface, which the lowering does with a tree of concats.
func ConcatPacked(p *lower.Program) bool {
	return p != nil && len(p.OutputSurfaces) == 1 && len(p.Outputs) > 1
}

// RetryUnpacked decides whether a failed build of p is tried once more with
// one output surface per output (lower.SplitOutputs): when the compiler
// refused a concat-packed program. Concat is reported rejected outright by
// one driver on M4 Max (docs/ENGINE.md §7), and the compiler's own message
// rarely says which op it objected to, so any compile failure of such a
// program qualifies; a failure of any other step, or of a program without
// packing concats, does not.
func RetryUnpacked(p *lower.Program, err error) bool {
	var e *Error
	return ConcatPacked(p) && errors.As(err, &e) && e.Op == "compile"
}

// compileFallback builds p with build and, when RetryUnpacked says so,
// builds lower.SplitOutputs(p) once. It returns what build returned, the
// program that was built, and a warning saying why when it is the split
// one. When both fail, the error holds both failures.
func compileFallback[T any](p *lower.Program, build func(*lower.Program) (T, error)) (T, *lower.Program, string, error) {
	x, err := build(p)
	if err == nil || !RetryUnpacked(p, err) {
		return x, p, "", err
	}
	split, serr := lower.SplitOutputs(p)
	if serr != nil {
		return x, p, "", fmt.Errorf("%w (and its outputs cannot be split into one surface each: %v)", err, serr)
	}
	y, err2 := build(split)
	if err2 != nil {
		var zero T
		return zero, p, "", fmt.Errorf("ane: the program with its %d outputs packed by concats failed to compile, and so did it with one surface per output: %w", len(p.Outputs), errors.Join(err, err2))
	}
	return y, split, fmt.Sprintf("compiled with one output surface per output (%d surfaces, padded to equal sizes) after the compiler refused the concat-packed outputs: %v", len(split.OutputSurfaces), err), nil
}
