package lower

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// treeCost is the elements the concats of split's tree over leaves
// i…j−1 copy.
func treeCost(size []int, split [][]int, i, j int) int {
	if j-i == 1 {
		return 0
	}
	sum := 0
	for _, s := range size[i:j] {
		sum += s
	}
	m := split[i][j]
	return sum + treeCost(size, split, i, m) + treeCost(size, split, m, j)
}

// bestCost is the least cost of any ordered binary tree over leaves
// i…j−1, by trying every split.
func bestCost(size []int, i, j int) int {
	if j-i == 1 {
		return 0
	}
	sum := 0
	for _, s := range size[i:j] {
		sum += s
	}
	best := -1
	for m := i + 1; m < j; m++ {
		if c := bestCost(size, i, m) + bestCost(size, m, j); best < 0 || c < best {
			best = c
		}
	}
	return sum + best
}

// TestConcatSplits: the packing tree copies the fewest elements of any
// ordered binary tree; a large output with two small ones is joined once
// (the balanced tree copied it twice); equal outputs keep the balanced
// tree.
func TestConcatSplits(t *testing.T) {
	s := concatSplits([]int{1 << 22, 1 << 19, 64})
	require.Equal(t, 1, s[0][3], "the n×n output joins the small ones' concat")
	require.Equal(t, 1<<22+2*(1<<19+64), treeCost([]int{1 << 22, 1 << 19, 64}, s, 0, 3))
	s = concatSplits([]int{5, 5, 5, 5})
	require.Equal(t, 2, s[0][4])
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		k := 1 + rng.IntN(7)
		size := make([]int, k)
		for i := range size {
			size[i] = 1 + rng.IntN(1000)
		}
		require.Equal(t, bestCost(size, 0, k), treeCost(size, concatSplits(size), 0, k), "%v", size)
	}
}
