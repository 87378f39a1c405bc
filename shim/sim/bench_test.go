package sim

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// matmulProgram is C = A·B for n×n inputs as the lowering lays them out:
// each input arrives as [1, n, 1, n] (n rows of n, no padding when n is a
// multiple of 32), is reshaped to [n, n] in the MIL, and the product is
// reshaped back to [1, n, 1, n].
func benchMatMul(b *testing.B, n int, num Numerics) {
	body := stmt("z", []int{n, n}, "matmul", "x = x", "y = y")
	p := program([]port{in("x", n, n), in("y", n, n)}, body, []port{in("z", n, n)})
	exe, err := New(num).Compile(p)
	if err != nil {
		b.Fatal(err)
	}
	rng := newRNG(12)
	x, y := halfs(rng, n*n, 1), halfs(rng, n*n, 1)
	in := [][]float32{x, y}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := exe.Run(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkSimMatMul256(b *testing.B)       { benchMatMul(b, 256, Wide) }
func BenchmarkSimMatMul512(b *testing.B)       { benchMatMul(b, 512, Wide) }
func BenchmarkSimMatMul1024(b *testing.B)      { benchMatMul(b, 1024, Wide) }
func BenchmarkSimNarrowMatMul512(b *testing.B) { benchMatMul(b, 512, Narrow) }

// BenchmarkGonumDgemm* is the float64 baseline: gonum's mat.Dense.Mul.
func benchGonum(b *testing.B, n int) {
	rng := newRNG(13)
	d := func() *mat.Dense {
		v := make([]float64, n*n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return mat.NewDense(n, n, v)
	}
	x, y := d(), d()
	var c mat.Dense
	b.ResetTimer()
	for range b.N {
		c.Mul(x, y)
	}
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkGonumDgemm256(b *testing.B)  { benchGonum(b, 256) }
func BenchmarkGonumDgemm512(b *testing.B)  { benchGonum(b, 512) }
func BenchmarkGonumDgemm1024(b *testing.B) { benchGonum(b, 1024) }

// BenchmarkSimConv3x3 is a 3×3 conv of 64 → 64 channels on a 64×64 image.
func BenchmarkSimConv3x3(b *testing.B) {
	const c, h = 64, 64
	body := cStr("pt", "same") + stmt("z", []int{1, c, h, h}, "conv", "pad_type = pt", "weight = w", "x = x")
	p := program([]port{in("x", 1, c, h, h), in("w", c, c, 3, 3)}, body, []port{in("z", 1, c, h, h)})
	exe, err := New(Wide).Compile(p)
	if err != nil {
		b.Fatal(err)
	}
	rng := newRNG(14)
	in := [][]float32{halfs(rng, c*h*h, 1), halfs(rng, c*c*9, 0.1)}
	b.ResetTimer()
	for range b.N {
		if _, err := exe.Run(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*float64(c*c*9*h*h)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkKernelDotBlock times the single-threaded kernel on a 128×128
// block of outputs with K = 512 (no packing, no goroutines).
func BenchmarkKernelDotBlock(b *testing.B) {
	const m, k = 128, 512
	rng := newRNG(15)
	x, y := halfs(rng, m*k, 1), halfs(rng, m*k, 1)
	ta, tb := smallThresholds(maxAbs(x), maxAbs(y))
	a, bo := newOperand(m, k, x, k), newOperand(m, k, y, k)
	a.markSmall(k, ta)
	bo.markSmall(k, tb)
	c := make([]float32, m*m)
	b.ResetTimer()
	for range b.N {
		dotBlock(m, m, k, a, bo, c, m, false, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(m*m*k), "ns/MAC")
}
