package linalg

import (
	"errors"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// TestDeviceErrors: a closed device is ErrInvalid (a setting that cannot
// be used) saying so, and a device whose compile budget is used up is
// ErrUnsupported (past the device's limits) keeping the shim's remedy;
// both keep the shim's sentinel in the chain, and neither is a bare shim
// error without one of this package's sentinels.
func TestDeviceErrors(t *testing.T) {
	a := mat.NewDense(2, 2, []float64{2, 1, 1, 3})
	dev, err := shim.Open("sim")
	require.NoError(t, err)
	_, err = MatMul(a, a, &Settings{Device: dev}) // probes the accumulator
	require.NoError(t, err)
	require.NoError(t, dev.Close())
	for name, run := range map[string]func() error{
		"MatMul":    func() error { _, err := MatMul(a, a, &Settings{Device: dev}); return err },
		"Norm2":     func() error { _, err := Norm2(a, &Settings{Device: dev}); return err },
		"Inverse":   func() error { _, err := Inverse(a, &Settings{Device: dev}); return err },
		"SolveMany": func() error { _, err := SolveMany(a, a, &Settings{Device: dev}); return err },
	} {
		err := run()
		require.True(t, errors.Is(err, ErrInvalid) && errors.Is(err, shim.ErrClosed), "%s: %v", name, err)
		require.Contains(t, err.Error(), "is closed; pass an open one", name)
	}

	dev = openDevice(t, "sim")
	var last error
	for n := 1; n <= 2*shim.DefaultCompileBudget && last == nil; n++ {
		_, last = MatMul(mat.NewDense(1, 1, []float64{1}), mat.NewDense(1, n, nil), &Settings{Device: dev, Precision: precision.FP16})
	}
	require.True(t, errors.Is(last, ErrUnsupported) && errors.Is(last, shim.ErrBudget), "%v", last)
	require.True(t, strings.HasPrefix(last.Error(), "linalg: MatMul: ") && strings.Contains(last.Error(), "open a fresh device"), "%v", last)
}
