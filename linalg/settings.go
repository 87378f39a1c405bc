package linalg

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// Defaults of zero Settings fields.
const (
	// DefaultTol is the normwise backward error Solve and SolveMany stop
	// at, ‖b − A·x‖∞ / (‖A‖∞·‖x‖∞ + ‖b‖∞), for A and for the equilibrated
	// matrix (see Factorization.SolveMany): about √n·2⁻⁵³ for n = 256, the
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
//
// On a device whose matmul rounds every partial sum to fp16 (found by the
// accumulator probe; the simulator's "sim-narrow"), 6-bit digit sums are
// not exact past 2¹¹ units and stall near 1e-3, so Compensated takes 10
// limbs of 3-bit digits instead: the same 30 bits, digit products ≤ 16
// whose running sums of random data stay below 2¹¹ (data-dependent: the
// largest partial sum of N such products grows like √N, about 7·√N). No
// limb count reaches float64 there (12 limbs of 3 bits are 36 bits), so
// Float64 is ErrUnsupported on such a device.
const (
	compensatedLimbs       = 5
	float64Limbs           = 9
	narrowBits             = 3
	narrowCompensatedLimbs = 10
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
	// Block is the panel width of Factorize (and of Solve and SolveMany);
	// zero chooses it from n (see Factorize).
	Block int
}

// Stats reports the work of one call.
type Stats struct {
	// Dispatches counts device programs run; Programs the programs
	// compiled by this call (a program of a shape the device already
	// holds is not compiled again; neither counts the accumulator probe,
	// which runs once per device).
	Dispatches, Programs int
	// Flops counts the device's fp16 multiply-adds ×2, limb products
	// included.
	Flops int64
	// Mode is the device arithmetic the result came from.
	Mode precision.Mode
	// NewtonSchulz counts Inverse's Newton–Schulz steps (two products
	// each). Refinements counts refinement steps: GMRES-IR steps (Solve,
	// SolveMany, Factorization), Inverse's corrections, Norm2's iterations.
	// GMRES counts the GMRES iterations inside them.
	NewtonSchulz, Refinements, GMRES int
	// Block is the factorization's panel width; Rescales counts the
	// power-of-two rescalings of the device-resident matrix.
	Block, Rescales int
	// HostFlops counts the host's float64 flops (panels, triangular solves,
	// residuals, GMRES, scaling): work the host does besides moving data.
	HostFlops int64
	// History: Solve and SolveMany, the largest backward error over the
	// columns before every refinement step; Inverse, ‖I − A·X‖∞ of every
	// iterate; Norm2, the Ritz value of every iteration.
	History []float64
	// Cond estimates κ₁(A) = ‖A‖₁·‖A⁻¹‖₁ from the factors (Solve,
	// SolveMany; see Factorization.Cond), κ∞(A) from the inverse
	// (Inverse).
	Cond float64
	// Narrow reports a device whose matmul rounds partial sums to fp16
	// (measured once per device); compensated products then use 10 limbs
	// of 3-bit digits.
	Narrow bool
	// Device is time spent in device dispatches (the simulator's when there
	// is no engine), Host the host's work (float64 refinement, scaling,
	// limb splits and fp16 conversion), Build the graph construction,
	// lowering and the device's compile (on the simulator, its parse).
	Device, Host, Build time.Duration
	// ModeledTime is the modeled engine time of the dispatches
	// (lower.Estimate, for the device's family; the simulator's programs
	// as ane-m1), ModeledCompile the modeled compile and load time of the
	// programs compiled (lower.EstimateCompile; zero when every program
	// was already compiled), and ModeledTotal what a user waits for:
	// ModeledTime + ModeledCompile + Host + Build.
	ModeledTime, ModeledCompile, ModeledTotal time.Duration
}

// finish fills in ModeledTotal.
func (s *Stats) finish() { s.ModeledTotal = s.ModeledTime + s.ModeledCompile + s.Host + s.Build }

type config struct {
	dev    shim.Device
	mode   precision.Mode // as given (0 = function default)
	tol    float64
	budget int
	stats  *Stats
	wide   bool // the device accumulates matmuls in float32
	block  int
}

// resolve checks s and fills in the defaults; fn names the caller.
func resolve(fn string, s *Settings) (*config, error) {
	var in Settings
	if s != nil {
		in = *s
	}
	c := &config{dev: in.Device, mode: in.Precision, tol: in.Tol, budget: in.MaxDispatches, stats: in.Stats, block: in.Block}
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
	case in.Block < 0:
		return nil, fmt.Errorf("linalg: %s: Block = %d, want ≥ 0 (0 chooses it from n): %w", fn, in.Block, ErrInvalid)
	case c.budget < 0:
		return nil, fmt.Errorf("linalg: %s: MaxDispatches = %d, want ≥ 0 (0 means %d): %w", fn, c.budget, DefaultMaxDispatches, ErrInvalid)
	}
	if c.budget == 0 {
		c.budget = DefaultMaxDispatches
	}
	if c.dev == nil {
		d, err := shim.Shared()
		if err != nil {
			return nil, fmt.Errorf("linalg: %s: opening the default device: %w", fn, err)
		}
		c.dev = d
	}
	wide, err := wideAccumulator(c.dev)
	if err != nil {
		return nil, wrapDevice(fn, err)
	}
	c.wide = wide
	c.stats.Narrow = !wide
	if !wide && c.mode == precision.Float64 {
		return nil, fmt.Errorf("linalg: %s: Float64 products need a matmul that accumulates in float32, and device %q rounds its partial sums to fp16, where no limb split is exact past 36 bits; use Compensated (about 1e-8): %w",
			fn, c.dev.Info().Name, ErrUnsupported)
	}
	return c, nil
}

// productOptions maps a mode to the limb options of precision's products
// (see the limb constants; Float64 never reaches here on a narrow device).
func (c *config) productOptions(m precision.Mode) precision.MatMulOptions {
	switch {
	case m == precision.FP16:
		return precision.MatMulOptions{Mode: precision.FP16}
	case m == precision.Float64:
		return precision.MatMulOptions{Mode: precision.Float64, Limbs: float64Limbs}
	case !c.wide:
		return precision.MatMulOptions{Mode: precision.Compensated, Bits: narrowBits, Limbs: narrowCompensatedLimbs}
	}
	return precision.MatMulOptions{Mode: precision.Compensated, Limbs: compensatedLimbs}
}

// fp16Err is the normwise relative error of one FP16 product with
// contraction length k: u16 = 2⁻¹¹ with a float32 accumulator (operand and
// output roundings, each RMS below u16/√3). An fp16 running sum adds a
// rounding of every partial sum s_j, RMS below u16·|s_j|; for random terms
// |s_j| grows like √j, so the error of the sum is about
// u16·√(Σ j)/√k ≈ u16·√(k/2) of its size: u16·(1 + √(k/2)) in all.
func (c *config) fp16Err(k int) float64 {
	if c.wide {
		return 0x1p-11
	}
	return 0x1p-11 * (1 + math.Sqrt(float64(k)/2))
}

// wrapBudget is the error of a call that reached MaxDispatches.
func wrapBudget(fn string, c *config) error {
	return fmt.Errorf("linalg: %s: MaxDispatches = %d reached; raise it (0 means %d): %w", fn, c.budget, DefaultMaxDispatches, ErrNotConverged)
}

// wrapDevice maps errors of precision and the device to this package's
// sentinels, keeping the original in the chain.
func wrapDevice(fn string, err error) error {
	switch {
	case errors.Is(err, precision.ErrRange) || errors.Is(err, shim.ErrRange):
		return fmt.Errorf("linalg: %s: %w", fn, errors.Join(ErrRange, err))
	case errors.Is(err, precision.ErrShape):
		return fmt.Errorf("linalg: %s: %w", fn, errors.Join(ErrShape, err))
	case errors.Is(err, lower.ErrUnsupported) || errors.Is(err, shim.ErrUnsupported) || errors.Is(err, precision.ErrInvalid) ||
		errors.Is(err, shim.ErrBudget): // the device's compile limit, whose message says what to do
		return fmt.Errorf("linalg: %s: %w", fn, errors.Join(ErrUnsupported, err))
	case errors.Is(err, shim.ErrClosed):
		return fmt.Errorf("linalg: %s: the device (Settings.Device) is closed; pass an open one, or nil for the shared default: %w", fn, errors.Join(ErrInvalid, err))
	}
	return fmt.Errorf("linalg: %s: %w", fn, err)
}
