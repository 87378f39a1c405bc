package fft

import (
	"fmt"
	"math"
)

// Size limits.
const (
	// MaxLen is the longest supported transform (2¹⁸), per dimension and in
	// total for a 2-D transform.
	MaxLen = 1 << 18
	// MaxBlock is the largest dense DFT block of an FP16 stage: a stage
	// contracts 2·MaxBlock real terms (see the package documentation for
	// the error of one stage). Both block limits are for the engine's wide
	// accumulator; on an fp16 running sum both modes use blocks of at most
	// 32 points.
	MaxBlock = 256
	// MaxCompensatedBlock is the largest block of a Compensated stage,
	// whose conv passes carry 21 digit pairs: smaller blocks keep the
	// weights (30·(2f)² digits per stage) and the work down.
	MaxCompensatedBlock = 64
)

// smooth reports whether n ≥ 1 is a product of 2, 3 and 5 only.
func smooth(n int) bool {
	if n < 1 {
		return false
	}
	for _, p := range []int{2, 3, 5} {
		for n%p == 0 {
			n /= p
		}
	}
	return n == 1
}

// nearest returns the largest supported length below n and the smallest
// above it (0 where there is none).
func nearest(n int) (below, above int) {
	for m := min(n-1, MaxLen); m >= 1; m-- {
		if smooth(m) {
			below = m
			break
		}
	}
	for m := max(n+1, 1); m <= MaxLen; m++ {
		if smooth(m) {
			above = m
			break
		}
	}
	return below, above
}

// checkLen reports whether n is a supported transform length.
func checkLen(what string, n int) error {
	if n < 1 {
		return fmt.Errorf("fft: %s: length %d: a transform needs at least one point: %w", what, n, ErrShape)
	}
	if n <= MaxLen && smooth(n) {
		return nil
	}
	below, above := nearest(n)
	switch {
	case n > MaxLen:
		return fmt.Errorf("fft: %s: length %d exceeds the largest supported length %d (2¹⁸); split the data or use %d: %w", what, n, MaxLen, below, ErrUnsupported)
	case above == 0:
		return fmt.Errorf("fft: %s: length %d has a prime factor other than 2, 3 and 5; the nearest supported length is %d: %w", what, n, below, ErrUnsupported)
	default:
		return fmt.Errorf("fft: %s: length %d has a prime factor other than 2, 3 and 5; the nearest supported lengths are %d and %d (zero-padding to one of them serves where a different frequency grid does, as in a convolution): %w", what, n, below, above, ErrUnsupported)
	}
}

// factorize splits a supported n into the fewest dense blocks of at most
// maxBlock points, as balanced as possible (with MaxBlock a 65536-point
// transform is 256·256, 4096 is 64·64). The first factor is the outermost
// index.
func factorize(n, maxBlock int) []int {
	if n <= maxBlock {
		return []int{n}
	}
	var primes []int
	m := n
	for _, p := range []int{5, 3, 2} {
		for m%p == 0 {
			primes = append(primes, p)
			m /= p
		}
	}
	stages := int(math.Ceil(math.Log(float64(n)) / math.Log(float64(maxBlock))))
	for ; ; stages++ {
		bins := make([]int, stages)
		for i := range bins {
			bins[i] = 1
		}
		ok := true
		// Largest primes first, each into the bin with the smallest product.
		for _, p := range primes {
			best := 0
			for i := range bins {
				if bins[i] < bins[best] {
					best = i
				}
			}
			bins[best] *= p
			if bins[best] > maxBlock {
				ok = false
				break
			}
		}
		if ok {
			// Larger blocks first: the first stage then sees the raw input.
			for i := range bins {
				for j := i + 1; j < len(bins); j++ {
					if bins[j] > bins[i] {
						bins[i], bins[j] = bins[j], bins[i]
					}
				}
			}
			return bins
		}
	}
}
