package selftest

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn/nntest"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/shimtest"
)

// Options tune Run.
type Options struct {
	// Short is a quick run: fewer sweep points, and no compile-budget
	// count on hardware (the simulator's budget is counted regardless).
	Short bool
	// Note is put before the report's own note: the caller's word on how
	// the device was chosen, for instance.
	Note string
}

// Run runs the conformance suite and every probe on dev and reports what
// the device did beside what the simulator's model of its target
// (dev.Info().Target) predicts. A probe that fails or panics is a row with
// VerdictError; the others still run. Run does not close dev. Its
// programs count against dev's compile budget as any compile does (some
// 90 of the 100 in a run), except the compile-budget probe's on the simulator,
// which it gives back.
func Run(dev shim.Device, o Options) *Report {
	short := o.Short
	info := dev.Info()
	host := readHostInfo()
	host.Family = lower.EstimateFamily(host.Chip)
	rep := &Report{
		Schema:    Schema,
		Time:      time.Now().UTC().Format(time.RFC3339),
		Anemone:   readBuildStamp(),
		Host:      host,
		Device:    DeviceInfo{Name: info.Name, Hardware: info.Hardware, Target: info.Target.Name, Numerics: info.Numerics},
		Simulated: !info.Hardware,
		Short:     short,
	}
	if rep.Simulated {
		rep.Note = "Simulated: the measured column is the simulator's own model, not hardware."
	}
	e := &env{dev: dev, t: info.Target, short: short, family: info.Target.Name}
	if info.Hardware && host.Family != "" {
		e.family = host.Family // the chip's own family, where the model has one
	}
	rep.Device.CostFamily = e.family
	if o.Note != "" {
		rep.Note = strings.TrimSpace(o.Note + " " + rep.Note)
	}

	rep.Conformance = append(shimtest.Check(dev), nntest.CheckLayers(dev)...)
	rep.Probes = append(rep.Probes, conformanceProbe(rep.Conformance))
	for _, f := range []struct {
		name string
		run  func() []Probe
	}{
		{"matmul-saturation", one(func() Probe { return e.saturation(false) })},
		{"conv-saturation", one(func() Probe { return e.saturation(true) })},
		{"width-slice-clamp", one(e.sliceClamp)},
		{"reduce-sum-integers", one(e.reduceSum)},
		{"ones-dot", one(e.onesDot)},
		{"subnormal-flush", one(e.subnormals)},
		{"transcendentals", e.transcendentals},
		{"concat-arity", one(e.concatArity)},
		{"io-surfaces", one(e.surfaces)},
		{"matmul-inner-dim-32", one(e.innerDim)},
		{"surface-width-16", one(e.surfaceWidth)},
		{"surface-minimum-size", one(e.surfaceSize)},
		{"partial-sum-2^15", one(e.partialSum)},
		{"product-rounding", one(e.productRounding)},
		{"tie-rounding", one(e.tieRounding)},
		{"compile-budget", one(e.compileBudget)}, // last: it may exhaust the compiler
	} {
		e.timings = nil
		ps := guarded(f.name, f.run)
		attachTimings(ps, e.timings)
		rep.Probes = append(rep.Probes, ps...)
	}
	return rep
}

// attachTimings gives each probe its programs' timings: one each when a
// run produced as many probes as programs, else all to the first.
func attachTimings(ps []Probe, ts []*Timing) {
	if len(ps) == 0 || len(ts) == 0 {
		return
	}
	for i, t := range ts {
		j := 0
		if len(ps) == len(ts) {
			j = i
		}
		ps[j].Timings = append(ps[j].Timings, *t)
	}
}

func one(f func() Probe) func() []Probe { return func() []Probe { return []Probe{f()} } }

// guarded runs a probe, turning a panic (a device misbehaving in a way no
// probe foresaw) into an ERROR row so that the rest of the report survives.
func guarded(name string, f func() []Probe) (ps []Probe) {
	defer func() {
		if r := recover(); r != nil {
			ps = []Probe{fail(Probe{Name: name}, fmt.Errorf("selftest: probe %s panicked: %v", name, r))}
		}
	}()
	return f()
}

func readBuildStamp() BuildStamp {
	s := BuildStamp{Version: "(unknown)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return s
	}
	s.Version = bi.Main.Version
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			s.Commit = kv.Value
		case "vcs.modified":
			s.Modified = kv.Value == "true"
		}
	}
	return s
}

// env carries what every probe needs.
type env struct {
	dev shim.Device
	// t is the device's target (on hardware the chip family's): every
	// probe's expected outcome is computed from its fields.
	t     lower.Target
	short bool
	// family prices the programs (lower.Estimate): the chip's own on
	// hardware, the device's target on the simulator.
	family  string
	timings []*Timing // the current probe's programs
}

// cliff is the matmul/conv output magnitude above which the result becomes
// ±Inf (docs/ENGINE.md §7): half of fp16's largest finite value.
const cliff = engine.Cliff

// widthClamp is the magnitude a width-offset slice saturates above on
// targets with Target.WidthSliceClamp (docs/ENGINE.md §7).
const widthClamp = engine.SliceClamp

func conformanceProbe(rs []shimtest.Result) Probe {
	var failed []string
	for _, r := range rs {
		if !r.Pass {
			name := r.Op
			if r.Case != "" {
				name += "/" + r.Case
			}
			failed = append(failed, name)
		}
	}
	p := Probe{
		Name:     "conformance",
		What:     "every registered op against the float64 evaluator, within its fp16 error bound (shimtest)",
		Expected: fmt.Sprintf("%d of %d cases pass", len(rs), len(rs)),
		Measured: fmt.Sprintf("%d of %d cases pass", len(rs)-len(failed), len(rs)),
		Values:   map[string]any{"cases": len(rs), "failed": failed},
		Verdict:  VerdictModeled,
	}
	if len(failed) > 0 {
		p.Verdict = VerdictDiffers
		p.Measured += " (failed: " + strings.Join(failed, ", ") + ")"
	}
	return p
}

// compiled is one compiled program, or the reason it did not compile.
type compiled struct {
	exe shim.Executable
	err error
	tm  *Timing // nil when the model cannot price the program
}

// build lowers g for the device's target and compiles it; a refusal at
// either step is in the result's err.
func (e *env) build(g *dataflow.Graph) compiled {
	prog, err := lower.Lower(g, e.t)
	if err != nil {
		return compiled{err: err}
	}
	return e.compile(prog)
}

func (e *env) compile(p *lower.Program) compiled {
	exe, err := e.dev.Compile(p)
	c := compiled{exe: exe, err: err}
	if err == nil {
		c.tm = e.model(p)
	}
	return c
}

// model prices p on the env's family and records it for the current
// probe; nil when the model cannot price it.
func (e *env) model(p *lower.Program) *Timing {
	cost, err := lower.Estimate(p, e.family)
	if err != nil {
		return nil
	}
	costliest := ""
	var most time.Duration = -1
	for _, n := range cost.PerNode {
		if n.Time > most {
			most, costliest = n.Time, n.Op
		}
	}
	desc := fmt.Sprintf("%d nodes", cost.Nodes)
	if costliest != "" {
		desc += ", mostly " + costliest
	}
	t := &Timing{Program: desc, Family: cost.Target, ModeledNS: int64(cost.Time)}
	e.timings = append(e.timings, t)
	return t
}

// hardwareTime is the engine's own time of exe's last run, where the
// backend reports it (the ANE device on darwin/arm64, past the cache).
func hardwareTime(exe shim.Executable) (time.Duration, bool) {
	if b, ok := exe.(interface{ Backend() shim.Executable }); ok {
		exe = b.Backend()
	}
	if h, ok := exe.(interface{ HardwareTime() (time.Duration, bool) }); ok {
		return h.HardwareTime()
	}
	return 0, false
}

// record adds a finished run to c's timing.
func (c compiled) record() {
	if c.tm == nil {
		return
	}
	c.tm.Runs++
	if d, ok := hardwareTime(c.exe); ok && d > 0 {
		c.tm.Reported++
		if c.tm.MeasuredNS == 0 || int64(d) < c.tm.MeasuredNS {
			c.tm.MeasuredNS = int64(d)
		}
	}
}

func (c compiled) close() {
	if c.exe != nil {
		_ = c.exe.Close()
	}
}

// run runs the program once. An overflow the device reports (an error
// wrapping shim.ErrRange) is a measurement, not a failure: values it did
// not return read as +Inf.
func (c compiled) run(inputs [][]float32, sizes ...int) ([][]float32, error) {
	out, err := c.exe.Run(inputs)
	if err == nil || errors.Is(err, shim.ErrRange) {
		c.record()
	}
	if err != nil && errors.Is(err, shim.ErrRange) {
		if out == nil {
			out = make([][]float32, len(sizes))
			for i, n := range sizes {
				out[i] = make([]float32, n)
				for j := range out[i] {
					out[i][j] = float32(math.Inf(1))
				}
			}
		}
		return out, nil
	}
	return out, err
}

// same reports whether got matches want: equal, or both NaN.
func same(want, got float64) bool {
	return want == got || math.IsNaN(want) && math.IsNaN(got)
}

func fill(n int, v float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(v)
	}
	return out
}

func fail(p Probe, err error) Probe {
	p.Error = err.Error()
	p.Verdict = VerdictError
	if p.Measured == "" {
		p.Measured = "error: " + firstLine(err.Error())
	}
	return p
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return s
}

// refusal summarizes a compile error for the table.
func refusal(err error) string {
	kind := "error"
	if errors.Is(err, shim.ErrUnsupported) {
		kind = "refused"
	}
	return kind + ": " + firstLine(err.Error())
}

// verdict is "as modeled" when every point agrees with the model.
func verdict(pts []Point) string {
	for _, pt := range pts {
		if !pt.OK {
			return VerdictDiffers
		}
	}
	return VerdictModeled
}

// saturation sweeps K-term dot products (a matmul of two inputs, or with
// conv a constant weight, which the lowering turns into a 1×1 conv) of
