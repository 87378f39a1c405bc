package linalg

import (
	"runtime"
	"sync"
)

// parallelMin is the fewest matrix elements a pass splits across cores
// for: below it a goroutine costs more than it saves.
const parallelMin = 1 << 16

// parts is how many row ranges a pass over rows×cols elements runs in:
// one per core (GOMAXPROCS), at most one per parallelMin elements.
func parts(rows, cols int) int {
	return max(1, min(runtime.GOMAXPROCS(0), rows, rows*cols/parallelMin))
}

// eachRows runs f on p contiguous ranges [lo, hi) of rows 0…rows−1 at
// once, part k getting the k-th range, and waits for all of them. The
// host's O(n²) passes use it: gonum's LU, which the solves are measured
// against, uses every core too.
func eachRows(rows, p int, f func(k, lo, hi int)) {
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
