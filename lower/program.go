package lower

import "github.com/anemone-go/anemone/engine"

// The program a device compiles, its I/O layout and weight file are the
// engine contract's (package engine).
type (
	Program = engine.Program
	Surface = engine.Surface
	IOSpec  = engine.IOSpec
)

// WeightPath is the one weight file every program uses.
const WeightPath = engine.WeightPath
