package reference

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
)

// nrm2 returns ‖x‖₂ without overflow or harmful underflow.
func nrm2(x []float64) float64 { return floats.Norm(x, 2) }

func dot(x, y []float64) float64 { return floats.Dot(x, y) }

// axpy sets y ← y + a·x.
func axpy(a float64, x, y []float64) { floats.AddScaled(y, a, x) }

// residual writes r = b − A·x and returns ‖r‖₂.
func residual(a Operator, x, b, r []float64) float64 {
	a.MulVecTo(r, x)
	for i := range r {
		r[i] = b[i] - r[i]
	}
	return nrm2(r)
}

// checkFinite returns an ErrInput error naming the first NaN or Inf in x.
func checkFinite(fn, name string, x []float64) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("reference: %s: %s[%d] = %v: %w", fn, name, i, v, ErrInput)
		}
	}
	return nil
}

func allZero(x []float64) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}
