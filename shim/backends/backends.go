// Package backends links the default devices into a program: the engine
// (shim/ane, on darwin/arm64) and the simulator (shim/sim, everywhere).
// Every package that runs on a device by default — krylov, fft, linalg,
// nn — imports it blank, so that a program importing any one of them
// alone opens the engine on a Mac and the simulator elsewhere. It is the
// one place that says which backends are the defaults.
package backends

import (
	_ "github.com/anemone-go/anemone/shim/ane" // the engine, where there is one
	_ "github.com/anemone-go/anemone/shim/sim" // the simulator everywhere else
)
