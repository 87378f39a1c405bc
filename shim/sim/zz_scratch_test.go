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

func mv4RoundC(w0, w1, w2, w3, x []float32, s0, s1, s2, s3 float32, mx uint32) (float32, float32, float32, float32, uint32) {
	n := len(x)
	w0, w1, w2, w3 = w0[:n], w1[:n], w2[:n], w3[:n]
	for k, v := range x {
		p0, p1, p2, p3 := float32(w0[k]*v), float32(w1[k]*v), float32(w2[k]*v), float32(w3[k]*v)
		e0, e1, e2, e3 := math.Float32bits(p0)&0x7f800000, math.Float32bits(p1)&0x7f800000, math.Float32bits(p2)&0x7f800000, math.Float32bits(p3)&0x7f800000
		mx = max(mx, e0, e1, e2, e3)
		c0 := math.Float32frombits(max(e0, minNormalBits) + (13<<23 | 1<<22))
		c1 := math.Float32frombits(max(e1, minNormalBits) + (13<<23 | 1<<22))
		c2 := math.Float32frombits(max(e2, minNormalBits) + (13<<23 | 1<<22))
		c3 := math.Float32frombits(max(e3, minNormalBits) + (13<<23 | 1<<22))
		s0 += float32(p0+c0) - c0
		s1 += float32(p1+c1) - c1
		s2 += float32(p2+c2) - c2
		s3 += float32(p3+c3) - c3
	}
	return s0, s1, s2, s3, mx
}

func BenchmarkZMv4(b *testing.B) {
	x, w := scratchData(4096)
	for range b.N {
		s0, s1, s2, s3 := mv4Round(w[0], w[1], w[2], w[3], x, 0, 0, 0, 0)
		sink = s0 + s1 + s2 + s3
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(4*4096), "ns/MAC")
}

func BenchmarkZMv4C(b *testing.B) {
	x, w := scratchData(4096)
	for range b.N {
		s0, s1, s2, s3, _ := mv4RoundC(w[0], w[1], w[2], w[3], x, 0, 0, 0, 0, 0)
		sink = s0 + s1 + s2 + s3
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(4*4096), "ns/MAC")
}

func BenchmarkZMv1(b *testing.B) {
	x, w := scratchData(4096)
	for range b.N {
		sink = mv1Round(w[0], x, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(4096), "ns/MAC")
}

var sink float32

func scratchData(k int) ([]float32, [4][]float32) {
	rng := newRNG(1)
	x := halfs(rng, k, 0.01)
	var w [4][]float32
	for i := range w {
		w[i] = halfs(rng, k, 0.01)
	}
	return x, w
}
