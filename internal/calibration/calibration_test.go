package calibration

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
)

// figure is one published measurement: the range it was reported as (lo
// = hi for a single value), in unit, and where it comes from.
type figure struct {
	what   string
	source string // the project that measured it
	family string // the cost-model family of the chip it was measured on
	lo, hi float64
	unit   string // "ms", "µs", "TFLOP/s", "GB/s"
	// model computes the model's figure for the same program, in unit.
	model func(t *testing.T) float64
	// anchor: a constant of the model is this figure (or was fit to it),
	// so agreement is by construction, not a check.
	anchor bool
	// unmatched, when set, says why the model does not reproduce the
	// figure; the row is reported but left out of the goal.
	unmatched string
	// heavy: the program has ~100M weights and takes tens of seconds to
	// build; skipped with -short.
	heavy bool
}

// programs caches the lowered programs (the two large transformers take
// seconds to build).
var programs sync.Map

func program(t *testing.T, name, target string, build func() (*dataflow.Graph, error)) *lower.Program {
	t.Helper()
	key := name + "@" + target
	if p, ok := programs.Load(key); ok {
		return p.(*lower.Program)
	}
	g, err := build()
	require.NoError(t, err, name)
	p, err := Lower(g, target)
	require.NoError(t, err, name)
	programs.Store(key, p)
	return p
}

func estimate(t *testing.T, p *lower.Program, family string) lower.Cost {
	t.Helper()
	c, err := lower.Estimate(p, family)
	require.NoError(t, err)
	return c
}

// The targets a family's programs are lowered for: a larger chip runs its
// generation's programs.
var lowerFor = map[string]string{
	"ane-m1": "ane-m1", "ane-m1max": "ane-m1", "ane-m2": "ane-m2", "ane-m3": "ane-m3",
	"ane-m4": "ane-m4", "ane-m4max": "ane-m4", "ane-m5": "ane-m5", "ane-m5pro": "ane-m5",
}

// wholeMS prices a named program in milliseconds.
func wholeMS(name string, build func() (*dataflow.Graph, error), family string) func(t *testing.T) float64 {
	return func(t *testing.T) float64 {
		return ms(estimate(t, program(t, name, lowerFor[family], build), family).Time)
	}
}

// rate is a micro-benchmark's flops per modeled second, in TFLOP/s.
func rate(p *lower.Program, family string) func(t *testing.T) float64 {
	return func(t *testing.T) float64 {
		c := estimate(t, p, family)
		return float64(c.Flops) / c.Time.Seconds() / 1e12
	}
}

// streamed is a weight stream's weight bytes per modeled second, in GB/s.
func streamed(out, in int, family string) func(t *testing.T) float64 {
	p := WeightStream(out, in)
	return func(t *testing.T) float64 {
		return float64(2*out*in) / estimate(t, p, family).Time.Seconds() / 1e9
	}
}

// streamRate is ANEForge's streaming figure for Stream(rows, cols): its
// bytes (the input read and the output written, 2 bytes each) per modeled
// second, in GB/s.
func streamRate(rows, cols int, family string) func(t *testing.T) float64 {
	p := Stream(rows, cols)
	return func(t *testing.T) float64 {
		return float64(2*2*rows*cols) / estimate(t, p, family).Time.Seconds() / 1e9
	}
}

// msOf is a micro-benchmark's modeled time in milliseconds.
func msOf(p *lower.Program, family string) func(t *testing.T) float64 {
	return func(t *testing.T) float64 { return ms(estimate(t, p, family).Time) }
}

// floorUS is the modeled time of a program without nodes, in µs.
func floorUS(family string) func(t *testing.T) float64 {
	return func(t *testing.T) float64 { return float64(estimate(t, Empty(), family).Time) / 1e3 }
}

// compileMS is lower.EstimateCompile of a program, in milliseconds.
func compileMS(p func(t *testing.T) *lower.Program) func(t *testing.T) float64 {
	return func(t *testing.T) float64 { return ms(lower.EstimateCompile(p(t))) }
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// table lists every published engine figure of docs/ENGINE.md §6, §3 and
// §9 that a program can be built for, beside the model's.
func table() []figure {
	gemm2048, stack512 := GEMM(2048), Convs(8, 1, 1024, 1, 512)
	small := func(*testing.T) *lower.Program { return Convs(1, 1, 64, 8, 8) }
	gpt2 := func(t *testing.T) *lower.Program { return program(t, "gpt2", "ane-m4", GPT2Step) }
	f := []figure{
		// End-to-end inference, ANEForge's results on an M5 Pro.
		{what: "ResNet-18 forward", source: "ANEForge", family: "ane-m5pro", lo: 0.33, unit: "ms", model: wholeMS("resnet18", ResNet18, "ane-m5pro")},
		{what: "MiniLM (6×384, seq 128) forward", source: "ANEForge", family: "ane-m5pro", lo: 0.53, unit: "ms", model: wholeMS("minilm", MiniLM, "ane-m5pro")},
		{what: "ViT-B/16 forward", source: "ANEForge", family: "ane-m5pro", lo: 18.3, unit: "ms", model: wholeMS("vitb16", ViTB16, "ane-m5pro"), heavy: true,
			unmatched: "1.9 TFLOP/s: 35 GFLOP in 18.3 ms against 11 TFLOP/s for ResNet-18 on the same chip; even its 172 MB of weights at the slowest streaming rate ANEForge measured there (24 GB/s) take 7.2 ms, so the measured time holds something the published figures do not describe; ANEForge times one end-to-end Python call of its fused ViT (bench/device_compare_wattcomplete.py) and publishes no breakdown"},
		// One decode step of GPT-2 124M, Orion on an M4 Max.
		{what: "GPT-2 124M decode, per token", source: "Orion", family: "ane-m4max", lo: 5.78, unit: "ms", model: wholeMS("gpt2", GPT2Step, "ane-m4max"), heavy: true},

		// GEMM peaks, ANEForge's rooflines; the model's rate on a 2048³
		// product of two runtime operands.
		{what: "GEMM peak, M1", source: "ANEForge", family: "ane-m1", lo: 2.7, hi: 4.3, unit: "TFLOP/s", model: rate(gemm2048, "ane-m1")},
		{what: "GEMM peak, M1 Max", source: "ANEForge", family: "ane-m1max", lo: 4.6, unit: "TFLOP/s", model: rate(gemm2048, "ane-m1max"), anchor: true},
		{what: "GEMM peak, M2 Pro", source: "ANEForge", family: "ane-m2", lo: 3.4, unit: "TFLOP/s", model: rate(gemm2048, "ane-m2"),
			unmatched: "the figure is the largest point (N = 4096, constant weight) of a --perf sweep (bench/device_saturation_sweep.py, N = 512…4096), still rising there (0.46, 1.08, 2.30, 3.36 TFLOP/s), timed end to end; at 2048³ it measured 2.30, where ANEForge's own M2 Pro anchor (7.3 TFLOP/s with its ramp, fit to its 25-point GEMM grid and its 768³ point) is at peak; the model keeps the anchor"},
		{what: "GEMM peak, M4", source: "ANEForge", family: "ane-m4", lo: 5.44, unit: "TFLOP/s", model: rate(gemm2048, "ane-m4"), anchor: true},
		{what: "GEMM peak, M4 Max", source: "ANEForge", family: "ane-m4max", lo: 8.90, unit: "TFLOP/s", model: rate(gemm2048, "ane-m4max"), anchor: true},
		{what: "GEMM peak, M5", source: "ANEForge", family: "ane-m5", lo: 8.71, unit: "TFLOP/s", model: rate(gemm2048, "ane-m5")},
		{what: "GEMM peak, M5 Pro", source: "ANEForge", family: "ane-m5pro", lo: 10.0, unit: "TFLOP/s", model: rate(gemm2048, "ane-m5pro"), anchor: true},
		// One matmul at two sizes on an M4 (maderix/ANE): the drop past
		// the on-chip memory.
		{what: "single matmul 2048³, M4", source: "maderix/ANE", family: "ane-m4", lo: 5.7, unit: "TFLOP/s", model: rate(gemm2048, "ane-m4")},
		{what: "single matmul 4096³, M4", source: "maderix/ANE", family: "ane-m4", lo: 4.0, unit: "TFLOP/s", model: rate(GEMM(4096), "ane-m4")},

		// Conv-stack peaks (maderix/ANE); the model's rate on 8 stacked
		// 1×1 convs of 1024 channels over 512 positions (16 MB of
		// weights, on chip), and over 2048 positions for the M3 Pro's
		// second figure.
		{what: "conv stack, M3 Pro", source: "maderix/ANE", family: "ane-m3", lo: 9.98, unit: "TFLOP/s", model: rate(stack512, "ane-m3"), anchor: true},
		{what: "conv stack at spatial 2048, M3 Pro", source: "maderix/ANE", family: "ane-m3", lo: 16.8, unit: "TFLOP/s", model: rate(Convs(8, 1, 1024, 1, 2048), "ane-m3")},
		{what: "conv stack, M4 Pro", source: "maderix/ANE", family: "ane-m4max", lo: 12.6, unit: "TFLOP/s", model: rate(stack512, "ane-m4max"), anchor: true},
		{what: "conv stack, M5", source: "maderix/ANE", family: "ane-m5", lo: 12.2, hi: 12.4, unit: "TFLOP/s", model: rate(stack512, "ane-m5"), anchor: true},
		{what: "conv stack, M5 Max (priced as M5 Pro: no M5 Max family)", source: "maderix/ANE", family: "ane-m5pro", lo: 19.3, unit: "TFLOP/s", model: rate(stack512, "ane-m5pro")},

		// Bandwidth. The model's weight bytes per second on a 4096×4096
		// weight stream (32 MB, one position).
		{what: "engine bandwidth, base M5", source: "anemll-bench", family: "ane-m5", lo: 60, hi: 70, unit: "GB/s", model: streamed(4096, 4096, "ane-m5")},
		{what: "engine bandwidth, M4 Max", source: "anemll-bench", family: "ane-m4max", lo: 119, unit: "GB/s", model: streamed(4096, 4096, "ane-m4max"), anchor: true},
		{what: "1×4096×4096 product, effective, M1", source: "ANEForge", family: "ane-m1", lo: 42, unit: "GB/s", model: streamed(4096, 4096, "ane-m1"),
			unmatched: "M1 keeps ANEForge's fit (9 GB/s), the one that reproduces its five measured convs; ANEForge reports the same miss as a known caveat of that fit (docs/developer/optimizer-and-cost.md: predicted ~3700 µs, measured ~800 µs) and keeps the fit, jointly calibrated with the convs"},
	}
	// ANEForge's "streaming bandwidth as dispatched" (its roofline table's
	// bandwidth column): bench/device_bandwidth_roofline.py runs one relu
	// over [rows, 4096] fp16 and reports 2·rows·4096·2 bytes over the
	// fastest of 20 calls, the peak over its sizes — 256K…64M elements
	// (--perf-full) or 1M, 8M and 32M (--perf). The submissions' JSONs
	// (bench/results/rooflines/; for M5 Pro the committed
	// bench/results/device_bandwidth_roofline_results.json, 24.06 GB/s)
	// give the size the peak was reached at, the largest swept: 8192 rows
	// on M1 Max and M5, 16384 on M4, M4 Max and M5 Pro. The calls are timed from Python, and each copies the input
	// in and the output out on the host (aneforge/_runtime.py
	// Program.eval; ANEForge's docs/dispatch.md: "input memcpy + execute + output
	// memcpy"); the same JSONs read the ANE rail at 0.15–0.52 W during the
	// loop, against several watts in the GEMM sweep.
	for _, s := range []struct {
		chip, family string
		gbs          float64
		rows         int
	}{{"M1 Max", "ane-m1max", 7.4, 8192}, {"M4", "ane-m4", 7.7, 16384}, {"M4 Max", "ane-m4max", 23, 16384}, {"M5", "ane-m5", 20.2, 8192}, {"M5 Pro", "ane-m5pro", 24, 16384}} {
		f = append(f, figure{what: "streaming bandwidth as dispatched, " + s.chip, source: "ANEForge", family: s.family, lo: s.gbs, unit: "GB/s", model: streamRate(s.rows, 4096, s.family),
			unmatched: fmt.Sprintf("priced on the benchmark's program, one relu over [%d, 4096] fp16 (ANEForge's bench/device_bandwidth_roofline.py); its time is one end-to-end call that copies the input in and the output out on the host (aneforge/_runtime.py), with the ANE rail at 0.15–0.52 W during the loop, so it measures the host's copies; the model prices the engine alone, and agrees only where its own bandwidth is as low (M1's 9 GB/s fit)", s.rows)})
	}

	// ANEForge's five measured convs on M1 and on M5 (its analytic cost
	// model's tests).
	for _, c := range []struct {
		k, ch, s int
		m1, m5   float64 // ms
	}{{3, 256, 28, 0.507, 0.216}, {1, 512, 32, 0.444, 0.178}, {3, 512, 14, 0.832, 0.192}, {1, 1024, 16, 0.686, 0.248}, {1, 2048, 8, 1.047, 0.235}} {
		name := fmt.Sprintf("%d×%d conv C%d@%d", c.k, c.k, c.ch, c.s)
		f = append(f,
			figure{what: name + ", M1", source: "ANEForge", family: "ane-m1", lo: c.m1, unit: "ms", model: msOf(Convs(1, c.k, c.ch, c.s, c.s), "ane-m1"), anchor: true},
			figure{what: name + ", M5", source: "ANEForge", family: "ane-m5", lo: c.m5, unit: "ms", model: msOf(Convs(1, c.k, c.ch, c.s, c.s), "ane-m5")})
	}
	f = append(f,
		// ANEForge's M2 Pro 768³ GEMM with a constant operand (the point
		// its ramp was fit for); anemone lowers that to a 1×1 conv.
		figure{what: "768³ GEMM, constant operand, M2 Pro", source: "ANEForge", family: "ane-m2", lo: 0.596, unit: "ms", anchor: true, model: msOf(GEMMConst(768), "ane-m2")},
		// Dispatch floors.
		figure{what: "dispatch floor, M1", source: "ANEForge", family: "ane-m1", lo: 220, unit: "µs", model: floorUS("ane-m1"), anchor: true},
		figure{what: "dispatch floor, M5", source: "ANEForge", family: "ane-m5", lo: 110, unit: "µs", model: floorUS("ane-m5"), anchor: true},
		figure{what: "per-call time on Espresso's route (chip not named)", source: "ANEForge", family: "ane-m5", lo: 80, hi: 110, unit: "µs", model: floorUS("ane-m5")},
		figure{what: "dispatch floor ~70 µs (chip not named)", source: "ANEForge", family: "ane-m5pro", lo: 70, unit: "µs", model: floorUS("ane-m5pro"),
			unmatched: "no chip is named; the per-chip floors ANEForge fit (110 µs on M5, 220 µs on M1) are the model's"},
		// Compile and load (lower.EstimateCompile).
		figure{what: "compile + load, small program", source: "ANEForge", family: "ane-m5", lo: 38, unit: "ms", model: compileMS(small), anchor: true},
		figure{what: "compile, small program, warm", source: "ANEForge, maderix/ANE", family: "ane-m5", lo: 27, hi: 150, unit: "ms", model: compileMS(small)},
		figure{what: "recompile of a 124M-parameter model", source: "Orion", family: "ane-m4max", lo: 4200, unit: "ms", model: compileMS(gpt2), anchor: true, heavy: true},
		// ANEForge's e5rt reference (docs/e5rt-dispatch-reference.md): a
		// compile takes ~27 ms with aned's cache warm, up to ~750 ms cold;
		// lower.EstimateProcessStart is 750 ms less the warm small-program
		// compile, paid once per process.
		figure{what: "first compile of a process, cold", source: "ANEForge", family: "ane-m5", lo: 750, unit: "ms", anchor: true,
			model: func(t *testing.T) float64 { return compileMS(small)(t) + ms(lower.EstimateProcessStart()) }},
	)
	return f
}

// relErr is model/published − 1, against the nearer bound of a range
// (0 inside it).
func relErr(model, lo, hi float64) float64 {
	switch {
	case hi > lo && model >= lo && model <= hi:
		return 0
	case hi > lo && model > hi:
		return model/hi - 1
	}
	return model/lo - 1
}

// TestCalibration prices the program behind every published figure on the
// family it was measured on and checks the goal on the rows the model is
// meant to reproduce: median |error| ≤ 25% and none beyond 2× (model /
// measured within [1/2, 2]); the same median on the rows that are not
// anchors; and ANEForge's five M1 convs within ±17%. With -short the
// ViT-B/16 and GPT-2 programs are not built.
func TestCalibration(t *testing.T) {
	rows := table()
	type result struct {
		figure
		got, err float64
	}
	var res []result
	for _, f := range rows {
		if f.heavy && testing.Short() {
			t.Logf("-short: skipped %s (%s)", f.what, f.source)
			continue
		}
		got := f.model(t)
		res = append(res, result{f, got, relErr(got, f.lo, max(f.hi, f.lo))})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-58s %-22s %-10s %12s %10s %8s\n", "figure", "source", "family", "published", "modeled", "error")
	var all, held []float64
	for _, r := range res {
		pub := fmt.Sprintf("%g", r.lo)
		if r.hi > r.lo {
			pub = fmt.Sprintf("%g–%g", r.lo, r.hi)
		}
		note := ""
		switch {
		case r.unmatched != "":
			note = " (unmatched)"
		case r.anchor:
			note = " (anchor)"
		}
		fmt.Fprintf(&b, "%-58s %-22s %-10s %12s %10.4g %+7.0f%%%s %s\n", r.what, r.source, r.family, pub+" "+r.unit, r.got, 100*r.err, "", note)
		if r.unmatched != "" {
			continue
		}
		all = append(all, math.Abs(r.err))
		if !r.anchor {
			held = append(held, math.Abs(r.err))
		}
	}
	fmt.Fprintf(&b, "median |error|: %.1f%% over %d rows, %.1f%% over the %d that are not anchors; worst %.1f%%\n",
		100*median(all), len(all), 100*median(held), len(held), 100*maxOf(all))
	for _, r := range res {
		if r.unmatched != "" {
			fmt.Fprintf(&b, "unmatched: %s (%+.0f%%): %s\n", r.what, 100*r.err, r.unmatched)
		}
	}
	t.Log(b.String())

	for _, r := range res {
		if r.unmatched != "" {
			continue
		}
		require.GreaterOrEqual(t, r.got/r.lo, 0.5, r.what)
		require.LessOrEqual(t, r.got/max(r.hi, r.lo), 2.0, r.what)
		if strings.HasSuffix(r.what, ", M1") && strings.Contains(r.what, "conv C") {
			require.LessOrEqual(t, math.Abs(r.err), 0.17+1e-6, r.what)
		}
	}
	require.LessOrEqual(t, median(all), 0.25)
	require.LessOrEqual(t, median(held), 0.25)
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
