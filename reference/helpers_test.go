package reference

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
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
func poissonCond(t testing.TB, nx, ny int) float64 {
	t.Helper()
	lam := must(Poisson2DEigenvalues(nx, ny)).get(t)
	return lam[len(lam)-1] / lam[0]
}

// checked holds the (value, error) result of a call; get returns the value
// and fails the test if the error is not nil.
type checked[T any] struct {
	v   T
	err error
}

// must captures a (value, error) result, so that a generator call with valid
// arguments stays one expression: must(Poisson2D(4, 4)).get(t). (Go does not
// allow must(t, Poisson2D(4, 4)).)
func must[T any](v T, err error) checked[T] { return checked[T]{v, err} }

func (c checked[T]) get(t testing.TB) T {
	t.Helper()
	require.NoError(t, c.err)
	return c.v
}

// mustGrid2D is Grid2D, failing the test on an error.
func mustGrid2D(t testing.TB, nx, ny int) (x, y []float64) {
	t.Helper()
	x, y, err := Grid2D(nx, ny)
	require.NoError(t, err)
	return x, y
}

// mustManufactured is ManufacturedPoisson2D, failing the test on an error.
func mustManufactured(t testing.TB, nx, ny int) (a *CSR, b, xExact []float64) {
	t.Helper()
	a, b, xExact, err := ManufacturedPoisson2D(nx, ny)
	require.NoError(t, err)
	return a, b, xExact
}
