package lower

import (
	"fmt"
	"sort"
)

// Target describes what a device accepts: the limits of one ANE family, or
// the simulator's. Lowering checks every tensor against them.
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
	// |x| > 4094 to ±Inf (measured before A16, i.e. M1–M4; absent on M5).
	// The lowering never emits such a slice where values can be large.
	WidthSliceClamp bool
}

// Limits of the ANE families (docs/ENGINE.md §5). Rows are 64-byte aligned
// (32 fp16 elements) through M4 and 128-byte aligned on M5 (A16 family),
// which also lifts the spatial limit to 65536 and has no width-slice
// clamp. The simulator takes the strictest family's limits and rules, so
// a program it accepts fits every family.
var (
	TargetM1  = Target{Name: "ane-m1", Opset: "ios18", MaxRank: 5, MaxSpatial: 16384, MaxChannels: 65536, MaxKernel: 13, RowAlign: 32, MinRow: 32, PackedIO: true, WidthSliceClamp: true}
	TargetM2  = Target{Name: "ane-m2", Opset: "ios18", MaxRank: 5, MaxSpatial: 16384, MaxChannels: 65536, MaxKernel: 15, RowAlign: 32, MinRow: 32, PackedIO: true, WidthSliceClamp: true}
	TargetM3  = Target{Name: "ane-m3", Opset: "ios18", MaxRank: 5, MaxSpatial: 16384, MaxChannels: 65536, MaxKernel: 15, RowAlign: 32, MinRow: 32, PackedIO: true, WidthSliceClamp: true}
	TargetM4  = Target{Name: "ane-m4", Opset: "ios18", MaxRank: 5, MaxSpatial: 65536, MaxChannels: 65536, MaxKernel: 15, RowAlign: 32, MinRow: 32, PackedIO: true, WidthSliceClamp: true}
	TargetM5  = Target{Name: "ane-m5", Opset: "ios18", MaxRank: 5, MaxSpatial: 65536, MaxChannels: 65536, MaxKernel: 15, RowAlign: 64, MinRow: 64, PackedIO: true}
	TargetSim = Target{Name: "sim", Opset: "ios18", MaxRank: 5, MaxSpatial: 16384, MaxChannels: 65536, MaxKernel: 13, RowAlign: 32, MinRow: 32, PackedIO: true, WidthSliceClamp: true}
)

var targets = map[string]Target{}

func init() {
	for _, t := range []Target{TargetM1, TargetM2, TargetM3, TargetM4, TargetM5, TargetSim} {
		targets[t.Name] = t
	}
}

// TargetByName returns the named target.
func TargetByName(name string) (Target, error) {
	t, ok := targets[name]
	if !ok {
		names := make([]string, 0, len(targets))
		for n := range targets {
			names = append(names, n)
		}
		sort.Strings(names)
		return Target{}, fmt.Errorf("lower: unknown target %q (known: %v): %w", name, names, ErrUnsupported)
	}
	return t, nil
}

// RowLength is the padded device row length for a logical row of n elements.
func (t Target) RowLength(n int) int {
	a := max(t.RowAlign, 1)
	s := (n + a - 1) / a * a
	return max(s, t.MinRow)
}
