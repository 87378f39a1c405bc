package nn

// The default devices, so that a program importing this package alone
// runs: the engine on a Mac, the simulator elsewhere.
import _ "github.com/anemone-go/anemone/shim/backends"
