package ane

import (
	"fmt"
	"sync"
)

// DefaultCompileBudget is the number of compiles a process may make.
// Public reports put the point where the ANE compiler starts failing or the
// process turns unstable at about 119 compiles;
// the ObjC reference trainers stop, checkpoint and re-exec at 100. We take
// the same margin.
const DefaultCompileBudget = 100

// Budget counts compiles against a limit. It is safe for concurrent use.
type Budget struct {
	mu    sync.Mutex
	limit int
	used  int
}

// NewBudget returns a budget of limit compiles; limit ≤ 0 allows none.
func NewBudget(limit int) *Budget { return &Budget{limit: limit} }

// processBudget is shared by every device in the process: the compiler's
// leak is per process, not per device.
var processBudget = NewBudget(DefaultCompileBudget)

// ProcessBudget returns the compile budget shared by every ANE device in
// this process. A compile is counted when it is attempted, success or not,
// and closing an executable does not give it back.
func ProcessBudget() *Budget { return processBudget }

// Take counts one compile, or returns an error wrapping ErrBudget when the
// budget is used up (and counts nothing).
func (b *Budget) Take() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used >= b.limit {
		return fmt.Errorf("%w: %d of %d compiles used (the ANE compiler is reported to fail after about 119 per process; cache programs or restart the process)", ErrBudget, b.used, b.limit)
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
// caller's risk.
func (b *Budget) SetLimit(limit int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.limit = limit
}
