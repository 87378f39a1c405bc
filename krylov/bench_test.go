package krylov

import (
	"fmt"
	"math"
	"testing"
	"time"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/internal/benchclaim"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
)

// benchCG solves Poisson n² (random right-hand side) to 1e-10 on the
// simulator with the device polynomial (Precond: Polynomial; the default
// there is FastDiagonalization, benchCGFastDiagonalization) and reports dispatches, iterations, and the modeled engine
// time of the solve on M1 and M5 (lower.Estimate of the program lowered
// for each family, times the dispatches), with the device bytes per
// unknown per iteration. The ns/op is the simulator's, not an engine's.
func benchCG(b *testing.B, n, unroll int) {
	dev := simDevice(b, "sim")
	op := poisson(b, n, n)
	rhs := randVec(n*n, 1)
	set := &Settings{Device: dev, Unroll: unroll, Precond: polynomialOf(b, op)} // the default MaxDispatches, max(200, √n)
	if _, err := CG(op, rhs, set); err != nil {                                 // compile outside the timer
		b.Fatal(err)
	}
	var res Result
	for b.Loop() {
		var err error
		if res, err = CG(op, rhs, set); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Dispatches), "dispatches")
	b.ReportMetric(float64(res.Iterations), "iterations")
	b.ReportMetric(float64(res.DeviceBytes)/float64(n*n)/float64(res.Iterations), "device-B/unknown/iter")
	b.ReportMetric(float64(res.DeviceBytes)/float64(n*n), "device-B/unknown/solve")
	b.ReportMetric(float64(res.Dispatches*(unroll+1)), "applications")
	plan, err := planCG(op, set.withDefaults(op.Dims()))
	if err != nil {
		b.Fatal(err)
	}
	reportModeled(b, plan.graph, res.Dispatches)
}

// reportModeled lowers a solver's program for M1 and M5 and reports the
// modeled time of `dispatches` dispatches on each, in ms.
func reportModeled(b *testing.B, graph func() (*dataflow.Graph, error), dispatches int) {
	b.Helper()
	for _, t := range []lower.Target{lower.TargetM1, lower.TargetM5} {
		g, err := graph()
		if err != nil {
			b.Fatal(err)
		}
		p, err := lower.Lower(g, t)
		if err != nil {
			b.Fatal(err)
		}
		c, err := lower.Estimate(p, t.Name)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(dispatches)*c.Time.Seconds()*1e3, "modeled-"+t.Name+"-ms")
	}
}

func BenchmarkCGPoisson64(b *testing.B)   { benchCG(b, 64, DefaultUnroll) }
func BenchmarkCGPoisson128(b *testing.B)  { benchCG(b, 128, DefaultUnroll) }
func BenchmarkCGPoisson512(b *testing.B)  { benchCG(b, 512, DefaultUnroll) }
func BenchmarkCGPoisson1024(b *testing.B) { benchCG(b, 1024, DefaultUnroll) }

// The float64 baselines: textbook CG on the same problems (gonum vectors).
func benchReferenceCG(b *testing.B, n int) {
	a, err := reference.Poisson2D(n, n)
	if err != nil {
		b.Fatal(err)
	}
	rhs := randVec(n*n, 1)
	var res reference.CGResult
	for b.Loop() {
		var err error
		if res, err = reference.CG(a, rhs, reference.CGSettings{Tol: 1e-10}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Iterations), "iterations")
	// Device-style bytes of float64 CG, counted as lower.Estimate counts a
	// program (every operand read and every result written, once per op):
	// per iteration q = A·p reads p and writes q (the stencil's 5
	// coefficients are constants, 0 bytes per unknown), p·q and r·r read
	// two vectors each, x += αp and r −= αq read two and write one each,
	// p = r + βp reads two and writes one: 2 + 4 + 3 + 3 + 3 = 15 vectors
	// of 8 bytes = 120 bytes per unknown per iteration.
	b.ReportMetric(120*float64(res.Iterations), "float64-B/unknown/solve")
}

func BenchmarkReferenceCGPoisson64(b *testing.B)   { benchReferenceCG(b, 64) }
func BenchmarkReferenceCGPoisson128(b *testing.B)  { benchReferenceCG(b, 128) }
func BenchmarkReferenceCGPoisson512(b *testing.B)  { benchReferenceCG(b, 512) }
func BenchmarkReferenceCGPoisson1024(b *testing.B) { benchReferenceCG(b, 1024) }

// BenchmarkCGBuild128 measures building the device polynomial's graph,
// lowering it and compiling it on the simulator (a fresh device each time:
// no cache hit).
func BenchmarkCGBuild128(b *testing.B) {
	op := poisson(b, 128, 128)
	plan, err := planCG(op, (&Settings{}).withDefaults(op.Dims()))
	if err != nil {
		b.Fatal(err)
	}
	var lowerNS, compileNS float64
	for b.Loop() {
		g, err := plan.graph()
		if err != nil {
			b.Fatal(err)
		}
		t0 := b.Elapsed()
		p, err := lower.Lower(g, lower.TargetSim)
		if err != nil {
			b.Fatal(err)
		}
		t1 := b.Elapsed()
		dev, err := shim.Open("sim")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dev.Compile(p); err != nil {
			b.Fatal(err)
		}
		t2 := b.Elapsed()
		dev.Close()
		lowerNS += float64(t1 - t0)
		compileNS += float64(t2 - t1)
	}
	b.ReportMetric(lowerNS/float64(b.N)/1e6, "lower-ms")
	b.ReportMetric(compileNS/float64(b.N)/1e6, "compile-ms")
}

// benchCGFastDiagonalization is benchCG with Precond: FastDiagonalization.
func benchCGFastDiagonalization(b *testing.B, n int) {
	dev := simDevice(b, "sim")
	op := poisson(b, n, n)
	pre, err := FastDiagonalization(op)
	if err != nil {
		b.Fatal(err)
	}
	rhs := randVec(n*n, 1)
	set := &Settings{Device: dev, Precond: pre}
	first, err := CG(op, rhs, set) // compiles the program, outside the timer
	if err != nil {
		b.Fatal(err)
	}
	var res Result
	for b.Loop() {
		if res, err = CG(op, rhs, set); err != nil {
			b.Fatal(err)
		}
	}
	reportUserTime(b, first, res)
	b.ReportMetric(float64(res.Dispatches), "dispatches")
	b.ReportMetric(float64(res.DeviceBytes)/float64(n*n), "device-B/unknown/solve")
	b.ReportMetric(float64(res.DeviceFlops)/1e9, "device-GFLOP/solve")
	plan, err := planCG(op, set.withDefaults(op.Dims()))
	if err != nil {
		b.Fatal(err)
	}
	reportModeled(b, plan.graph, res.Dispatches)
}

func BenchmarkCGFastDiagonalization128(b *testing.B)  { benchCGFastDiagonalization(b, 128) }
func BenchmarkCGFastDiagonalization512(b *testing.B)  { benchCGFastDiagonalization(b, 512) }
func BenchmarkCGFastDiagonalization1024(b *testing.B) { benchCGFastDiagonalization(b, 1024) }

// reportUserTime reports what a user waits for in one solve, per op: the
// modeled engine time of its dispatches (the simulator's programs priced
// as ane-m1), the measured host time (wall time outside the device's runs,
// Build included), their sum ModeledTotal (the program already compiled),
// and beside it the modeled compile the first solve was charged. The
// simulator's own time, in ns/op, is none of these.
func reportUserTime(b *testing.B, first, res Result) {
	b.Helper()
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 }
	b.ReportMetric(ms(res.ModeledTime+res.ModeledSetup), "modeled-engine-ms")
	b.ReportMetric(ms(first.ModeledCompile), "modeled-compile-ms")
	b.ReportMetric(ms(res.Host+res.Build), "host-ms")
	b.ReportMetric(ms(res.ModeledTotal), "modeled-total-ms")
	if res.Dispatches > 0 {
		b.ReportMetric(ms(res.Host+res.Build)/float64(res.Dispatches), "host-ms/dispatch")
	}
}

// benchReferenceFastPoisson is the float64 baseline of the same method on
// the CPU: the direct fast-diagonalization solve of Poisson n² with
// gonum's DST-I (dsp/fourier, an FFT), O(n² log n), to be set beside CG
// with FastDiagonalization as float64 CG is set beside the default CG. It
// checks its own residual and reports it.
func benchReferenceFastPoisson(b *testing.B, n int) {
	solve, check := fastPoisson(b, n)
	for b.Loop() {
		solve()
	}
	b.ReportMetric(check()*1e12, "residual-1e-12")
}

// fastPoisson returns the gonum-DST direct solve of Poisson n² with a
// random right-hand side, and a check that returns its relative residual
// and fails b above the solvers' 1e-10 (a direct solve's residual is
// float64 rounding times κ, about 4e5 at 1024²).
func fastPoisson(b *testing.B, n int) (solve func(), check func() float64) {
	op := poisson(b, n, n)
	st := op.(*stencilOp)
	rhs := randVec(n*n, 1)
	dst := fourier.NewDST(n)
	norm := dst.Transform(nil, dst.Transform(nil, append([]float64{1}, make([]float64, n-1)...)))[0] // DST·DST = norm·I
	lam := make([]float64, n)
	for k := range lam {
		lam[k] = 2 * math.Cos(float64(k+1)*math.Pi/float64(n+1))
	}
	x := make([]float64, n*n)
	col, out := make([]float64, n), make([]float64, n)
	transform2D := func(v []float64) { // rows, then columns
		for y := range n {
			row := v[y*n : (y+1)*n]
			dst.Transform(row, row)
		}
		for xx := range n {
			for y := range n {
				col[y] = v[y*n+xx]
			}
			dst.Transform(out, col)
			for y := range n {
				v[y*n+xx] = out[y]
			}
		}
	}
	solve = func() {
		copy(x, rhs)
		transform2D(x)
		for j := range n {
			for i := range n {
				x[j*n+i] /= st.eigenvalue(lam[i], lam[j]) * norm * norm
			}
		}
		transform2D(x)
	}
	check = func() float64 {
		r := reference.RelResidual(hostOp{op}, x, rhs)
		if !(r <= 1e-10) {
			b.Fatalf("fast Poisson residual %g", r)
		}
		return r
	}
	return solve, check
}

func BenchmarkReferenceFastPoisson128(b *testing.B)  { benchReferenceFastPoisson(b, 128) }
func BenchmarkReferenceFastPoisson512(b *testing.B)  { benchReferenceFastPoisson(b, 512) }
func BenchmarkReferenceFastPoisson1024(b *testing.B) { benchReferenceFastPoisson(b, 1024) }

// BenchmarkEndToEnd is the Krylov rows of docs/RESULTS.md's end-to-end
// table (internal/benchclaim): each solve on the simulator, its modeled M1
// engine time and measured host time, alternated with the best CPU method
// for the same problem; it fails where the table's row disagrees.
func BenchmarkEndToEnd(b *testing.B) {
	for _, n := range []int{128, 512, 1024} {
		b.Run(fmt.Sprintf("CG%d", n), func(b *testing.B) {
			op := poisson(b, n, n)
			pre, err := FastDiagonalization(op)
			if err != nil {
				b.Fatal(err)
			}
			rhs := randVec(n*n, 1)
			set := &Settings{Device: simDevice(b, "sim"), Precond: pre}
			solve, check := fastPoisson(b, n)
			pairSolve(b, fmt.Sprintf("CG to 1e-10, Poisson %d², default", n), "gonum-DST fast solver",
				func() (Result, error) { return CG(op, rhs, set) }, solve)
			check()
		})
	}
	b.Run("GMRESConvDiff64", func(b *testing.B) {
		const nx = 64
		op, err := Stencil2D(nx, nx, gmresConvDiffStencil(nx, nx, 10))
		if err != nil {
			b.Fatal(err)
		}
		csr, err := reference.ConvectionDiffusion2D(nx, nx, 10)
		if err != nil {
			b.Fatal(err)
		}
		rhs := gmresOnes(nx * nx)
		set := &Settings{Device: simDevice(b, "sim"), Restart: 30}
		pairSolve(b, "GMRES to 1e-10, conv–diffusion 64², Pe 10", "float64 GMRES(30)",
			func() (Result, error) { return GMRES(op, rhs, set) },
			func() {
				if _, err := reference.GMRES(csr, rhs, reference.GMRESSettings{Tol: gmresTol, Restart: 30}); err != nil {
					b.Fatal(err)
				}
			})
	})
}

// pairSolve compiles by one solve, then pairs solve with cpu.
func pairSolve(b *testing.B, problem, cpuName string, solve func() (Result, error), cpu func()) {
	first, err := solve()
	if err != nil {
		b.Fatal(err)
	}
	benchclaim.Pair(b, problem, cpuName, func() benchclaim.Run {
		res, err := solve()
		if err != nil {
			b.Fatal(err)
		}
		return benchclaim.Run{Dispatches: res.Dispatches, Engine: res.ModeledTime + res.ModeledSetup,
			Host: res.Host + res.Build, Compile: first.ModeledCompile}
	}, cpu)
}
