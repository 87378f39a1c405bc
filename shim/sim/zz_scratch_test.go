package sim

import (
	"math"
	"testing"
)

func BenchmarkZBinary(b *testing.B) {
	rng := newRNG(1)
	x, y := halfs(rng, 16384, 1), halfs(rng, 16384, 1)
	out := make([]float32, 16384)
	for range b.N {
		binaryRow(ewSub, out, x, 1, y, 1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func BenchmarkZBinaryScalar(b *testing.B) {
	rng := newRNG(1)
	x, y := halfs(rng, 16384, 1), halfs(rng, 1, 1)
	out := make([]float32, 16384)
	for range b.N {
		binaryRow(ewMul, out, x, 1, y, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func r16old(x float32) float32 {
	if math.Float32bits(x)&0x7fffffff-minNormalBits < fastSpan {
		t := float32(x * 8193)
		return t - float32(t-x)
	}
	return r16slowZ(x)
}

//go:noinline
func r16slowZ(x float32) float32 { return r16(x) }

func BenchmarkZBinaryOld(b *testing.B) {
	rng := newRNG(1)
	x, y := halfs(rng, 16384, 1), halfs(rng, 16384, 1)
	out := make([]float32, 16384)
	for range b.N {
		x, y := x[:len(out)], y[:len(out)]
		for i, v := range x {
			out[i] = r16old(v - y[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func BenchmarkZHiLo(b *testing.B) {
	rng := newRNG(1)
	x := halfs(rng, 16384, 1)
	for range b.N {
		hiLo(x)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}
