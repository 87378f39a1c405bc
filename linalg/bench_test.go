package linalg

import (
	"testing"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
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
	b.ReportMetric(d.modeled(b, "ane-m1")/ops*1e3, "M1-ms/op")
	b.ReportMetric(d.modeled(b, "ane-m5")/ops*1e3, "M5-ms/op")
}

func benchMatMul(b *testing.B, n int, mode precision.Mode) {
	rng := newRNG(uint64(n))
	x, y := randn(rng, n, n), randn(rng, n, n)
	dev := &programDevice{Device: openDevice(b, "sim"), runs: map[string]int{}, prog: map[string]*lower.Program{}}
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
	dev := &programDevice{Device: openDevice(b, "sim"), runs: map[string]int{}, prog: map[string]*lower.Program{}}
	var st Stats
	for b.Loop() {
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

func BenchmarkMatMulFP16256(b *testing.B)         { benchMatMul(b, 256, precision.FP16) }
func BenchmarkMatMulFP16512(b *testing.B)         { benchMatMul(b, 512, precision.FP16) }
func BenchmarkMatMulFP161024(b *testing.B)        { benchMatMul(b, 1024, precision.FP16) }
func BenchmarkMatMulFP162048(b *testing.B)        { benchMatMul(b, 2048, precision.FP16) }
func BenchmarkMatMulCompensated256(b *testing.B)  { benchMatMul(b, 256, precision.Compensated) }
func BenchmarkMatMulCompensated512(b *testing.B)  { benchMatMul(b, 512, precision.Compensated) }
func BenchmarkMatMulCompensated1024(b *testing.B) { benchMatMul(b, 1024, precision.Compensated) }
func BenchmarkMatMulFloat64256(b *testing.B)      { benchMatMul(b, 256, precision.Float64) }
func BenchmarkGonumMul256(b *testing.B)           { benchGonumMul(b, 256) }
func BenchmarkGonumMul512(b *testing.B)           { benchGonumMul(b, 512) }
func BenchmarkGonumMul1024(b *testing.B)          { benchGonumMul(b, 1024) }
func BenchmarkGonumMul2048(b *testing.B)          { benchGonumMul(b, 2048) }
func BenchmarkSolve256(b *testing.B)              { benchSolve(b, 256) }
func BenchmarkSolve512(b *testing.B)              { benchSolve(b, 512) }
func BenchmarkSolve1024(b *testing.B)             { benchSolve(b, 1024) }
func BenchmarkGonumSolve256(b *testing.B)         { benchGonumSolve(b, 256) }
func BenchmarkGonumSolve512(b *testing.B)         { benchGonumSolve(b, 512) }
func BenchmarkGonumSolve1024(b *testing.B)        { benchGonumSolve(b, 1024) }
