package selftest

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// TestSelftestSimulatorShowsTheModeledCliffs runs the short selftest on
// both simulator variants, round-trips the report through its JSON and
// checks that the simulator shows every cliff and rule of its model
// (docs/ENGINE.md §4, §7) with the exact figures the model states: a
// matmul or conv output above 32752 is Inf, a width-offset slice
// saturates |x| > 4094, an fp16 running sum of ones stalls at 2048,
// concat takes two inputs, a program binds one input surface, and the
// narrow variant flushes subnormals.
func TestSelftestSimulatorShowsTheModeledCliffs(t *testing.T) {
	for _, tc := range []struct {
		device string
		narrow bool
	}{
		{"sim", false},
		{"sim-narrow", true},
	} {
		t.Run(tc.device, func(t *testing.T) {
			dev, err := shim.Open(tc.device)
			require.NoError(t, err)
			defer dev.Close()
			start := time.Now()
			report := Run(dev, Options{Short: true})
			t.Logf("short selftest on %s took %v", tc.device, time.Since(start))
			var text strings.Builder
			require.NoError(t, report.WriteText(&text))
			out := text.String()
			require.Contains(t, out, "SIMULATED")

			raw, merr := json.MarshalIndent(report, "", "  ")
			require.NoError(t, merr)
			var generic map[string]any
			require.NoError(t, json.Unmarshal(raw, &generic), "the report is valid JSON")
			var rep Report
			require.NoError(t, json.Unmarshal(raw, &rep))
			require.Equal(t, Schema, rep.Schema)
			require.True(t, rep.Simulated)
			require.True(t, rep.Short)
			require.Equal(t, tc.device, rep.Device.Name)
			require.False(t, rep.Device.Hardware)
			require.NotEmpty(t, rep.Host.Chip)
			require.NotEmpty(t, rep.Conformance)
			_, terr := time.Parse(time.RFC3339, rep.Time)
			require.NoError(t, terr)

			probes := map[string]Probe{}
			for _, p := range rep.Probes {
				probes[p.Name] = p
			}
			get := func(name string) Probe {
				p, ok := probes[name]
				require.True(t, ok, "probe %s missing", name)
				return p
			}
			// Every probe agrees with the model: nothing departs.
			require.Empty(t, report.Departures(), "selftest on %s", tc.device)
			for _, p := range rep.Probes {
				require.Contains(t, []string{VerdictModeled, VerdictNA}, p.Verdict, "%s: expected %q, measured %q %s", p.Name, p.Expected, p.Measured, p.Error)
			}

			// Saturation: Inf exactly when the true output K·v exceeds
			// 32752; finite outputs of 32 copies of an fp16 v are exact
			// under the wide model (11-bit v times 2⁵ fits fp16).
			for _, name := range []string{"matmul-saturation", "conv-saturation"} {
				p := get(name)
				require.Equal(t, 32752.0, p.Values["K32_last_finite"], name)
				require.Equal(t, 32768.0, p.Values["K32_first_inf"], name)
				for _, pt := range p.Points {
					if float64(pt.In) > 32752 {
						require.True(t, math.IsInf(float64(pt.Got), 1), "%s %s: got %g", name, pt.Label, pt.Got)
					} else {
						require.False(t, math.IsInf(float64(pt.Got), 0), "%s %s", name, pt.Label)
						if !tc.narrow {
							require.Equal(t, pt.In, pt.Got, "%s %s", name, pt.Label)
						}
					}
				}
			}

			// Width-offset slice: exact at offset 0; at offset 32 every
			// |x| > 4094 is ±Inf with the sign of x.
			clamp := get("width-slice-clamp")
			require.Equal(t, 4096.0, clamp.Values["offset32_first_inf"])
			require.Equal(t, "NaN", clamp.Values["offset0_first_inf"], "no Inf at offset 0")
			for _, pt := range clamp.Points {
				in, got := float64(pt.In), float64(pt.Got)
				if strings.HasPrefix(pt.Label, "offset 32") && math.Abs(in) > 4094 {
					require.Equal(t, math.Copysign(math.Inf(1), in), got, pt.Label)
				} else {
					require.Equal(t, in, got, pt.Label)
				}
			}

			// reduce_sum's fp16 running sum of ones: 2048 + 1 rounds back
			// to 2048 (ties to even), so exactness ends at 2048 and 4096
			// ones sum to 2048.
			rs := get("reduce-sum-integers")
			require.Equal(t, 2048.0, rs.Values["last_exact"])
			require.Equal(t, 2048.0, rs.Values["sum_of_4096"])

			// The lowering's matmul with ones sums in float32 (exact to
			// 2²⁴) under the wide model; the narrow one stalls like
			// reduce_sum.
			dot := get("ones-dot")
			if tc.narrow {
				require.Equal(t, 2048.0, dot.Values["last_exact"])
			} else {
				require.Equal(t, 4096.0, dot.Values["last_exact"])
			}

			// Subnormals: 2⁻²⁰ and friends survive under wide, are flushed
			// to zero under narrow.
			sub := get("subnormal-flush")
			if tc.narrow {
				require.Equal(t, 4.0, sub.Values["flushed"])
			} else {
				require.Equal(t, 4.0, sub.Values["kept"])
			}

			// Transcendentals: a float32 result rounded to fp16 errs by at
			// most u(1+2⁻¹²) relative, u = 2⁻¹¹; the narrow model adds a
			// relative error of up to 2⁻¹⁰ first: (1+2⁻¹⁰)(1+u(1+2⁻¹²))−1.
			// On a 256-point grid the worst case is at least u/4 (a grid
			// this dense cannot all round nearly exactly), and under narrow
			// it exceeds u (the added error is not zero).
			bound := fp16.UnitRoundoff * (1 + 0x1p-12)
			if tc.narrow {
				bound = (1+0x1p-10)*(1+bound) - 1
			}
			for _, f := range []string{"sqrt", "exp", "pow", "gelu"} {
				p := get(f + "-accuracy")
				e, ok := p.Values["max_rel_err"].(float64)
				require.True(t, ok, "%s: %v", f, p.Values)
				require.LessOrEqual(t, e, bound, f)
				require.Greater(t, e, fp16.UnitRoundoff/4, f)
				if tc.narrow {
					require.Greater(t, e, fp16.UnitRoundoff, f)
				}
			}

			// Concat takes exactly two inputs; wider ones are refused.
			cat := get("concat-arity")
			require.Equal(t, "compiles, correct", cat.Values["concat2"])
			require.Equal(t, "refused", cat.Values["concat3"])
			require.Equal(t, "refused", cat.Values["concat16"])

			// One packed input surface runs; a surface per input is refused.
			io := get("io-surfaces")
			require.Equal(t, 1.0, io.Params["packed_surfaces"])
			require.Equal(t, 2.0, io.Params["separate_surfaces"])
			require.Equal(t, "runs, correct", io.Values["packed"])
			require.Equal(t, "refused", io.Values["separate"])

			// The simulator enforces its target's compile budget: the
			// count ends at 100 with ErrBudget.
			cb := get("compile-budget")
			require.Equal(t, VerdictModeled, cb.Verdict, cb.Measured)
			require.Equal(t, 100.0, cb.Values["total"])

			// The reported per-chip cliffs: the model has none of them, so
			// every width, size and K is correct, the partial sums exact,
			// products rounded to fp16 (subnormal ones kept: the narrow
			// model flushes results, not products), ties to even.
			for _, k := range []string{"K=32", "K=40", "K=48", "K=64"} {
				require.Equal(t, "correct", get("matmul-inner-dim-32").Values[k], k)
			}
			for _, w := range []string{"w=16", "w=24", "w=40", "w=64", "w=96"} {
				require.Equal(t, "correct", get("surface-width-16").Values[w], w)
			}
			size := get("surface-minimum-size")
			require.Len(t, size.Points, 5)
			for _, pt := range size.Points {
				require.True(t, pt.OK, pt.Label)
			}
			ps := get("partial-sum-2^15")
			require.Equal(t, "exact", ps.Values["peak 2^14"])
			require.Equal(t, "exact", ps.Values["peak 2^15"])
			pr := get("product-rounding")
			require.Equal(t, "products rounded to fp16", pr.Values["rounding"])
			require.Equal(t, 2.0, float64(pr.Points[0].Got), "512·(fp16(a·b) − 1) = 512·2⁻⁸")
			require.Equal(t, "subnormal products kept", pr.Values["subnormal"])
			require.Equal(t, 0x1p-6, float64(pr.Points[1].Got), "1024·2⁻¹⁶")
			tie := get("tie-rounding")
			require.Equal(t, "ties to even", tie.Values["behaviour"])
			require.Equal(t, []float64{2048, 2052, -2048}, []float64{float64(tie.Points[0].Got), float64(tie.Points[1].Got), float64(tie.Points[2].Got)})

			// Every program is priced on the simulator's family (sim, as
			// ane-m1: at least M1's 220 µs floor); there is no engine time.
			require.Contains(t, generic["host"], "family")
			require.Equal(t, "sim", rep.Device.CostFamily)
			var timed int
			for _, p := range rep.Probes {
				for _, tm := range p.Timings {
					timed++
					require.Equal(t, "sim", tm.Family, p.Name)
					require.GreaterOrEqual(t, tm.ModeledNS, int64(220_000), p.Name)
					require.Zero(t, tm.MeasuredNS, p.Name)
					require.Zero(t, tm.Reported, p.Name)
				}
			}
			require.Greater(t, timed, 20)
			require.Contains(t, out, "simulated: no engine time")
		})
	}
}

// TestSelftestEveryDeviceAsModeled runs the short selftest on the default
// simulators and on each family variant (sim-m1, sim-m3, sim-m5, whose
// targets refuse surfaces below MinSurfaceBytes and change matmul
// results): every probe agrees with the model of the device's target, and
// the per-family rules show where the target's fields say they do.
func TestSelftestEveryDeviceAsModeled(t *testing.T) {
	for _, name := range []string{"sim", "sim-narrow", "sim-m1", "sim-m3", "sim-m5"} {
		t.Run(name, func(t *testing.T) {
			dev, err := shim.Open(name)
			require.NoError(t, err)
			defer dev.Close()
			tg := dev.Info().Target
			start := time.Now()
			rep := Run(dev, Options{Short: true})
			t.Logf("short selftest on %s took %v", name, time.Since(start))
			probes := map[string]Probe{}
			for _, p := range rep.Probes {
				require.Contains(t, []string{VerdictModeled, VerdictNA}, p.Verdict, "%s on %s: expected %q, measured %q %s", p.Name, name, p.Expected, p.Measured, p.Error)
				probes[p.Name] = p
			}
			require.Empty(t, rep.Departures())
			require.Equal(t, 20, len(probes), "probes")

			// M1's inner-dimension multiple: zeros for K = 40 and 48.
			inner := probes["matmul-inner-dim-32"]
			for _, k := range []int{32, 40, 48, 64} {
				want := "correct"
				if tg.InnerMultiple > 1 && k%tg.InnerMultiple != 0 {
					want = "zeros"
				}
				require.Equal(t, want, inner.Values[fmt.Sprintf("K=%d", k)], "K=%d", k)
			}
			if name == "sim-m1" {
				require.Equal(t, "zeros", inner.Values["K=40"])
			}
			// The minimum surface: refused below it, correct from it.
			size := probes["surface-minimum-size"]
			require.Len(t, size.Points, 5)
			refused := 0
			for _, pt := range size.Points {
				below := tg.MinSurfaceBytes > 0 && int(pt.In) < tg.MinSurfaceBytes
				require.Equal(t, below, strings.HasSuffix(pt.Label, ": refused"), pt.Label)
				if below {
					refused++
				}
			}
			if tg.MinSurfaceBytes == 49152 {
				require.Equal(t, 2, refused, "16 and 32 KB")
			}
			// M3's partial sums reaching 2¹⁵: zero; elsewhere exact.
			ps := probes["partial-sum-2^15"]
			require.Equal(t, "exact", ps.Values["peak 2^14"])
			if tg.PartialSumZero {
				require.Equal(t, "zero", ps.Values["peak 2^15"])
				require.Contains(t, probes["matmul-saturation"].Expected, "zero from 32768")
			} else {
				require.Equal(t, "exact", ps.Values["peak 2^15"])
			}
			pr := probes["product-rounding"]
			if tg.FlushSubnormalProducts {
				require.Equal(t, "subnormal products flushed", pr.Values["subnormal"])
			} else {
				require.Equal(t, "subnormal products kept", pr.Values["subnormal"])
			}
			// Ties break as the target's Rounding says.
			require.Equal(t, tg.Rounding.String(), probes["tie-rounding"].Values["behaviour"])
			// The width-offset slice clamps where the target has the clamp.
			clamp := probes["width-slice-clamp"]
			off := tg.RowLength(1)
			inf, ok := clamp.Values[fmt.Sprintf("offset%d_first_inf", off)].(Num)
			require.True(t, ok, "%v", clamp.Values)
			if tg.WidthSliceClamp {
				require.Equal(t, 4096.0, float64(inf))
			} else {
				require.True(t, math.IsNaN(float64(inf)), "no clamp: %g", inf)
			}
			// The compile budget is counted on every simulator, and given
			// back: the device compiles after Run.
			cb := probes["compile-budget"]
			require.Equal(t, VerdictModeled, cb.Verdict, cb.Measured)
			require.Equal(t, tg.CompileBudget, cb.Values["total"])
			g := dataflow.New()
			g.Output("y", g.Add(g.Input("x", dataflow.Shape{1, 8}), g.Input("z", dataflow.Shape{1, 8})))
			_, err = shim.Build(dev, g)
			require.NoError(t, err, "the device compiles after Run")
		})
	}
}

// timedDevice is the simulator with an engine clock: each executable
// reports a fixed hardware time after a run, as the ANE device does.
type timedDevice struct{ shim.Device }

type timedExe struct {
	shim.Executable
	ran bool
}

func (d timedDevice) Compile(p *lower.Program) (shim.Executable, error) {
	exe, err := d.Device.Compile(p)
	if err != nil {
		return nil, err
	}
	return &timedExe{Executable: exe}, nil
}

func (x *timedExe) Run(in [][]float32) ([][]float32, error) {
	x.ran = true
	return x.Executable.Run(in)
}

func (x *timedExe) HardwareTime() (time.Duration, bool) { return 123 * time.Microsecond, x.ran }

// TestSelftestReadsTheEngineTime: behind the cache, an executable that
// reports its engine time has it read after every run and set beside the
// modeled time, and the table compares the two.
func TestSelftestReadsTheEngineTime(t *testing.T) {
	sim, err := shim.Open("sim")
	require.NoError(t, err)
	defer sim.Close()
	dev := shim.NewCache(timedDevice{sim.(interface{ Backend() shim.Device }).Backend()})
	e := &env{dev: dev, t: dev.Info().Target, family: "ane-m5pro"}
	p := e.tieRounding()
	require.Equal(t, VerdictModeled, p.Verdict)
	require.Len(t, e.timings, 1)
	tm := *e.timings[0]
	require.Equal(t, "ane-m5pro", tm.Family)
	require.Equal(t, int64(123_000), tm.MeasuredNS)
	require.Equal(t, 3, tm.Runs)
	require.Equal(t, 3, tm.Reported)
	require.GreaterOrEqual(t, tm.ModeledNS, int64(110_000), "at least M5's floor")

	rep := &Report{Probes: []Probe{p}}
	attachTimings(rep.Probes, e.timings)
	var b strings.Builder
	require.NoError(t, printTimings(&b, rep))
	require.Contains(t, b.String(), "against the engine's own time, 1 of 1 programs")
	require.Contains(t, b.String(), "123µs")
}

func TestSelftestJSONNumbers(t *testing.T) {
	for _, x := range []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0, -0x1p-24, 65504} {
		b, err := json.Marshal(Num(x))
		require.NoError(t, err)
		var back Num
		require.NoError(t, json.Unmarshal(b, &back))
		require.True(t, same(x, float64(back)), "%g → %s → %g", x, b, back)
	}
	var bad Num
	require.Error(t, json.Unmarshal([]byte(`"Infinity"`), &bad))
}

func TestSelftestGuardedProbeSurvivesAPanic(t *testing.T) {
	ps := guarded("boom", func() []Probe { panic("device misbehaved") })
	require.Len(t, ps, 1)
	require.Equal(t, "boom", ps[0].Name)
	require.Equal(t, VerdictError, ps[0].Verdict)
	require.Contains(t, ps[0].Error, "device misbehaved")
}

// TestModelDotNarrowCliff: the narrow model's K-term dot applies the
// cliff to its fp16 running sum, as the simulator does, not to the last
// partial sum before its rounding. 6 × 5460 by hand, rounding each
// partial sum to fp16 (ties to even): 5460, 10920, 16380 → 16384 (a tie
// at spacing 8), 21844 → 21840, 27300 → 27296, 32756 → 32752, which is
// not above the cliff: finite 32752 (the model said +Inf). The wide
// model's float32 sum is the exact 32760, above it: +Inf. The device
// (each simulator, through a lowered matmul) agrees.
func TestModelDotNarrowCliff(t *testing.T) {
	const v, k = 5460, 6
	for _, c := range []struct {
		device string
		want   float64
	}{{"sim-narrow", 1<<15 - 16}, {"sim", math.Inf(1)}} { // 2¹⁵ − 16: the fp16 value below 2¹⁵
		dev, err := shim.Open(c.device)
		require.NoError(t, err)
		defer dev.Close()
		e := &env{dev: dev, t: dev.Info().Target}
		require.Equal(t, c.want, e.modelDot(v, k), c.device)

		n := e.t.RowLength(1)
		g := dataflow.New()
		g.Output("z", g.MatMul(g.Input("x", dataflow.Shape{1, k}), g.Input("y", dataflow.Shape{k, n}), false, false))
		prog, err := lower.Lower(g, e.t)
		require.NoError(t, err)
		cp := e.compile(prog)
		require.NoError(t, cp.err)
		out, err := cp.run([][]float32{fill(k, v), fill(k*n, 1)}, n)
		cp.close()
		require.NoError(t, err)
		require.Equal(t, c.want, float64(out[0][0]), c.device)
	}
}
