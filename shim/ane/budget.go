package ane

import "github.com/anemone-go/anemone/shim"

// DefaultCompileBudget is the number of compiles a process may make: the
// engine's budget, shim.DefaultCompileBudget.
const DefaultCompileBudget = shim.DefaultCompileBudget

// Budget counts compiles against a limit (shim.Budget).
type Budget = shim.Budget

// NewBudget returns a budget of limit compiles; limit ≤ 0 allows none.
func NewBudget(limit int) *Budget { return shim.NewBudget(limit) }

// processBudget is shared by every device in the process: the compiler's
// leak is per process, not per device.
var processBudget = NewBudget(DefaultCompileBudget)

// ProcessBudget returns the compile budget shared by every ANE device in
// this process. A compile is counted when it is attempted, success or not,
// and closing an executable does not give it back.
func ProcessBudget() *Budget { return processBudget }
