package krylov

import (
	"time"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// Defaults for zero Settings fields.
//
// DefaultUnroll = 32 was chosen by measurement (random right-hand sides):
// on Poisson 128², 16 iterations per dispatch cost 1.32× float64 CG's
// iterations in 37 dispatches, 32 cost 1.43× in 20, 64 cost 1.57× in 11.
// Longer programs lose more to fp16 within a dispatch; shorter ones pay the
// engine's dispatch floor (about 0.1–0.2 ms) more often. 32 is the shortest
// that keeps the dispatch count near 20 while staying within 1.5×.
const (
	DefaultTol    = 1e-10
	DefaultUnroll = 32
	// DefaultCompensatedUnroll: in Compensated mode the host keeps the last
	// 128 directions and restores their conjugacy in float64 after every
	// dispatch; shorter dispatches hand it the directions sooner. On SPD
	// RandSVD n = 128, κ = 1e6: Unroll 16 converges in 4944 iterations,
	// 32 stands at 2e-9 after 6400.
	DefaultCompensatedUnroll = 16
	DefaultRestart           = 30
	DefaultMaxDispatches     = 200
)

// Settings configure a solve. A nil *Settings means all defaults, and every
// zero field means its default.
type Settings struct {
	// Device runs the unrolled iterations; nil means shim.Open("").
	Device shim.Device
	// Tol is the target relative residual ‖b − A·x‖₂ / ‖b‖₂, computed on the
	// host in float64. Default 1e-10.
	Tol float64
	// Unroll is the number of CG iterations in one device program, 1 …
	// MaxUnroll. Default 32 (16 in Compensated mode). GMRES ignores it.
	Unroll int
	// MaxDispatches bounds the number of device programs run. Default 200.
	MaxDispatches int
	// Restart is GMRES's m, the Arnoldi steps per device program (at most
	// MaxRestart once capped at n). Default 30. CG ignores it.
	Restart int
	// Precond is an optional preconditioner for CG; GMRES refuses one
	// (ErrInput) rather than ignore it.
	Precond Preconditioner
	// Precision selects how the device applies A: FP16 (fl16(A), converges
	// while κ(A)·2⁻¹¹ ≪ 1) or Compensated (A from limb digits, the host
	// optimizing over the device's directions; see CG and GMRES). Float64
	// means Compensated here: the host refinement always targets Tol in
	// float64 anyway. Zero means FP16.
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
}

// charge adds one dispatch of exe to the modeled cost.
func (s *Stats) charge(exe *compiled) {
	c := exe.Cost()
	s.ModeledTime += c.Time
	s.DeviceBytes += c.Bytes
	s.DeviceFlops += c.Flops
}

// Result is the outcome of a solve.
type Result struct {
	X          []float64 // the solution
	Residual   float64   // final relative residual ‖b − A·x‖₂ / ‖b‖₂ (float64, host)
	History    []float64 // relative residual before the first and after every dispatch
	Dispatches int
	Iterations int // inner iterations in total
	Converged  bool
	Stats
}

func (s *Settings) withDefaults() Settings {
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
		out.MaxDispatches = DefaultMaxDispatches
	}
	if out.Precision == 0 {
		out.Precision = precision.FP16
	}
	return out
}
