package fft

import (
	"fmt"
	"testing"
	"time"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/anemone-go/anemone/internal/benchclaim"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/shimtest"
)

// benchForward runs batch transforms of n points per op on the simulator
// and reports what one dispatch costs: the program's size (nodes the cost
// model charges, weight bytes), the time to build and compile it, and the
// engine time lower.Estimate models for an M1 and an M5. The simulator's
// own time (ns/op) says nothing about the engine's.
func benchForward(b *testing.B, n, batch int, mode precision.Mode) {
	benchForwardOn(b, nil, n, batch, mode)
}

// benchForwardOn is benchForward on the simulator wrapped by wrap (none
// when nil).
func benchForwardOn(b *testing.B, wrap func(shim.Device) shim.Device, n, batch int, mode precision.Mode) {
	dev, err := shim.Open("sim")
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	run := dev
	if wrap != nil {
		run = wrap(dev)
	}
	t0 := time.Now()
	p, err := NewPlan(n, &Settings{Device: run, Precision: mode})
	if err != nil {
		b.Fatal(err)
	}
	pr, err := p.program(batch)
	if err != nil {
		b.Fatal(err)
	}
	compile := time.Since(t0)
	xs := make([][]complex128, batch)
	for k := range xs {
		xs[k] = signals[0].gen(n, newRNG(uint64(k), uint64(n)))
	}
	if _, err := p.ForwardMany(xs); err != nil { // the call charged the compile
		b.Fatal(err)
	}
	first := p.Stats()
	// One signal goes through ForwardTo into the same result every call,
	// as the gonum baseline reuses its dst; a batch allocates its results.
	dst := make([]complex128, n)
	for b.Loop() {
		var err error
		if batch == 1 {
			_, err = p.ForwardTo(dst, xs[0])
		} else {
			_, err = p.ForwardMany(xs)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	// What a user waits for per call, the program compiled: the modeled
	// engine time (ane-m1 for the simulator's programs) and the measured
	// host time outside the device's runs; the first call's modeled
	// compile beside it. The simulator's own time, in ns/op, is none of
	// these.
	all := p.Stats()
	calls := float64(all.Dispatches - first.Dispatches)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / calls }
	b.ReportMetric(ms(all.ModeledTime-first.ModeledTime), "modeled-engine-ms")
	b.ReportMetric(first.ModeledCompile.Seconds()*1e3, "modeled-compile-ms")
	b.ReportMetric(ms(all.Host-first.Host), "host-ms")
	b.ReportMetric(ms(all.ModeledTotal-first.ModeledTotal), "modeled-total-ms")
	prog := pr.exe.Program()
	b.ReportMetric(float64(compile.Milliseconds()), "compile-ms")
	b.ReportMetric(float64(len(prog.Blob)), "weight-bytes")
	for _, fam := range []string{"ane-m1", "ane-m5"} {
		c, err := lower.Estimate(prog, fam)
		if err != nil {
			b.Fatal(err)
		}
		if fam == "ane-m1" {
			b.ReportMetric(float64(c.Nodes), "ops")
		}
		b.ReportMetric(float64(c.Time.Microseconds()), "modeled-µs-"+fam[4:])
	}
}

func BenchmarkForward1024(b *testing.B)            { benchForward(b, 1024, 1, precision.FP16) }
func BenchmarkForward16384(b *testing.B)           { benchForward(b, 16384, 1, precision.FP16) }
func BenchmarkForward65536(b *testing.B)           { benchForward(b, 65536, 1, precision.FP16) }
func BenchmarkForward262144(b *testing.B)          { benchForward(b, 1<<18, 1, precision.FP16) }
func BenchmarkForwardMany64x1024(b *testing.B)     { benchForward(b, 1024, 64, precision.FP16) }
func BenchmarkCompensatedForward1024(b *testing.B) { benchForward(b, 1024, 1, precision.Compensated) }
func BenchmarkCompensatedForward16384(b *testing.B) {
	benchForward(b, 16384, 1, precision.Compensated)
}
func BenchmarkCompensatedForward65536(b *testing.B) {
	benchForward(b, 65536, 1, precision.Compensated)
}
func BenchmarkCompensatedForwardMany64x1024(b *testing.B) {
	benchForward(b, 1024, 64, precision.Compensated)
}

// BenchmarkForwardHost65536 is Forward65536 with the device replaying the
// program's recorded outputs for the repeated input (shimtest.Replay): no
// simulation runs between calls and evicts the host's caches, so its
// host-ms is the host's part warm. Forward65536's host-ms, measured
// between simulator runs, is the figure the README uses.
func BenchmarkForwardHost65536(b *testing.B) {
	benchForwardOn(b, shimtest.Replay, 65536, 1, precision.FP16)
}

// The float64 baselines: gonum's FFT (dsp/fourier, FFTPACK's mixed radix)
// on the host, the same signals.
func benchGonum(b *testing.B, n, batch int) {
	f := fourier.NewCmplxFFT(n)
	xs := make([][]complex128, batch)
	for k := range xs {
		xs[k] = signals[0].gen(n, newRNG(uint64(k), uint64(n)))
	}
	dst := make([]complex128, n)
	for b.Loop() {
		for _, x := range xs {
			f.Coefficients(dst, x)
		}
	}
}

func BenchmarkGonumFFT1024(b *testing.B)        { benchGonum(b, 1024, 1) }
func BenchmarkGonumFFT16384(b *testing.B)       { benchGonum(b, 16384, 1) }
func BenchmarkGonumFFT65536(b *testing.B)       { benchGonum(b, 65536, 1) }
func BenchmarkGonumFFT262144(b *testing.B)      { benchGonum(b, 1<<18, 1) }
func BenchmarkGonumFFTMany64x1024(b *testing.B) { benchGonum(b, 1024, 64) }

// BenchmarkEndToEnd is the FFT rows of docs/RESULTS.md's end-to-end table
// (internal/benchclaim): one FP16 transform into a reused result on the
// simulator, its modeled M1 engine time and measured host time, alternated
// with gonum's transform of the same signal; it fails where the table's
// row disagrees.
func BenchmarkEndToEnd(b *testing.B) {
	for _, n := range []int{1024, 65536} {
		b.Run(fmt.Sprintf("Forward%d", n), func(b *testing.B) {
			dev, err := shim.Open("sim")
			if err != nil {
				b.Fatal(err)
			}
			defer dev.Close()
			p, err := NewPlan(n, &Settings{Device: dev})
			if err != nil {
				b.Fatal(err)
			}
			x := signals[0].gen(n, newRNG(0, uint64(n)))
			dst, ref := make([]complex128, n), make([]complex128, n)
			if _, err := p.ForwardTo(dst, x); err != nil { // compiles
				b.Fatal(err)
			}
			compile := p.Stats().ModeledCompile
			f := fourier.NewCmplxFFT(n)
			benchclaim.Pair(b, fmt.Sprintf("FFT %d, FP16", n), "gonum", func() benchclaim.Run {
				before := p.Stats()
				if _, err := p.ForwardTo(dst, x); err != nil {
					b.Fatal(err)
				}
				after := p.Stats()
				return benchclaim.Run{Dispatches: after.Dispatches - before.Dispatches, Engine: after.ModeledTime - before.ModeledTime,
					Host: after.Host - before.Host, Compile: compile}
			}, func() { f.Coefficients(ref, x) })
		})
	}
}
