package reference

import "testing"

// benchCG runs float64 CG on Poisson2D(n, n) with a seeded random
// right-hand side to Tol 1e-10: the baseline the device solvers are
// compared with.
func benchCG(b *testing.B, n int) {
	a := must(Poisson2D(n, n)).get(b)
	rhs := randVec(newRNG(2026), n*n)
	var iters int
	b.ReportAllocs()
	for b.Loop() {
		res, err := CG(a, rhs, CGSettings{Tol: 1e-10})
		if err != nil {
			b.Fatal(err)
		}
		iters = res.Iterations
	}
	b.ReportMetric(float64(iters), "iters")
}

func BenchmarkCGPoisson64(b *testing.B)  { benchCG(b, 64) }
func BenchmarkCGPoisson128(b *testing.B) { benchCG(b, 128) }

func BenchmarkGMRESConvDiff64(b *testing.B) {
	a := must(ConvectionDiffusion2D(64, 64, 100)).get(b)
	rhs := randVec(newRNG(2026), a.Dims())
	for b.Loop() {
		if _, err := GMRES(a, rhs, GMRESSettings{Restart: 30}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFFT1024(b *testing.B) {
	x := randComplex(newRNG(1), 1024)
	for b.Loop() {
		FFT(x)
	}
}
