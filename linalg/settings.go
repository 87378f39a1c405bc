package linalg

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// Defaults of zero Settings fields.
const (
	// DefaultTol is the normwise backward error Solve and SolveMany stop
	// at, ‖b − A·x‖∞ / (‖A‖∞·‖x‖∞ + ‖b‖∞): about √n·2⁻⁵³ for n = 256, the
	// stopping rule of MAGMA's and cuSOLVER's mixed-precision solvers.
	// Inverse stops at ‖I − A·X‖∞ ≤ DefaultTol·‖A‖∞·‖X‖∞·n, Norm2 at a
	// relative change of the Ritz value below DefaultNormTol.
	DefaultTol = 1e-15
	// DefaultNormTol is Norm2's stopping rule: the relative change of the
	// largest Ritz value between two iterations.
	DefaultNormTol = 1e-13
	// DefaultMaxDispatches bounds the device programs one call runs.
	DefaultMaxDispatches = 1000
)

// Limb counts of the modes (6-bit digits, precision.DefaultBits). The
// compensated product's normwise error is about 40·2^(−6·limbs)
// (precision.MatVec): 5 limbs give ≈ 4e-8, below the 1e-6 that Compensated
// promises for every shape; Float64 takes ⌈53/6⌉ = 9.
const (
	compensatedLimbs = 5
	float64Limbs     = 9
)

// Settings configure every function of the package. A nil *Settings means
// all defaults, and every zero field means its default.
type Settings struct {
	// Device runs the products; nil means shim.Open("") (the ANE where
	// present, the simulator otherwise), opened once per process.
	Device shim.Device
	// Precision selects the device arithmetic (see each function for what
	// each mode reaches). Zero means Compensated for MatMul, MatVec and
	// Norm2, and for Solve, SolveMany and Inverse "FP16 first, Compensated
	// if FP16 cannot reach the matrix".
	Precision precision.Mode
	// Tol is the stopping rule of Solve, SolveMany and Inverse (see
	// DefaultTol) and of Norm2 (DefaultNormTol).
	Tol float64
	// MaxDispatches bounds the device programs run by one call (default
	// DefaultMaxDispatches); the call stops with ErrNotConverged at the
	// bound.
	MaxDispatches int
	// Stats, if not nil, receives what the call did.
	Stats *Stats
}

// Stats reports the work of one call.
type Stats struct {
	// Dispatches counts device programs run; Programs the programs
	// compiled.
	Dispatches, Programs int
	// Flops counts the device's fp16 multiply-adds ×2, limb products
	// included.
	Flops int64
	// Mode is the device arithmetic the result came from.
	Mode precision.Mode
	// NewtonSchulz counts Newton–Schulz steps (two products each),
	// Refinements the host refinement steps (Norm2: its iterations).
	NewtonSchulz, Refinements int
	// History: Solve and SolveMany, the largest backward error over the
	// columns before every refinement step; Inverse, ‖I − A·X‖∞ of every
	// iterate; Norm2, the Ritz value of every iteration.
	History []float64
	// Cond estimates κ∞(A) = ‖A‖∞·‖A⁻¹‖∞ from the device inverse (Solve,
	// SolveMany, Inverse).
	Cond float64
	// Device is time spent in device dispatches (the simulator's when there
	// is no engine), Host the float64 work on the host, Build the graph
	// construction, lowering and compilation.
	Device, Host, Build time.Duration
}

type config struct {
	dev     shim.Device
	mode    precision.Mode // as given (0 = function default)
	tol     float64
	budget  int
	stats   *Stats
	maxSpat int
}

var (
	defaultOnce sync.Once
	defaultDev  shim.Device
	defaultErr  error
)

func defaultDevice() (shim.Device, error) {
	defaultOnce.Do(func() { defaultDev, defaultErr = shim.Open("") })
	return defaultDev, defaultErr
}

// resolve checks s and fills in the defaults; fn names the caller.
func resolve(fn string, s *Settings) (*config, error) {
	var in Settings
	if s != nil {
		in = *s
	}
	c := &config{dev: in.Device, mode: in.Precision, tol: in.Tol, budget: in.MaxDispatches, stats: in.Stats}
	if c.stats == nil {
		c.stats = &Stats{}
	} else {
		*c.stats = Stats{}
	}
	switch {
	case c.mode < 0 || c.mode > precision.Float64:
		return nil, fmt.Errorf("linalg: %s: unknown precision %v (want FP16, Compensated or Float64): %w", fn, c.mode, ErrInvalid)
	case c.tol < 0 || math.IsNaN(c.tol) || math.IsInf(c.tol, 0):
		return nil, fmt.Errorf("linalg: %s: Tol = %v, want a finite value ≥ 0 (0 means the default): %w", fn, c.tol, ErrInvalid)
	case c.budget < 0:
		return nil, fmt.Errorf("linalg: %s: MaxDispatches = %d, want ≥ 0 (0 means %d): %w", fn, c.budget, DefaultMaxDispatches, ErrInvalid)
	}
	if c.budget == 0 {
		c.budget = DefaultMaxDispatches
	}
	if c.dev == nil {
		d, err := defaultDevice()
		if err != nil {
			return nil, fmt.Errorf("linalg: %s: opening the default device: %w", fn, err)
		}
		c.dev = d
	}
	c.maxSpat = c.dev.Info().Target.MaxSpatial
	if c.maxSpat <= 0 {
		c.maxSpat = 16384
	}
	return c, nil
}

// productOptions maps a mode to the limb options of precision's products.
func productOptions(m precision.Mode) precision.MatMulOptions {
	switch m {
	case precision.FP16:
		return precision.MatMulOptions{Mode: precision.FP16}
	case precision.Float64:
		return precision.MatMulOptions{Mode: precision.Float64, Limbs: float64Limbs}
	}
	return precision.MatMulOptions{Mode: precision.Compensated, Limbs: compensatedLimbs}
}

// wrapDevice maps errors of precision and the device to this package's
// sentinels, keeping the original in the chain.
func wrapDevice(fn string, err error) error {
	switch {
	case errors.Is(err, precision.ErrRange) || errors.Is(err, shim.ErrRange):
		return fmt.Errorf("linalg: %s: %w", fn, errors.Join(ErrRange, err))
	case errors.Is(err, precision.ErrShape):
		return fmt.Errorf("linalg: %s: %w", fn, errors.Join(ErrShape, err))
	case errors.Is(err, lower.ErrUnsupported) || errors.Is(err, shim.ErrUnsupported) || errors.Is(err, precision.ErrInvalid):
		return fmt.Errorf("linalg: %s: %w", fn, errors.Join(ErrUnsupported, err))
	}
	return fmt.Errorf("linalg: %s: %w", fn, err)
}
