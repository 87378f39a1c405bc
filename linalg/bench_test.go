package linalg

import (
	"fmt"
	"testing"
	"time"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/benchclaim"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// programDevice records every program compiled, so that benchmarks can
// price them with lower.Estimate.
type programDevice struct {
	shim.Device
	runs map[string]int
	prog map[string]*lower.Program
}

func (d *programDevice) Compile(p *lower.Program) (shim.Executable, error) {
	exe, err := d.Device.Compile(p)
	if err != nil {
		return nil, err
	}
	d.prog[p.Hash] = p
	return &countedExecutable{exe, d, p.Hash}, nil
}

type countedExecutable struct {
	shim.Executable
	d    *programDevice
	hash string
}

func (e *countedExecutable) Run(in [][]float32) ([][]float32, error) {
	e.d.runs[e.hash]++
	return e.Executable.Run(in)
}

// modeled returns the modeled engine time of every dispatch so far on
// target, in seconds.
func (d *programDevice) modeled(b *testing.B, target string) float64 {
	total := 0.0
	for h, n := range d.runs {
		c, err := lower.Estimate(d.prog[h], target)
		if err != nil {
			b.Fatal(err)
		}
		total += float64(n) * c.Time.Seconds()
	}
	return total
}

func reportDevice(b *testing.B, d *programDevice, st *Stats) {
	ops := float64(b.N)
	b.ReportMetric(float64(st.Dispatches), "dispatches/op")
	b.ReportMetric(float64(st.Flops), "device-flops/op")
	if st.NewtonSchulz > 0 || st.Refinements > 0 {
		b.ReportMetric(float64(st.NewtonSchulz), "ns-steps/op")
		b.ReportMetric(float64(st.Refinements), "refinements/op")
	}
	b.ReportMetric(d.modeled(b, "ane-m1")/ops*1e3, "M1-ms/op")
	b.ReportMetric(d.modeled(b, "ane-m5")/ops*1e3, "M5-ms/op")
	// The last call's end-to-end figures, the program already compiled:
	// this wrapper is not a cache, so every call's compile is modeled as
	// fresh, and it is reported beside the total, not in it.
	ms := func(t time.Duration) float64 { return t.Seconds() * 1e3 }
	b.ReportMetric(ms(st.ModeledTime), "modeled-engine-ms")
	b.ReportMetric(ms(st.ModeledCompile), "modeled-compile-ms")
	b.ReportMetric(ms(st.Host+st.Build), "host-ms")
	b.ReportMetric(ms(st.ModeledTotal-st.ModeledCompile), "modeled-total-ms")
}

// newProgramDevice wraps a fresh simulator and runs the accumulator probe
// before it starts counting, so that only the operation's programs are
// priced.
func newProgramDevice(b *testing.B) *programDevice {
	d := &programDevice{Device: openDevice(b, "sim"), runs: map[string]int{}, prog: map[string]*lower.Program{}}
	if _, err := wideAccumulator(d); err != nil {
		b.Fatal(err)
	}
	clear(d.runs)
	clear(d.prog)
	return d
}

func benchMatMul(b *testing.B, n int, mode precision.Mode) {
	rng := newRNG(uint64(n))
	x, y := randn(rng, n, n), randn(rng, n, n)
	dev := newProgramDevice(b)
	var st Stats
	for b.Loop() {
		if _, err := MatMul(x, y, &Settings{Device: dev, Precision: mode, Stats: &st}); err != nil {
			b.Fatal(err)
		}
	}
	reportDevice(b, dev, &st)
}

func benchGonumMul(b *testing.B, n int) {
	rng := newRNG(uint64(n))
	x, y := randn(rng, n, n), randn(rng, n, n)
	var c mat.Dense
	for b.Loop() {
		c.Mul(x, y)
	}
}

func BenchmarkMatMulFP1664(b *testing.B)          { benchMatMul(b, 64, precision.FP16) }
func BenchmarkMatMulFP16128(b *testing.B)         { benchMatMul(b, 128, precision.FP16) }
func BenchmarkMatMulCompensated64(b *testing.B)   { benchMatMul(b, 64, precision.Compensated) }
func BenchmarkMatMulCompensated128(b *testing.B)  { benchMatMul(b, 128, precision.Compensated) }
func BenchmarkGonumMul64(b *testing.B)            { benchGonumMul(b, 64) }
func BenchmarkGonumMul128(b *testing.B)           { benchGonumMul(b, 128) }
func BenchmarkMatMulFP16256(b *testing.B)         { benchMatMul(b, 256, precision.FP16) }
func BenchmarkMatMulFP16512(b *testing.B)         { benchMatMul(b, 512, precision.FP16) }
func BenchmarkMatMulFP161024(b *testing.B)        { benchMatMul(b, 1024, precision.FP16) }
func BenchmarkMatMulFP162048(b *testing.B)        { benchMatMul(b, 2048, precision.FP16) }
func BenchmarkMatMulCompensated256(b *testing.B)  { benchMatMul(b, 256, precision.Compensated) }
func BenchmarkMatMulCompensated512(b *testing.B)  { benchMatMul(b, 512, precision.Compensated) }
func BenchmarkMatMulCompensated1024(b *testing.B) { benchMatMul(b, 1024, precision.Compensated) }
func BenchmarkMatMulCompensated2048(b *testing.B) { benchMatMul(b, 2048, precision.Compensated) }
func BenchmarkMatMulFloat64256(b *testing.B)      { benchMatMul(b, 256, precision.Float64) }
func BenchmarkGonumMul256(b *testing.B)           { benchGonumMul(b, 256) }
func BenchmarkGonumMul512(b *testing.B)           { benchGonumMul(b, 512) }
func BenchmarkGonumMul1024(b *testing.B)          { benchGonumMul(b, 1024) }
func BenchmarkGonumMul2048(b *testing.B)          { benchGonumMul(b, 2048) }

// benchFactorizeSolve is the end-to-end solve of one RandSVD system (κ₂ =
// 1e2, where FP16 factors suffice at every n; at κ₂ = 1e4 and n ≥ 1024 the
// FP16 factors' first refinement step gains too little and the
// compensated factorization runs instead) of order n, Factorize + Solve on one simulator: the modeled engine
// time of the dispatches, the modeled compile of the programs (the first
// iteration compiles them; the cost is counted once over b.N), the
// measured host time (the simulator's own run time excluded), and their
// sum with the graph build, per op.
func benchFactorizeSolve(b *testing.B, n int) {
	if n > 2048 && testing.Short() {
		b.Skip("4096 is in the full benchmark only")
	}
	a := randSVD(b, n, 1e2, uint64(n))
	rhs := randn(newRNG(3), n, 1).RawMatrix().Data
	dev := openDevice(b, "sim")
	var tot Stats
	for b.Loop() {
		var st Stats
		f, err := Factorize(a, &Settings{Device: dev, Stats: &st})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Solve(rhs); err != nil {
			b.Fatal(err)
		}
		st = f.Stats()
		f.Close()
		tot.ModeledTime += st.ModeledTime
		tot.ModeledCompile += st.ModeledCompile
		tot.Host += st.Host
		tot.Build += st.Build
		tot.Dispatches += st.Dispatches
		tot.GMRES += st.GMRES
		tot.Flops += st.Flops
		tot.HostFlops += st.HostFlops
		tot.Mode = st.Mode
	}
	tot.finish()
	ops := float64(b.N)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / ops }
	b.ReportMetric(ms(tot.ModeledTime), "modeled-engine-ms")
	b.ReportMetric(ms(tot.ModeledCompile), "modeled-compile-ms")
	b.ReportMetric(ms(tot.Host), "host-ms")
	b.ReportMetric(ms(tot.Build), "build-ms")
	b.ReportMetric(ms(tot.ModeledTotal), "modeled-total-ms")
	b.ReportMetric(float64(tot.Dispatches)/ops, "dispatches/op")
	b.ReportMetric(float64(tot.GMRES)/ops, "gmres-its/op")
	b.ReportMetric(float64(tot.HostFlops)/float64(tot.Flops), "host/device-flops")
	b.ReportMetric(tot.Host.Seconds()/tot.ModeledTime.Seconds(), "host-share")
	// The same dispatches priced on M5 (the FP16 factorization's program;
	// the solve dispatches nothing).
	if bs := blockSize(n, 0); tot.Mode == precision.FP16 && n > bs {
		p, err := lower.Lower(luGraph(n, bs), lower.TargetM5)
		if err != nil {
			b.Fatal(err)
		}
		c, err := lower.Estimate(p, lower.TargetM5.Name)
		if err != nil {
			b.Fatal(err)
		}
		m5 := float64(tot.Dispatches) / ops * c.Time.Seconds() * 1e3
		b.ReportMetric(m5, "modeled-m5-engine-ms")
		b.ReportMetric(ms(tot.ModeledTotal)-ms(tot.ModeledTime)+m5, "modeled-m5-total-ms")
	}
	b.Logf("n = %d: %v factors, %d dispatches, modeled engine %v, compile %v, host %v, build %v, total %v", n, tot.Mode, tot.Dispatches, tot.ModeledTime, tot.ModeledCompile, tot.Host, tot.Build, tot.ModeledTotal)
}

// benchGonumLUSolve is gonum's LU factorization and solve of the same
// system, measured: host-ms = modeled-total-ms, the time a user waits.
func benchGonumLUSolve(b *testing.B, n int) {
	if n > 2048 && testing.Short() {
		b.Skip("4096 is in the full benchmark only")
	}
	a := randSVD(b, n, 1e2, uint64(n))
	rhs := mat.NewVecDense(n, randn(newRNG(3), n, 1).RawMatrix().Data)
	var x mat.VecDense
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		var lu mat.LU
		lu.Factorize(a)
		if err := lu.SolveVecTo(&x, false, rhs); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	ms := total.Seconds() * 1e3 / float64(b.N)
	b.ReportMetric(ms, "host-ms")
	b.ReportMetric(ms, "modeled-total-ms")
}

func BenchmarkFactorizeSolve256(b *testing.B)  { benchFactorizeSolve(b, 256) }
func BenchmarkFactorizeSolve512(b *testing.B)  { benchFactorizeSolve(b, 512) }
func BenchmarkFactorizeSolve1024(b *testing.B) { benchFactorizeSolve(b, 1024) }
func BenchmarkFactorizeSolve2048(b *testing.B) { benchFactorizeSolve(b, 2048) }
func BenchmarkFactorizeSolve4096(b *testing.B) { benchFactorizeSolve(b, 4096) }
func BenchmarkGonumLUSolve256(b *testing.B)    { benchGonumLUSolve(b, 256) }
func BenchmarkGonumLUSolve512(b *testing.B)    { benchGonumLUSolve(b, 512) }
func BenchmarkGonumLUSolve1024(b *testing.B)   { benchGonumLUSolve(b, 1024) }
func BenchmarkGonumLUSolve2048(b *testing.B)   { benchGonumLUSolve(b, 2048) }
func BenchmarkGonumLUSolve4096(b *testing.B)   { benchGonumLUSolve(b, 4096) }

// benchPanels is the host's panel work of one FP16 factorization of order
// n in panels of b columns (every panel shape m×b, m = n, n−b, …, b, from
// Gaussian data) with the float32 recursive getrf32 or, as the baseline,
// gonum's float64 dgetrf; each includes the conversion and the rounding of
// the multipliers to fp16 that factorFP16 does.
func benchPanels(b *testing.B, n, bs int, f32 bool) {
	rng := newRNG(7)
	src := make([]float64, n*bs)
	for i := range src {
		src[i] = rng.NormFloat64()
	}
	st := &Stats{}
	for b.Loop() {
		for m := n; m > 0; m -= bs {
			act := make([]int, m)
			if f32 {
				p := make([]float32, m*bs)
				for i, v := range src[:m*bs] {
					p[i] = float32(v)
				}
				ipiv := make([]int, bs)
				getrf32(m, bs, p, bs, ipiv)
				for i := bs * bs; i < len(p); i++ {
					p[i] = float32(fp16.Round64(float64(p[i])))
				}
				continue
			}
			p := append([]float64(nil), src[:m*bs]...)
			panelLU(p, m, bs, act, st)
			for i := bs * bs; i < len(p); i++ {
				p[i] = fp16.Round64(p[i])
			}
		}
	}
}

func BenchmarkPanels(b *testing.B) {
	for _, c := range []struct{ n, b int }{{256, 64}, {512, 128}, {1024, 128}, {2048, 256}} {
		b.Run(fmt.Sprintf("getrf32-%dx%d", c.n, c.b), func(b *testing.B) { benchPanels(b, c.n, c.b, true) })
		b.Run(fmt.Sprintf("dgetrf-%dx%d", c.n, c.b), func(b *testing.B) { benchPanels(b, c.n, c.b, false) })
	}
}

// BenchmarkMatVecPrecision is one core's matrix–vector product y = A·x in
// gonum's float64 and float32 kernels at the orders of the dense solve:
// the refinement's GMRES makes two such passes an iteration, so the
// float32 ratio bounds what a lower-precision GMRES could save.
func BenchmarkMatVecPrecision(b *testing.B) {
	for _, n := range []int{1024, 2048, 4096} {
		a64 := randn(newRNG(uint64(n)), n, n).RawMatrix().Data
		a32 := make([]float32, len(a64))
		for i, v := range a64 {
			a32[i] = float32(v)
		}
		x64, y64 := make([]float64, n), make([]float64, n)
		x32, y32 := make([]float32, n), make([]float32, n)
		perEntry := func(b *testing.B) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*n), "ns/entry")
		}
		b.Run(fmt.Sprintf("float64/%d", n), func(b *testing.B) {
			for b.Loop() {
				blas64.Gemv(blas.NoTrans, 1, blas64.General{Rows: n, Cols: n, Stride: n, Data: a64},
					blas64.Vector{N: n, Inc: 1, Data: x64}, 0, blas64.Vector{N: n, Inc: 1, Data: y64})
			}
			perEntry(b)
		})
		b.Run(fmt.Sprintf("float32/%d", n), func(b *testing.B) {
			for b.Loop() {
				blas32.Gemv(blas.NoTrans, 1, blas32.General{Rows: n, Cols: n, Stride: n, Data: a32},
					blas32.Vector{N: n, Inc: 1, Data: x32}, 0, blas32.Vector{N: n, Inc: 1, Data: y32})
			}
			perEntry(b)
		})
	}
}

// BenchmarkEndToEnd is the linalg rows of docs/RESULTS.md's end-to-end
// table (internal/benchclaim), alternated with gonum on the same data; it
// fails where the table's row disagrees. FactorizeSolve: Factorize + one
// Solve of a RandSVD system (κ₂ = 1e2, as benchFactorizeSolve) with a
// fresh Factorization each call on one simulator (the first call compiles
// the program; the rest find it compiled), against gonum's LU
// factorization and solve. MatMul: one n×n×n product, against gonum's
// Mul. A first call, before the pairs, compiles.
func BenchmarkEndToEnd(b *testing.B) {
	for _, n := range []int{256, 512, 1024, 2048, 4096} {
		b.Run(fmt.Sprintf("FactorizeSolve%d", n), func(b *testing.B) {
			if n > 2048 && testing.Short() {
				b.Skip("4096 is in the full benchmark only")
			}
			a := randSVD(b, n, 1e2, uint64(n))
			rhs := randn(newRNG(3), n, 1).RawMatrix().Data
			dev := openDevice(b, "sim")
			solve := func() Stats {
				f, err := Factorize(a, &Settings{Device: dev})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Solve(rhs); err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				return f.Stats()
			}
			compile := solve().ModeledCompile
			rv := mat.NewVecDense(n, rhs)
			var x mat.VecDense
			benchclaim.Pair(b, fmt.Sprintf("Factorize + Solve %d, κ = 1e2", n), "gonum LU solve", func() benchclaim.Run {
				st := solve()
				return benchclaim.Run{Dispatches: st.Dispatches, Engine: st.ModeledTime, Host: st.Host + st.Build, Compile: compile}
			}, func() {
				var lu mat.LU
				lu.Factorize(a)
				if err := lu.SolveVecTo(&x, false, rv); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	for _, mode := range []precision.Mode{precision.FP16, precision.Compensated} {
		b.Run(fmt.Sprintf("MatMul%v1024", mode), func(b *testing.B) {
			const n = 1024
			rng := newRNG(uint64(n))
			x, y := randn(rng, n, n), randn(rng, n, n)
			dev := openDevice(b, "sim")
			mul := func() Stats {
				var st Stats
				if _, err := MatMul(x, y, &Settings{Device: dev, Precision: mode, Stats: &st}); err != nil {
					b.Fatal(err)
				}
				return st
			}
			compile := mul().ModeledCompile
			var c mat.Dense
			benchclaim.Pair(b, fmt.Sprintf("MatMul 1024³, %v", mode), "gonum Mul", func() benchclaim.Run {
				st := mul()
				return benchclaim.Run{Dispatches: st.Dispatches, Engine: st.ModeledTime, Host: st.Host + st.Build, Compile: compile}
			}, func() { c.Mul(x, y) })
		})
	}
}
