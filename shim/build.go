package shim

import (
	"fmt"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
)

// CompileReport says what one compile request cost.
type CompileReport struct {
	// Fresh is true when the program was compiled by this request, false
	// when a Cache already held it.
	Fresh bool
	// Modeled is the modeled compile and load time on the engine of a
	// fresh compile (lower.EstimateCompile), 0 for a cache hit.
	Modeled time.Duration
}

// CompileReported compiles p on dev, as dev.Compile does, and reports
// whether it was compiled now. A device that is not a Cache compiles
// every time.
func CompileReported(dev Device, p *lower.Program) (Executable, CompileReport, error) {
	if dev == nil {
		return nil, CompileReport{}, fmt.Errorf("shim: nil device: %w", ErrNoDevice)
	}
	if c, ok := dev.(*Cache); ok {
		return c.compile(p)
	}
	exe, err := dev.Compile(p)
	if err != nil {
		return nil, CompileReport{}, err
	}
	return exe, CompileReport{Fresh: true, Modeled: lower.EstimateCompile(p)}, nil
}

// BuildReported lowers g for dev's target and compiles it, reporting the
// compile as CompileReported does.
func BuildReported(dev Device, g *dataflow.Graph) (Executable, CompileReport, error) {
	if dev == nil {
		return nil, CompileReport{}, fmt.Errorf("shim: nil device: %w", ErrNoDevice)
	}
	p, err := lower.Lower(g, dev.Info().Target)
	if err != nil {
		return nil, CompileReport{}, err
	}
	return CompileReported(dev, p)
}

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
