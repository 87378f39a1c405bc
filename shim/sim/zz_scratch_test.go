package sim

import (
	"math"
	"testing"
)

func BenchmarkZTapRow(b *testing.B) {
	rng := newRNG(1)
	x := halfs(rng, 130, 1)
	acc := make([]float32, 128)
	for range b.N {
		for range 128 {
			tapRow(acc, x[1:129], 0.25, false, false)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(128*128), "ns/MAC")
}

func BenchmarkZDirect(b *testing.B) {
	const n = 128
	g := &convGeom{n: 1, ci: 1, h: n, w: n, co: 1, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pl: 1, groups: 1, oh: n, ow: n}
	rng := newRNG(1)
	x := halfs(rng, n*n, 1)
	w := []float32{0, -0.25, 0, -0.25, 1, -0.25, 0, -0.25, 0}
	out := make([]float32, n*n)
	for range b.N {
		directConv(g, x, w, nil, out, false, false)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(5*n*n), "ns/MAC")
}

func hiLo4(xs []float32) (hi, lo float64) {
	var m0, m1, m2, m3 uint32
	l0, l1, l2, l3 := uint32(1<<32-1), uint32(1<<32-1), uint32(1<<32-1), uint32(1<<32-1)
	i := 0
	for ; i+3 < len(xs); i += 4 {
		q := xs[i : i+4 : i+4]
		a0, a1, a2, a3 := math.Float32bits(q[0])&0x7fffffff, math.Float32bits(q[1])&0x7fffffff, math.Float32bits(q[2])&0x7fffffff, math.Float32bits(q[3])&0x7fffffff
		m0, m1, m2, m3 = max(m0, a0), max(m1, a1), max(m2, a2), max(m3, a3)
		l0, l1, l2, l3 = min(l0, a0-1), min(l1, a1-1), min(l2, a2-1), min(l3, a3-1)
	}
	for ; i < len(xs); i++ {
		a := math.Float32bits(xs[i]) & 0x7fffffff
		m0, l0 = max(m0, a), min(l0, a-1)
	}
	m, l := max(m0, m1, m2, m3), min(l0, l1, l2, l3)
	return float64(m), float64(l)
}

func hiOnly(xs []float32) float64 {
	var m0, m1 uint32
	i := 0
	for ; i+1 < len(xs); i += 2 {
		m0 = max(m0, math.Float32bits(xs[i])&0x7fffffff)
		m1 = max(m1, math.Float32bits(xs[i+1])&0x7fffffff)
	}
	return float64(max(m0, m1))
}

func BenchmarkZHiLo(b *testing.B) {
	x := halfs(newRNG(1), 16384, 1)
	for range b.N {
		hiLo(x)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func BenchmarkZHiLo4(b *testing.B) {
	x := halfs(newRNG(1), 16384, 1)
	for range b.N {
		hiLo4(x)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func BenchmarkZHiOnly(b *testing.B) {
	x := halfs(newRNG(1), 16384, 1)
	for range b.N {
		hiOnly(x)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func subSplit(out, x, y []float32) {
	x, y = x[:len(out)], y[:len(out)]
	for i, v := range x {
		d := v - y[i]
		if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan {
			t := float32(d * 8193)
			out[i] = t - float32(t-d)
		} else {
			out[i] = r16(d)
		}
	}
}

func BenchmarkZSubUnified(b *testing.B) {
	rng := newRNG(1)
	x, y := halfs(rng, 16384, 1), halfs(rng, 16384, 1)
	out := make([]float32, 16384)
	for range b.N {
		binaryVV(ewSub, out, x, y)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func BenchmarkZSubSplit(b *testing.B) {
	rng := newRNG(1)
	x, y := halfs(rng, 16384, 1), halfs(rng, 16384, 1)
	out := make([]float32, 16384)
	for range b.N {
		subSplit(out, x, y)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func roundRowZ(xs []float32) {
	for i, d := range xs {
		if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan {
			t := float32(d * 8193)
			xs[i] = t - float32(t-d)
		} else {
			xs[i] = r16(d)
		}
	}
}

func sub2(out, x, y []float32) {
	x, y = x[:len(out)], y[:len(out)]
	for i, v := range x {
		out[i] = v - y[i]
	}
	roundRowZ(out)
}

func BenchmarkZSub2Pass(b *testing.B) {
	rng := newRNG(1)
	x, y := halfs(rng, 16384, 1), halfs(rng, 16384, 1)
	out := make([]float32, 16384)
	for range b.N {
		sub2(out, x, y)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func BenchmarkZSubSplitTiny(b *testing.B) {
	rng := newRNG(1)
	x, y := halfs(rng, 16384, 1), halfs(rng, 16384, 0.001)
	for i := range x {
		if i%8 == 0 {
			x[i] = y[i] * 1.5
		}
	}
	out := make([]float32, 16384)
	for range b.N {
		subSplit(out, x, y)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}

func binSwitch(k ewKind, out, x, y []float32) {
	x, y = x[:len(out)], y[:len(out)]
	for i, v := range x {
		var d float32
		switch k {
		case ewAdd:
			d = v + y[i]
		case ewSub:
			d = v - y[i]
		case ewMul:
			d = float32(v * y[i])
		default:
			d = v / y[i]
		}
		if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan {
			t := float32(d * 8193)
			out[i] = t - float32(t-d)
		} else {
			out[i] = r16(d)
		}
	}
}

func BenchmarkZSubSwitch(b *testing.B) {
	rng := newRNG(1)
	x, y := halfs(rng, 16384, 1), halfs(rng, 16384, 1)
	out := make([]float32, 16384)
	for range b.N {
		binaryVV(ewSub, out, x, y)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16384, "ns/elt")
}
