package krylov

import (
	"math"
	"testing"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
)

// benchCG solves Poisson n² (random right-hand side) to 1e-10 on the
// simulator and reports dispatches and dispatches per decade of residual.
func benchCG(b *testing.B, n, unroll int) {
	dev := simDevice(b, "sim")
	op := poisson(b, n, n)
	rhs := randVec(n*n, 1)
	if _, err := CG(op, rhs, &Settings{Device: dev, Unroll: unroll}); err != nil { // compile outside the timer
		b.Fatal(err)
	}
	var res Result
	for b.Loop() {
		var err error
		if res, err = CG(op, rhs, &Settings{Device: dev, Unroll: unroll}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Dispatches), "dispatches")
	b.ReportMetric(float64(res.Iterations), "iterations")
	b.ReportMetric(float64(res.Dispatches)/-math.Log10(res.Residual), "dispatches/digit")
}

func BenchmarkCGPoisson64Sim(b *testing.B)  { benchCG(b, 64, DefaultUnroll) }
func BenchmarkCGPoisson128Sim(b *testing.B) { benchCG(b, 128, DefaultUnroll) }

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
}

func BenchmarkReferenceCGPoisson64(b *testing.B)  { benchReferenceCG(b, 64) }
func BenchmarkReferenceCGPoisson128(b *testing.B) { benchReferenceCG(b, 128) }

// BenchmarkCGBuild128 measures building the unrolled graph, lowering it and
// compiling it on the simulator (a fresh device each time: no cache hit).
func BenchmarkCGBuild128(b *testing.B) {
	op := poisson(b, 128, 128)
	sigma := pow2Exp(op.NormInf())
	apply := func(g *dataflow.Graph, p dataflow.Value) (dataflow.Value, dataflow.Value) {
		return op.DeviceApply(g, p, sigma), dataflow.Value{}
	}
	var lowerNS, compileNS float64
	for b.Loop() {
		g := cgGraph(128*128, apply, nil, DefaultUnroll, false)
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
