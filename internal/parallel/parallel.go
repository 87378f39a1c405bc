// Package parallel splits the host's long passes across cores: a range of
// rows into contiguous parts, one per core, each run on its own goroutine.
// Callers choose how much work a part must carry to be worth a core
// (waking an idle one costs tens of microseconds).
package parallel

import (
	"runtime"
	"sync"
)

// Parts is how many parts a pass over rows rows of work units (elements,
// say) in all runs in: one per core (GOMAXPROCS), at most one per row and
// one per least units, and at least one.
func Parts(rows, work, least int) int {
	return max(1, min(runtime.GOMAXPROCS(0), rows, work/max(1, least)))
}

// Ranges runs f on p contiguous ranges [lo, hi) of rows 0…rows−1 at once,
// part k getting the k-th range, and waits for all of them; with p ≤ 1 it
// runs f(0, 0, rows) on the caller's goroutine.
func Ranges(rows, p int, f func(k, lo, hi int)) {
	if p <= 1 {
		f(0, 0, rows)
		return
	}
	var wg sync.WaitGroup
	for k := range p {
		lo, hi := k*rows/p, (k+1)*rows/p
		wg.Go(func() { f(k, lo, hi) })
	}
	wg.Wait()
}
