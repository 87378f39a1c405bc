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
}

// Limits of the ANE families (ANE_FACTS §6). The simulator takes the
// strictest family's limits, so a program it accepts fits every family.
var (
	TargetM1  = Target{Name: "ane-m1", Opset: "ios18", MaxRank: 5, MaxSpatial: 16384, MaxChannels: 65536, MaxKernel: 13, RowAlign: 32, MinRow: 32}
	TargetM2  = Target{Name: "ane-m2", Opset: "ios18", MaxRank: 5, MaxSpatial: 16384, MaxChannels: 65536, MaxKernel: 15, RowAlign: 32, MinRow: 32}
	TargetM3  = Target{Name: "ane-m3", Opset: "ios18", MaxRank: 5, MaxSpatial: 65536, MaxChannels: 65536, MaxKernel: 15, RowAlign: 32, MinRow: 32}
	TargetM4  = Target{Name: "ane-m4", Opset: "ios18", MaxRank: 5, MaxSpatial: 65536, MaxChannels: 65536, MaxKernel: 15, RowAlign: 32, MinRow: 32}
	TargetSim = Target{Name: "sim", Opset: "ios18", MaxRank: 5, MaxSpatial: 16384, MaxChannels: 65536, MaxKernel: 13, RowAlign: 32, MinRow: 32}
)

var targets = map[string]Target{}

func init() {
	for _, t := range []Target{TargetM1, TargetM2, TargetM3, TargetM4, TargetSim} {
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
