package linalg

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// TestTypedNilMatrix: a (*mat.Dense)(nil) in a mat.Matrix is not == nil,
// and its Dims panics; every entry point must report it as a nil operand
// (ErrShape), as it does an untyped nil, and never panic.
func TestTypedNilMatrix(t *testing.T) {
	s := &Settings{Device: openDevice(t, "sim")}
	var nd *mat.Dense
	good := mat.NewDense(2, 2, []float64{2, 1, 1, 3})
	f, err := Factorize(good, s)
	require.NoError(t, err)
	cases := map[string]func() error{
		"MatMul a":                func() error { _, err := MatMul(nd, good, s); return err },
		"MatMul b":                func() error { _, err := MatMul(good, nd, s); return err },
		"MatVec":                  func() error { _, err := MatVec(nd, []float64{1, 2}, s); return err },
		"Norm2":                   func() error { _, err := Norm2(nd, s); return err },
		"Inverse":                 func() error { _, err := Inverse(nd, s); return err },
		"Factorize":               func() error { _, err := Factorize(nd, s); return err },
		"Solve":                   func() error { _, err := Solve(nd, []float64{1, 2}, s); return err },
		"SolveMany a":             func() error { _, err := SolveMany(nd, good, s); return err },
		"SolveMany b":             func() error { _, err := SolveMany(good, nd, s); return err },
		"Factorization.SolveMany": func() error { _, err := f.SolveMany(nd); return err },
	}
	for name, run := range cases {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = run() })
			require.True(t, errors.Is(err, ErrShape), "%v", err)
			require.True(t, strings.HasPrefix(err.Error(), "linalg: ") && strings.Contains(err.Error(), "is nil"), "%v", err)
		})
	}
	// An untyped nil and a non-nil matrix are unchanged: the product of
	// good with itself is exact in every mode ([[5 5] [5 10]]).
	c, err := MatMul(good, good, s)
	require.NoError(t, err)
	require.Equal(t, []float64{5, 5, 5, 10}, c.RawMatrix().Data)
}
