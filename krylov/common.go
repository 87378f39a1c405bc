package krylov

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/ane" // the engine, where there is one
	_ "github.com/anemone-go/anemone/shim/sim" // the simulator everywhere else
)

// checkSystem validates a solve's inputs.
func checkSystem(a Operator, b []float64, s Settings) error {
	if a == nil {
		return fmt.Errorf("krylov: nil operator: %w", ErrShape)
	}
	n := a.Dims()
	if len(b) != n {
		return fmt.Errorf("krylov: b has length %d, operator has %d: %w", len(b), n, ErrShape)
	}
	if s.X0 != nil && len(s.X0) != n {
		return fmt.Errorf("krylov: X0 has length %d, operator has %d: %w", len(s.X0), n, ErrShape)
	}
	if i, v, bad := firstNonFinite(b); bad {
		return fmt.Errorf("krylov: b[%d] is %g: %w", i, v, ErrInput)
	}
	if i, v, bad := firstNonFinite(s.X0); bad {
		return fmt.Errorf("krylov: X0[%d] is %g: %w", i, v, ErrInput)
	}
	if s.Tol < 0 || math.IsNaN(s.Tol) {
		return fmt.Errorf("krylov: Tol %g must be positive: %w", s.Tol, ErrInput)
	}
	if s.Unroll < 0 || s.Restart < 0 || s.MaxDispatches < 0 {
		return fmt.Errorf("krylov: Unroll %d, Restart %d, MaxDispatches %d must not be negative: %w", s.Unroll, s.Restart, s.MaxDispatches, ErrInput)
	}
	return nil
}

func firstNonFinite(x []float64) (int, float64, bool) {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i, v, true
		}
	}
	return 0, 0, false
}

// device returns the settings' device, opening the default one if unset.
func device(s Settings) (shim.Device, error) {
	if s.Device != nil {
		return s.Device, nil
	}
	d, err := defaultDevice()
	if err != nil {
		return nil, fmt.Errorf("krylov: %w", err)
	}
	return d, nil
}

func norm2(x []float64) float64 {
	// Scaled sum of squares: no overflow or underflow for any finite x.
	scale, ssq := 0.0, 1.0
	for _, v := range x {
		if v == 0 {
			continue
		}
		a := math.Abs(v)
		if scale < a {
			ssq = 1 + ssq*(scale/a)*(scale/a)
			scale = a
		} else {
			ssq += (v / scale) * (v / scale)
		}
	}
	return scale * math.Sqrt(ssq)
}

func dot(x, y []float64) float64 {
	s := 0.0
	for i, v := range x {
		s += v * y[i]
	}
	return s
}

// residual sets r = b − A·x and returns ‖r‖₂.
func residual(r []float64, a Operator, x, b []float64) float64 {
	a.MulVecTo(r, x)
	for i := range r {
		r[i] = b[i] - r[i]
	}
	return norm2(r)
}

// pow2Exp returns e with 2^e·v in [½, 1) for v > 0.
func pow2Exp(v float64) int {
	_, e := math.Frexp(v)
	return -e
}

func toFloat32(dst []float32, src []float64, scale float64) {
	for i, v := range src {
		dst[i] = float32(v * scale)
	}
}
