package parallel

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every row is visited once, by the part whose range holds it, and the
// ranges are contiguous and in order.
func TestRanges(t *testing.T) {
	for _, tc := range []struct{ rows, p int }{{0, 1}, {1, 1}, {5, 2}, {7, 3}, {100, 4}} {
		seen := make([]int, tc.rows)
		owner := make([]int, tc.rows)
		Ranges(tc.rows, tc.p, func(k, lo, hi int) {
			for i := lo; i < hi; i++ {
				seen[i]++
				owner[i] = k
			}
		})
		for i := range seen {
			require.Equal(t, 1, seen[i], "rows %d, p %d: row %d", tc.rows, tc.p, i)
			if i > 0 {
				require.LessOrEqual(t, owner[i-1], owner[i])
			}
		}
	}
}

func TestParts(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	require.Equal(t, 1, Parts(10, 100, 1000), "too little work")
	require.Equal(t, 1, Parts(1, 1<<30, 1), "one row")
	require.Equal(t, min(procs, 3), Parts(3, 1<<30, 1))
	require.Equal(t, min(procs, 4), Parts(1000, 4000, 1000))
	require.Equal(t, 1, Parts(0, 0, 0))
}
