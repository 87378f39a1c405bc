package precision

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

func BenchmarkSplitVector1024(b *testing.B) {
	x := randVec(newRNG(30), 1024)
	for b.Loop() {
		if _, err := SplitVector(x, DefaultLimbs, DefaultBits); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGonumScale1024 is the baseline of SplitVector and Pow2Scale: one
// pass of gonum over the vector (scale a copy).
func BenchmarkGonumScale1024(b *testing.B) {
	x := randVec(newRNG(30), 1024)
	y := make([]float64, len(x))
	for b.Loop() {
		copy(y, x)
		floats.Scale(0.5, y)
	}
}

func BenchmarkPow2Scale1024(b *testing.B) {
	x := randVec(newRNG(31), 1024)
	for b.Loop() {
		if _, err := Pow2Scale(x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGonumNormInf1024 is the baseline of Pow2Scale: gonum's max-norm.
func BenchmarkGonumNormInf1024(b *testing.B) {
	x := randVec(newRNG(31), 1024)
	for b.Loop() {
		_ = floats.Norm(x, math.Inf(1))
	}
}

func benchmarkMatVec(b *testing.B, opts MatVecOptions) {
	rng := newRNG(32)
	a := randn(rng, 1024, 1024)
	x := randVec(rng, 1024)
	mv, err := NewMatVec(openDevice(b, "sim"), a, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer mv.Close()
	y := make([]float64, 1024)
	for b.Loop() {
		if err := mv.Apply(y, x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompensatedMatVec1024 is one compensated Apply (4 limbs × 6
// bits, 20× the products of a plain pass) on the simulator, host split and
// sum included.
func BenchmarkCompensatedMatVec1024(b *testing.B) { benchmarkMatVec(b, MatVecOptions{}) }

// BenchmarkFP16MatVec1024 is one plain fp16 Apply on the simulator.
func BenchmarkFP16MatVec1024(b *testing.B) { benchmarkMatVec(b, MatVecOptions{Mode: FP16}) }

// BenchmarkGonumMatVec1024 is the float64 baseline: mat.VecDense.MulVec.
func BenchmarkGonumMatVec1024(b *testing.B) {
	rng := newRNG(32)
	a := randn(rng, 1024, 1024)
	x := mat.NewVecDense(1024, randVec(rng, 1024))
	var y mat.VecDense
	for b.Loop() {
		y.MulVec(a, x)
	}
}

// BenchmarkCompensatedMatMul256 is one compensated 256×256 product on the
// simulator, against BenchmarkGonumMatMul256.
func BenchmarkCompensatedMatMul256(b *testing.B) {
	rng := newRNG(33)
	a, c := randn(rng, 256, 256), randn(rng, 256, 256)
	mp, err := NewMatMul(openDevice(b, "sim"), a, 256, MatMulOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer mp.Close()
	var dst mat.Dense
	for b.Loop() {
		if err := mp.Apply(&dst, c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGonumMatMul256(b *testing.B) {
	rng := newRNG(33)
	a, c := randn(rng, 256, 256), randn(rng, 256, 256)
	var dst mat.Dense
	for b.Loop() {
		dst.Mul(a, c)
	}
}
