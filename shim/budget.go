package shim

import (
	"errors"

	"github.com/anemone-go/anemone/engine"

	"fmt"
	"sync"
)

// ErrBudget reports that a device's compile budget is used up: the engine's
// compiler is reported to fail after about 119 compiles per process
// (docs/ENGINE.md §9), and every device, the simulator included, refuses
// the compile past its budget rather than let a program run into it.
var ErrBudget = errors.New("shim: compile budget exhausted")

// DefaultCompileBudget is the number of compiles a device allows: the
// engine's, engine.CompileBudget.
const DefaultCompileBudget = engine.CompileBudget

// Budget counts compiles against a limit. A compile is counted when it is
// attempted, success or not, and closing a program does not give it back:
// the engine's leak is in the compile, not in the loaded program. Safe for
// concurrent use.
type Budget struct {
	mu    sync.Mutex
	limit int
	used  int
}

// NewBudget returns a budget of limit compiles; limit ≤ 0 allows none.
func NewBudget(limit int) *Budget { return &Budget{limit: limit} }

// Take counts one compile, or returns an error wrapping ErrBudget when the
// budget is used up (and counts nothing).
func (b *Budget) Take() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used >= b.limit {
		return fmt.Errorf("%w: %d of %d compiles used; compile each program once and change its data (runtime operands), or open a fresh device (on the engine: restart the process)", ErrBudget, b.used, b.limit)
	}
	b.used++
	return nil
}

// Used returns the number of compiles counted.
func (b *Budget) Used() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Remaining returns the number of compiles left, never negative.
func (b *Budget) Remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.limit-b.used, 0)
}

// Limit returns the budget's limit.
func (b *Budget) Limit() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit
}

// SetLimit changes the limit. Raising it past DefaultCompileBudget is at the
// caller's risk on the engine.
func (b *Budget) SetLimit(limit int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.limit = limit
}
