package lower

import (
	"fmt"

	"github.com/anemone-go/anemone/engine"
)

// Target describes what a device accepts: the limits and rules of one
// engine family, or the simulator's. It is the engine contract's type
// (package engine); lowering checks every tensor against it.
type Target = engine.Target

// The families' targets and the simulator's, from package engine.
var (
	TargetM1  = engine.M1
	TargetM2  = engine.M2
	TargetM3  = engine.M3
	TargetM4  = engine.M4
	TargetM5  = engine.M5
	TargetSim = engine.Strict
)

// TargetByName returns the named target.
func TargetByName(name string) (Target, error) {
	t, ok := engine.ByName(name)
	if !ok {
		return Target{}, fmt.Errorf("lower: unknown target %q (known: %v): %w", name, engine.Names(), ErrUnsupported)
	}
	return t, nil
}
