package reference

import (
	"math"
	"math/rand/v2"
)

// Tolerances for this float64 package are derived from the float64 unit
// roundoff u = 2⁻⁵³ ≈ 1.1e-16, not from fp16: reference is the oracle the
// fp16 device side is compared with, so it must itself be accurate to a few
// hundred u.
const u64 = 0x1p-53

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// randVec returns n values uniform in [−1, 1).
func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*rng.Float64() - 1
	}
	return v
}

func randComplex(rng *rand.Rand, n int) []complex128 {
	v := make([]complex128, n)
	for i := range v {
		v[i] = complex(2*rng.Float64()-1, 2*rng.Float64()-1)
	}
	return v
}

func hasNaN(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) {
			return true
		}
	}
	return false
}

// funcOp is an Operator given by a function, without a FrobeniusNorm
// method; it lets tests build operators the package does not know.
type funcOp struct {
	n int
	f func(dst, x []float64)
}

func (o funcOp) Dims() int                 { return o.n }
func (o funcOp) MulVecTo(dst, x []float64) { o.f(dst, x) }

// negated returns the operator −A.
func negated(a Operator) Operator {
	return funcOp{n: a.Dims(), f: func(dst, x []float64) {
		a.MulVecTo(dst, x)
		for i := range dst {
			dst[i] = -dst[i]
		}
	}}
}

// poissonCond returns κ₂ of Poisson2D(nx, ny) from its exact eigenvalues.
func poissonCond(nx, ny int) float64 {
	lam := Poisson2DEigenvalues(nx, ny)
	return lam[len(lam)-1] / lam[0]
}
