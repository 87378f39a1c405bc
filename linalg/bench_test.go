package linalg

import (
	"fmt"
	"testing"
	"time"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
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

func benchSolve(b *testing.B, n int) {
	a := randSVD(b, n, 1e4, uint64(n))
	rhs := randn(newRNG(3), n, 1).RawMatrix().Data
	dev := newProgramDevice(b)
	var st Stats
	for b.Loop() {
		// NoCache: every iteration pays for its Newton–Schulz inverse.
		if _, err := Solve(a, rhs, &Settings{Device: dev, Stats: &st}); err != nil {
			b.Fatal(err)
		}
	}
	reportDevice(b, dev, &st)
}

func benchGonumSolve(b *testing.B, n int) {
	a := randSVD(b, n, 1e4, uint64(n))
	rhs := mat.NewVecDense(n, randn(newRNG(3), n, 1).RawMatrix().Data)
	var x mat.VecDense
	for b.Loop() {
		var lu mat.LU
		lu.Factorize(a)
		if err := lu.SolveVecTo(&x, false, rhs); err != nil {
			b.Fatal(err)
		}
	}
}

// benchGonumSolveFactored times only the solve with a precomputed LU
// factorization: the host baseline of a solve whose device inverse is
// cached.
func benchGonumSolveFactored(b *testing.B, n int) {
	a := randSVD(b, n, 1e4, uint64(n))
	rhs := mat.NewVecDense(n, randn(newRNG(3), n, 1).RawMatrix().Data)
	var lu mat.LU
	lu.Factorize(a)
	var x mat.VecDense
	for b.Loop() {
		if err := lu.SolveVecTo(&x, false, rhs); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatMulFP1664(b *testing.B)          { benchMatMul(b, 64, precision.FP16) }
func BenchmarkMatMulFP16128(b *testing.B)         { benchMatMul(b, 128, precision.FP16) }
func BenchmarkMatMulCompensated64(b *testing.B)   { benchMatMul(b, 64, precision.Compensated) }
func BenchmarkMatMulCompensated128(b *testing.B)  { benchMatMul(b, 128, precision.Compensated) }
func BenchmarkGonumMul64(b *testing.B)            { benchGonumMul(b, 64) }
func BenchmarkGonumMul128(b *testing.B)           { benchGonumMul(b, 128) }
func BenchmarkGonumSolveFactored256(b *testing.B) { benchGonumSolveFactored(b, 256) }
func BenchmarkGonumSolveFactored512(b *testing.B) { benchGonumSolveFactored(b, 512) }
func BenchmarkGonumSolveFactored1024(b *testing.B) {
	benchGonumSolveFactored(b, 1024)
}
func BenchmarkGonumSolveFactored2048(b *testing.B) {
	benchGonumSolveFactored(b, 2048)
}
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
func BenchmarkSolve256(b *testing.B)              { benchSolve(b, 256) }
func BenchmarkSolve512(b *testing.B)              { benchSolve(b, 512) }
func BenchmarkSolve1024(b *testing.B)             { benchSolve(b, 1024) }
func BenchmarkSolve2048(b *testing.B)             { benchSolve(b, 2048) }
func BenchmarkGonumSolve256(b *testing.B)         { benchGonumSolve(b, 256) }
func BenchmarkGonumSolve512(b *testing.B)         { benchGonumSolve(b, 512) }
func BenchmarkGonumSolve1024(b *testing.B)        { benchGonumSolve(b, 1024) }
func BenchmarkGonumSolve2048(b *testing.B)        { benchGonumSolve(b, 2048) }

// modeledDispatch builds (without running) the product of an n×n matrix
// with cols columns in mode on a recording simulator and returns the
// modeled engine time of one dispatch on ane-m1 and ane-m5.
func modeledDispatch(t *testing.T, n, cols int, mode precision.Mode) (m1, m5 time.Duration) {
	t.Helper()
	d := &programDevice{Device: openDevice(t, "sim"), runs: map[string]int{}, prog: map[string]*lower.Program{}}
	cfg, err := resolve("modeledDispatch", &Settings{Device: d})
	require.NoError(t, err)
	clear(d.prog)
	pl, err := newPlan("modeledDispatch", cfg, randn(newRNG(uint64(n)), n, n), cols, mode)
	require.NoError(t, err)
	defer pl.close()
	require.Len(t, d.prog, 1)
	for _, p := range d.prog {
		c1, err := lower.Estimate(p, "ane-m1")
		require.NoError(t, err)
		c5, err := lower.Estimate(p, "ane-m5")
		require.NoError(t, err)
		m1, m5 = c1.Time, c5.Time
	}
	return m1, m5
}

// TestModeledEngineTime prices what the simulator is too slow to run:
// the modeled M1 and M5 engine time (lower.Estimate) of MatMul and Solve at
// n = 64 … 2048, from the programs alone. MatMul is one dispatch at
// every n (one band: n ≤ the spatial limit). Solve's dispatches are
// counted by class — FP16 Newton–Schulz products, compensated ones, and
// compensated n×1 refinement products — in a measured solve at n = 128
// (RandSVD, κ = 1e4, as BenchmarkSolve), and priced at each n with those
// counts. The count grows by about one Newton–Schulz step (two compensated
// dispatches) per doubling of n — 75, 77, 79, 81 dispatches at n = 64 …
// 512 (TestSolveTable, BenchmarkSolve) — so the Solve column, priced with
// the counts of n = 128, runs low as n grows: against BenchmarkSolve's
// measured M1 time it is 0.4 % low at 256 and 5 % at 512, and if every
// added step is compensated, at most 6/39 ≈ 15 % at 1024 and 8/39 ≈ 20 %
// at 2048. Long only (the 2048 programs take a while to build).
func TestModeledEngineTime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 2048×2048 compensated programs")
	}
	// Count the solve's dispatches by class at n = 128.
	const n0 = 128
	d := &programDevice{Device: openDevice(t, "sim"), runs: map[string]int{}, prog: map[string]*lower.Program{}}
	_, err := wideAccumulator(d)
	require.NoError(t, err)
	clear(d.runs)
	clear(d.prog)
	a := randSVD(t, n0, 1e4, n0)
	var st Stats
	_, err = Solve(a, randn(newRNG(3), n0, 1).RawMatrix().Data, &Settings{Device: d, Stats: &st})
	require.NoError(t, err)
	var fp16, comp, refine int
	for h, runs := range d.runs {
		c, err := lower.Estimate(d.prog[h], "ane-m1")
		require.NoError(t, err)
		// In units of one plain n×n×n pass: FP16 ≈ 1, compensated ≈ 35,
		// a compensated n×1 refinement product ≈ 35/n (< ½ at n = 128).
		work := float64(c.Flops) / (2 * n0 * n0 * n0)
		switch {
		case work < 0.5:
			refine += runs
		case work < 2:
			fp16 += runs
		default:
			comp += runs
		}
	}
	require.Equal(t, st.Dispatches, fp16+comp+refine)
	t.Logf("solve at n = %d, κ = 1e4: %d dispatches = %d FP16 + %d compensated Newton–Schulz products + %d refinements", n0, st.Dispatches, fp16, comp, refine)
	t.Logf("| n | MatMul FP16 M1 / M5 | MatMul Compensated M1 / M5 | Solve (%d dispatches) M1 / M5 | cached Solve (%d refinements) M1 / M5 |", st.Dispatches, refine)
	for _, n := range []int{64, 128, 256, 512, 1024, 2048} {
		f1, f5 := modeledDispatch(t, n, n, precision.FP16)
		c1, c5 := modeledDispatch(t, n, n, precision.Compensated)
		r1, r5 := modeledDispatch(t, n, 1, precision.Compensated)
		s1 := time.Duration(fp16)*f1 + time.Duration(comp)*c1 + time.Duration(refine)*r1
		s5 := time.Duration(fp16)*f5 + time.Duration(comp)*c5 + time.Duration(refine)*r5
		t.Logf("| %d | %v / %v | %v / %v | %v / %v | %v / %v |", n, f1, f5, c1, c5, s1, s5, time.Duration(refine)*r1, time.Duration(refine)*r5)
	}
}

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
