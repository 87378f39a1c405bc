package fft

import (
	"math"
	"math/rand/v2"
)

// signal is a named test input of length n.
type signal struct {
	name string
	gen  func(n int, rng *rand.Rand) []complex128
}

// signals are the inputs of the accuracy tests (issue 11): random complex
// data, an impulse, a chirp, a pure tone and a mixture with a large
// dynamic range.
var signals = []signal{
	{"random", func(n int, rng *rand.Rand) []complex128 {
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(rng.NormFloat64(), rng.NormFloat64())
		}
		return x
	}},
	{"impulse", func(n int, rng *rand.Rand) []complex128 {
		x := make([]complex128, n)
		x[rng.IntN(n)] = complex(3, -1)
		return x
	}},
	{"chirp", func(n int, rng *rand.Rand) []complex128 {
		// exp(iπ·j²/n): a linear sweep through every frequency.
		x := make([]complex128, n)
		for j := range x {
			ph := math.Pi * float64((j*j)%(2*n)) / float64(n)
			x[j] = complex(math.Cos(ph), math.Sin(ph))
		}
		return x
	}},
	{"tone", func(n int, rng *rand.Rand) []complex128 {
		// A pure tone off the frequency grid, so it leaks into every bin.
		x := make([]complex128, n)
		f := float64(rng.IntN(n)) + 0.3
		for j := range x {
			ph := 2 * math.Pi * f * float64(j) / float64(n)
			x[j] = complex(math.Cos(ph), math.Sin(ph))
		}
		return x
	}},
	{"mixture", func(n int, rng *rand.Rand) []complex128 {
		// Three tones of amplitude 1e4, 1 and 1e-4 plus noise of 1e-6: a
		// dynamic range of 10 orders of magnitude.
		x := make([]complex128, n)
		amps := []float64{1e4, 1, 1e-4}
		freqs := []int{rng.IntN(n), rng.IntN(n), rng.IntN(n)}
		for j := range x {
			var v complex128
			for t, a := range amps {
				ph := 2 * math.Pi * float64((freqs[t]*j)%n) / float64(n)
				v += complex(a*math.Cos(ph), a*math.Sin(ph))
			}
			x[j] = v + complex(1e-6*rng.NormFloat64(), 1e-6*rng.NormFloat64())
		}
		return x
	}},
}
