package engine

import (
	"fmt"
	"sort"

	"github.com/anemone-go/anemone/fp16"
)

// Magnitudes of the engine's numerics (docs/ENGINE.md §5, §8, §9).
const (
	// MaxValue is fp16's largest finite value: overflow past it is ±Inf.
	MaxValue = fp16.MaxValue
	// Cliff is the largest matmul or conv output magnitude the engine
	// returns finite: above it (half of MaxValue, the largest fp16 value
	// below 2¹⁵) the output is ±Inf on M1, M2, M4 and M5, and zero on the
	// M3 family (PartialSumZero).
	Cliff = 32752
	// Headroom is the design bound on every matmul and conv output: 2¹⁴,
	// half the Cliff, so that rounding and the unknown order of the
	// engine's sums never reach it.
	Headroom = 1 << 14
	// SliceClamp is the magnitude above which a slice at a nonzero
	// last-axis offset saturates to ±Inf on targets with WidthSliceClamp.
	SliceClamp = 4094
	// ReduceExact is the largest integer total a reduce_sum keeps exact:
	// its running sum is fp16 (a sum of 4096 ones stalls at 2048).
	ReduceExact = 2048
	// CompileBudget is the number of compiles a device allows: the
	// compiler is reported to fail after about 119 per process, and the
	// reference trainers restart at 100.
	CompileBudget = 100
)

// Axis limits (docs/ENGINE.md §5).
const (
	// RowLimit is the largest last (spatial, contraction) axis through
	// the A15 family (M1–M3) and on the simulator; RowLimitA16 from A16
	// (M4, M5) on.
	RowLimit    = 16384
	RowLimitA16 = 65536
	// ChannelLimit is the largest channel axis of every family.
	ChannelLimit = 65536
	// HeightLimit is the largest height axis (the second to last) of
	// every family: not the spatial axis, and not its limit.
	HeightLimit = 16384
)

// WeightFileLimit is the largest weight file the engine's compiler takes,
// in bytes: 2³¹ (docs/ENGINE.md §2). It refuses a larger one ("Weight file
// size (2525476480 bytes) exceeds the maximum (2147483648 bytes)", quoted
// in coremltools pull request #2593), and Core ML models with more than
// 2³¹ bytes of weights fail to load (coremltools issue #1807). The file's
// own format sets no useful limit: its sizes and offsets are uint64.
const WeightFileLimit = 1 << 31

// Accumulator is the width of the running sum inside matmul and conv.
type Accumulator int

const (
	// Wide: fp16 products summed in float32, the sum rounded once (as
	// measured on M1 and M5).
	Wide Accumulator = iota
	// Narrow: every partial sum rounded to fp16 (a pessimistic model).
	Narrow
)

func (a Accumulator) String() string {
	if a == Narrow {
		return "narrow"
	}
	return "wide"
}

// Rounding is how the multiply-accumulate rounds a product to fp16.
type Rounding int

const (
	// TiesToEven: IEEE round to nearest, ties to even (M1).
	TiesToEven Rounding = iota
	// TiesAway: round to nearest, ties away from zero (reported on the
	// M3 family and M5).
	TiesAway
)

func (r Rounding) String() string {
	if r == TiesAway {
		return "ties away from zero"
	}
	return "ties to even"
}

// Target describes what one engine family (or the simulator) accepts and
// how it computes. Lowering checks every tensor against the limits.
type Target struct {
	Name        string // "sim", "ane-m1", ...
	Opset       string // MIL function opset, "ios18"
	MaxRank     int    // largest tensor rank
	MaxSpatial  int    // largest last (spatial/contraction) dimension
	MaxChannels int    // largest channel (second) dimension of a [1, C, 1, S] tensor
	MaxKernel   int    // largest conv kernel extent
	RowAlign    int    // device rows are padded to a multiple of this many fp16 elements
	MinRow      int    // and to at least this many

	// PackedIO: programs bind exactly one input and one output surface.
	// The inputs are rows of one [1, C, 1, S] tensor, sliced apart inside
	// the program at channel offsets, and the outputs are concatenated the
	// same way. Several input surfaces have failed on the engine (error
	// 0x1d in one project), its surfaces are ordered by name, and some
	// routes want equal sizes: one surface each way avoids all three.
	PackedIO bool
	// WidthSliceClamp: a slice at a nonzero last-axis offset saturates
	// |x| > SliceClamp to ±Inf (measured before A16, i.e. M1–M4; absent
	// on M5). The lowering never emits such a slice where values can be
	// large.
	WidthSliceClamp bool

	// Accumulator is the matmul/conv running sum's width.
	Accumulator Accumulator
	// Rounding is how a product is rounded to fp16 inside the MAC.
	Rounding Rounding
	// FlushSubnormalProducts: a product that is an fp16 subnormal is
	// flushed to zero inside the multiply-accumulate (reported on the M3
	// family's datapath).
	FlushSubnormalProducts bool
	// PartialSumZero: a matmul/conv whose sum reaches 2¹⁵ in magnitude
	// returns zero instead of ±Inf (reported on the M3 family).
	PartialSumZero bool
	// InnerMultiple, when nonzero: a matmul whose contraction length is
	// not a multiple of it returns zeros (32 on M1); the lowering pads
	// contractions to it.
	InnerMultiple int
	// MinSurfaceBytes: smaller input or output surfaces fail to evaluate
	// (about 49 KB reported); the lowering pads surfaces to it.
	MinSurfaceBytes int
	// FlushSubnormals: every op's subnormal operands and results are
	// flushed to zero (a pessimistic model; whether the engine flushes
	// outside the MAC is unmeasured).
	FlushSubnormals bool
	// TableError bounds the relative error of the table-based
	// transcendentals (sqrt, pow, exp, log, tanh, sigmoid, gelu) before
	// the fp16 rounding; 0 means correctly rounded from float32.
	TableError float64
	// CompileBudget is the number of compiles a device allows.
	CompileBudget int
}

// HardwareTableError is the error bound of the engine's table-based
// transcendentals that accuracy claims must allow for: 2⁻¹⁰ relative
// (reported accurate to about half an ulp, not correctly rounded).
const HardwareTableError = 0x1p-10

// Pessimistic returns t with the narrow numerics model: an fp16 running
// sum in matmul and conv, subnormals flushed everywhere, transcendentals
// off by up to HardwareTableError. An accuracy claim holds when it holds
// for both t and Pessimistic(t).
func Pessimistic(t Target) Target {
	t.Accumulator = Narrow
	t.FlushSubnormals = true
	t.TableError = HardwareTableError
	return t
}

// RowLength is the padded device row length for a logical row of n
// elements.
func (t Target) RowLength(n int) int {
	a := max(t.RowAlign, 1)
	s := (n + a - 1) / a * a
	return max(s, t.MinRow)
}

// Limits of the families (docs/ENGINE.md §5, §9). Rows are 64-byte
// aligned (32 fp16 elements) through M4 and 128-byte aligned on M5 (A16
// family), which also lifts the spatial limit to 65536 and has no
// width-slice clamp.
var (
	M1 = Target{Name: "ane-m1", Opset: "ios18", MaxRank: 5, MaxSpatial: RowLimit, MaxChannels: ChannelLimit, MaxKernel: 13, RowAlign: 32, MinRow: 32,
		PackedIO: true, WidthSliceClamp: true, InnerMultiple: 32, MinSurfaceBytes: surfaceMin, CompileBudget: CompileBudget}
	M2 = Target{Name: "ane-m2", Opset: "ios18", MaxRank: 5, MaxSpatial: RowLimit, MaxChannels: ChannelLimit, MaxKernel: 15, RowAlign: 32, MinRow: 32,
		PackedIO: true, WidthSliceClamp: true, MinSurfaceBytes: surfaceMin, CompileBudget: CompileBudget}
	M3 = Target{Name: "ane-m3", Opset: "ios18", MaxRank: 5, MaxSpatial: RowLimit, MaxChannels: ChannelLimit, MaxKernel: 15, RowAlign: 32, MinRow: 32,
		PackedIO: true, WidthSliceClamp: true, Rounding: TiesAway, FlushSubnormalProducts: true, PartialSumZero: true,
		MinSurfaceBytes: surfaceMin, CompileBudget: CompileBudget}
	M4 = Target{Name: "ane-m4", Opset: "ios18", MaxRank: 5, MaxSpatial: RowLimitA16, MaxChannels: ChannelLimit, MaxKernel: 15, RowAlign: 32, MinRow: 32,
		PackedIO: true, WidthSliceClamp: true, MinSurfaceBytes: surfaceMin, CompileBudget: CompileBudget}
	M5 = Target{Name: "ane-m5", Opset: "ios18", MaxRank: 5, MaxSpatial: RowLimitA16, MaxChannels: ChannelLimit, MaxKernel: 15, RowAlign: 64, MinRow: 64,
		PackedIO: true, Rounding: TiesAway, MinSurfaceBytes: surfaceMin, CompileBudget: CompileBudget}
	// Strict is the simulator's default: the strictest family's limits
	// and rules, with the numerics measured on M1 and M5 (wide, ties to
	// even). The per-family rules that change results rather than refuse
	// programs (InnerMultiple, Rounding, FlushSubnormalProducts,
	// PartialSumZero) belong to the family variants.
	Strict = Target{Name: "sim", Opset: "ios18", MaxRank: 5, MaxSpatial: RowLimit, MaxChannels: ChannelLimit, MaxKernel: 13, RowAlign: 32, MinRow: 32,
		PackedIO: true, WidthSliceClamp: true, MinSurfaceBytes: surfaceMin, CompileBudget: CompileBudget}
)

// surfaceMin is the smallest surface reported to evaluate: about 49 KB
// (a sequence length of 1 fails with 0x1d; decode pads to 16).
const surfaceMin = 49152

var targets = map[string]Target{}

func init() {
	for _, t := range []Target{M1, M2, M3, M4, M5, Strict} {
		targets[t.Name] = t
	}
}

// ByName returns the named target, or an error listing the known ones.
func ByName(name string) (Target, bool) {
	t, ok := targets[name]
	return t, ok
}

// Names returns the known target names, sorted.
func Names() []string {
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// String names the target and its numerics.
func (t Target) String() string {
	return fmt.Sprintf("%s (%s accumulator, products %s)", t.Name, t.Accumulator, t.Rounding)
}
