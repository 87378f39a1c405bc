package shim

import (
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
)

// Build lowers g for dev's target and compiles it. With a Cache (what Open
// returns), building the same graph again costs one lowering and a hash
// lookup, not a compile.
func Build(dev Device, g *dataflow.Graph) (Executable, error) {
	if dev == nil {
		return nil, fmt.Errorf("shim: nil device: %w", ErrNoDevice)
	}
	p, err := lower.Lower(g, dev.Info().Target)
	if err != nil {
		return nil, err
	}
	return dev.Compile(p)
}
