package krylov

import (
	"math"
	"time"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// Defaults for zero Settings fields.
//
// DefaultUnroll = 16 is the degree of CG's device polynomial, chosen by
// measurement on the family sweep (Poisson and anisotropic stencils,
// random and smooth right-hand sides): total applications of A against
// float64 CG's iterations are within a few per cent for 8, 16 and 32
// steps per dispatch, and 16 halves the dispatches of 8, each of which
// pays the engine's dispatch floor (about 0.1–0.2 ms).
const (
	DefaultTol    = 1e-10
	DefaultUnroll = 16
	// DefaultCompensatedUnroll is CG's default in Compensated mode: the
	// same polynomial.
	DefaultCompensatedUnroll = 16
	DefaultRestart           = 30
	// DefaultMaxDispatches is the least default bound on dispatches; for
	// n unknowns the default is max(DefaultMaxDispatches, ⌈√n⌉). CG's
	// iterations on a 2-D diffusion problem grow like the grid's side, √n
	// (Poisson 1024², about a million unknowns, takes 268 dispatches at
	// Unroll 16), while a dense or well-conditioned problem needs far
	// fewer than 200.
	DefaultMaxDispatches = 200
)

// defaultMaxDispatches is MaxDispatches' default for n unknowns.
func defaultMaxDispatches(n int) int {
	return max(DefaultMaxDispatches, int(math.Ceil(math.Sqrt(float64(n)))))
}

// Settings configure a solve. A nil *Settings means all defaults, and every
// zero field means its default. Settings and Result follow gonum's optimize
// conventions where they fit; docs/KRYLOV.md says where and why they differ
// (limits count dispatches, and only the host's float64 residual decides).
type Settings struct {
	// Device runs the unrolled iterations; nil means shim.Open("").
	Device shim.Device
	// Tol is the target relative residual ‖b − A·x‖₂ / ‖b‖₂, computed on the
	// host in float64. Default 1e-10.
	Tol float64
	// Unroll is the number of steps (applications of A) of CG's device
	// polynomial in one program, 1 … MaxUnroll. Default 16. GMRES, and CG
	// with FastDiagonalization (the default for most stencils), ignore it.
	Unroll int
	// MaxDispatches bounds the number of device programs run. Default
	// max(200, ⌈√n⌉) for n unknowns (see DefaultMaxDispatches).
	MaxDispatches int
	// Restart is GMRES's m, the Arnoldi steps per device program (at most
	// MaxRestart once capped at n). Default 30. CG ignores it.
	Restart int
	// Precond is CG's preconditioner, from Polynomial, Jacobi or
	// FastDiagonalization; nil means FastDiagonalization for a Stencil2D
	// it accepts and Polynomial otherwise (see CG). GMRES refuses one
	// (ErrInput) rather than ignore it.
	Precond Preconditioner
	// Precision selects how the device applies A: FP16 (fl16(A)) or
	// Compensated (a dense A from limb digits, to about twice fp16's
	// precision; see CG and GMRES). Float64 means Compensated here: the
	// host always targets Tol in float64 anyway. Zero means FP16.
	Precision precision.Mode
	// X0 is the initial guess; nil means zero. It is not modified.
	X0 []float64
	// Trace, if set, is called after every dispatch.
	Trace func(Step)
}

// Step reports one dispatch to Settings.Trace.
type Step struct {
	Dispatch   int           // 1-based
	Iterations int           // inner iterations so far
	Residual   float64       // host float64 relative residual after the dispatch
	Elapsed    time.Duration // since the solve started
}

// Stats are timings and counts of a solve.
type Stats struct {
	Build   time.Duration // graph construction, lowering and compilation; near zero when the program is reused
	Device  time.Duration // time inside Executable.Run (on the simulator: the simulation's)
	Host    time.Duration // everything else: float64 work on the host
	Retries int           // dispatches repeated with a smaller scale after an fp16 overflow

	// The modeled engine cost of every dispatch run (retries included), by
	// lower.Estimate's roofline model for the device's ANE family; the
	// simulator's programs are priced as ane-m1, the slowest family. Zero
	// for a program the model cannot price.
	ModeledTime time.Duration
	DeviceBytes int64 // bytes the engine moves
	DeviceFlops int64 // flops of its matmuls and convs

	// SetupDispatches counts device programs run to build a preconditioner
	// (GMRES's Newton–Schulz products for a dense matrix, run once per
	// operator and device, their time in Device and Build, their modeled
	// engine time in ModeledSetup). Dispatches and the modeled cost above
	// do not include them.
	SetupDispatches int
	ModeledSetup    time.Duration

	// ModeledCompile is the modeled compile and load time
	// (lower.EstimateCompile) of the programs this solve compiled: a
	// program is charged to the first solve that dispatches it, and a
	// solve that reuses compiled programs is charged nothing.
	ModeledCompile time.Duration
	// ModeledTotal is what a user waits for: the modeled engine time of
	// every dispatch (ModeledTime + ModeledSetup), the modeled compiles,
	// and the measured host work (Host + Build; Build includes the
	// simulator's own parse where there is no engine, so the sum errs
	// long).
	ModeledTotal time.Duration
}

// charge adds one dispatch of exe to the modeled cost, and its compile if
// no solve has paid for it yet.
func (s *Stats) charge(exe *compiled) {
	c := exe.Cost()
	s.ModeledTime += c.Time
	s.DeviceBytes += c.Bytes
	s.DeviceFlops += c.Flops
	if exe.report.Fresh && exe.charged.CompareAndSwap(false, true) {
		s.ModeledCompile += exe.report.Modeled
	}
}

// finish sums ModeledTotal.
func (s *Stats) finish() {
	s.ModeledTotal = s.ModeledTime + s.ModeledSetup + s.ModeledCompile + s.Host + s.Build
}

// Result is the outcome of a solve.
//
// History holds relative residuals ‖b − A·x‖₂/‖b‖₂, each recomputed in
// float64 on the host: History[0] is that of the starting iterate (x = 0,
// or X0), and then
//   - CG: one after every dispatch, of the iterate that dispatch produced,
//     so len(History) = Dispatches + 1; only a solve ended by the host
//     step after its last dispatch (a direction of zero or negative
//     curvature, or no new search direction) has len(History) =
//     Dispatches.
//   - GMRES: one after every restart cycle (at most Restart dispatches,
//     Restart capped at n; x changes only at a cycle's end), so
//     len(History) − 1 is the number of cycles: at most Dispatches, and at
//     least ⌈Dispatches/Restart⌉ unless a device error ends a cycle midway
//     (equal to Dispatches for Restart 1). The per-dispatch values are
//     Trace's: within a cycle the least-squares residual estimate, at a
//     cycle's end the recomputed residual History records.
//
// b = 0 gives History = [0] and no dispatch. The last entry is Residual,
// except after a failed solve that returns a better earlier iterate (see
// each solver).
type Result struct {
	X          []float64 // the solution
	Residual   float64   // final relative residual ‖b − A·x‖₂ / ‖b‖₂ (float64, host)
	History    []float64 // relative residuals: see above
	Dispatches int
	Iterations int // inner iterations in total
	Converged  bool
	Stats
}

// withDefaults fills the zero fields of s for an operator of n unknowns
// (n may be 0 when the operator is still unchecked).
func (s *Settings) withDefaults(n int) Settings {
	var out Settings
	if s != nil {
		out = *s
	}
	if out.Tol == 0 {
		out.Tol = DefaultTol
	}
	if out.Unroll == 0 {
		out.Unroll = DefaultUnroll
		if out.Precision == precision.Compensated || out.Precision == precision.Float64 {
			out.Unroll = DefaultCompensatedUnroll
		}
	}
	if out.Restart == 0 {
		out.Restart = DefaultRestart
	}
	if out.MaxDispatches == 0 {
		out.MaxDispatches = defaultMaxDispatches(n)
	}
	if out.Precision == 0 {
		out.Precision = precision.FP16
	}
	return out
}

// dims is a's dimension, 0 for a nil operator (refused later).
func dims(a Operator) int {
	if a == nil {
		return 0
	}
	return a.Dims()
}
