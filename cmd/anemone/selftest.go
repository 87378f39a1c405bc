package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/anemone-go/anemone/engine"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/nn/nntest"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/ane"
	"github.com/anemone-go/anemone/shim/shimtest"
)

// selftestSchema names the JSON layout of a selftest report (docs/HARDWARE.md).
const selftestSchema = "anemone-selftest/1"

// Verdicts of a probe.
const (
	verdictModeled = "as modeled"
	verdictDiffers = "DIFFERS"
	verdictNA      = "not applicable"
	verdictSkipped = "skipped"
	verdictError   = "ERROR"
)

// selftestReport is what `anemone selftest -json` writes.
type selftestReport struct {
	Schema      string            `json:"schema"`
	Time        string            `json:"time"`
	Anemone     buildStamp        `json:"anemone"`
	Host        hostInfo          `json:"host"`
	Device      deviceInfo        `json:"device"`
	Simulated   bool              `json:"simulated"`
	Note        string            `json:"note,omitempty"`
	Short       bool              `json:"short"`
	Probes      []probe           `json:"probes"`
	Conformance []shimtest.Result `json:"conformance"`
}

type buildStamp struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// hostInfo describes the machine; on darwin chip and OS version come from
// sysctl, elsewhere they are GOOS/GOARCH.
type hostInfo struct {
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	Chip      string `json:"chip"`
	OSVersion string `json:"os_version"`
	// MacOS is kern.osproductversion ("15.3.2"); empty off darwin.
	MacOS string `json:"macos,omitempty"`
	// Family is the cost-model family of the chip (lower.EstimateFamily:
	// "ane-m5pro"); empty for a chip that is not an Apple M chip.
	Family string `json:"family"`
}

type deviceInfo struct {
	Name     string `json:"name"`
	Hardware bool   `json:"hardware"`
	Target   string `json:"target"`
	Numerics string `json:"numerics"`
	// CostFamily is the family the probes' programs are priced on: the
	// chip's on hardware, the target's on the simulator.
	CostFamily string `json:"cost_family"`
}

// probe is one measurement: what the simulator's model of the device's
// target predicts, what the device did, and whether they agree.
type probe struct {
	Name     string         `json:"name"`
	What     string         `json:"what"`
	Params   map[string]any `json:"params,omitempty"`
	Expected string         `json:"expected"`
	Measured string         `json:"measured"`
	Verdict  string         `json:"verdict"`
	Values   map[string]any `json:"values,omitempty"`
	Points   []point        `json:"points,omitempty"`
	Error    string         `json:"error,omitempty"`
	// Timings are the probe's programs: modeled engine time against the
	// engine's own, where it reports one.
	Timings []timing `json:"timings,omitempty"`
}

// timing is one program of a probe: its modeled engine time on the chip's
// family (lower.Estimate) and the engine's own execution time
// (hwExecutionTime, the least over the runs that reported one), so that a
// report from a Mac calibrates the model.
type timing struct {
	Program   string `json:"program"` // node count and the costliest op
	Family    string `json:"family"`
	ModeledNS int64  `json:"modeled_ns"`
	// MeasuredNS is 0 when the engine reported no time (the simulator,
	// statistics unavailable).
	MeasuredNS int64 `json:"measured_ns,omitempty"`
	Runs       int   `json:"runs"`          // runs of the program
	Reported   int   `json:"reported_runs"` // of them, runs that reported an engine time
}

// point is one run of a probe's program: the swept input, the value the
// model predicts and the value the device returned.
type point struct {
	Label string `json:"label"`
	In    num    `json:"in"`
	Want  num    `json:"want"`
	Got   num    `json:"got"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// num is a float64 that JSON-encodes ±Inf and NaN as the strings "+Inf",
// "-Inf" and "NaN" (encoding/json refuses them as numbers).
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	}
	return json.Marshal(f)
}

func (n *num) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*n = num(math.NaN())
	case `"+Inf"`:
		*n = num(math.Inf(1))
	case `"-Inf"`:
		*n = num(math.Inf(-1))
	default:
		var f float64
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		*n = num(f)
	}
	return nil
}

func cmdSelftest(args []string, w io.Writer) error {
	fs := newFlags("selftest")
	name := fs.String("device", "", "device: ane, sim or sim-narrow (default: the ANE when present, else the simulator)")
	short := fs.Bool("short", false, "a quick run: fewer sweep points, no compile-budget count")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file")
	if err := parse(fs, args); err != nil {
		return err
	}
	dev, note, err := openSelftestDevice(*name)
	if err != nil {
		return err
	}
	defer dev.Close()
	rep := runSelftest(dev, *short)
	if note != "" {
		rep.Note = note + " " + rep.Note
		rep.Note = strings.TrimSpace(rep.Note)
	}
	if err := printSelftest(w, rep); err != nil {
		return err
	}
	if *jsonPath != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return fmt.Errorf("selftest: encoding the report: %v", err)
		}
		if err := os.WriteFile(*jsonPath, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("selftest: writing the report: %v", err)
		}
		fmt.Fprintf(w, "report written to %s\n", *jsonPath)
	}
	if !rep.Simulated {
		return nil // on hardware a difference is a finding, not a failure
	}
	var bad []string
	for _, p := range rep.Probes {
		if p.Verdict == verdictDiffers || p.Verdict == verdictError {
			bad = append(bad, p.Name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("selftest: the simulator departs from its own model in %s", strings.Join(bad, ", "))
	}
	return nil
}

// openSelftestDevice opens the named device. With no name it takes the ANE
// when one is present and the simulator otherwise, and says so.
func openSelftestDevice(name string) (shim.Device, string, error) {
	if name != "" {
		dev, err := shim.Open(name)
		if err != nil {
			return nil, "", fmt.Errorf("selftest: %w (run without -device to use the simulator where there is no ANE)", err)
		}
		return dev, "", nil
	}
	if ane.Available() {
		if dev, err := shim.Open("ane"); err == nil {
			return dev, "", nil
		}
	}
	dev, err := shim.Open("sim")
	if err != nil {
		return nil, "", err
	}
	return dev, fmt.Sprintf("No Neural Engine on this machine (%s/%s): every probe ran on the simulator.", runtime.GOOS, runtime.GOARCH), nil
}

// runSelftest runs the conformance suite and every probe on dev.
func runSelftest(dev shim.Device, short bool) *selftestReport {
	info := dev.Info()
	host := readHostInfo()
	host.Family = lower.EstimateFamily(host.Chip)
	rep := &selftestReport{
		Schema:    selftestSchema,
		Time:      time.Now().UTC().Format(time.RFC3339),
		Anemone:   readBuildStamp(),
		Host:      host,
		Device:    deviceInfo{Name: info.Name, Hardware: info.Hardware, Target: info.Target.Name, Numerics: info.Numerics},
		Simulated: !info.Hardware,
		Short:     short,
	}
	if rep.Simulated {
		rep.Note = "Simulated: the measured column is the simulator's own model, not hardware."
	}
	e := &env{dev: dev, t: info.Target, narrow: strings.Contains(info.Name, "narrow"), short: short, family: info.Target.Name}
	if info.Hardware && host.Family != "" {
		e.family = host.Family // the chip's own family, where the model has one
	}
	rep.Device.CostFamily = e.family

	rep.Conformance = append(shimtest.Check(dev), nntest.CheckLayers(dev)...)
	rep.Probes = append(rep.Probes, conformanceProbe(rep.Conformance))
	for _, f := range []struct {
		name string
		run  func() []probe
	}{
		{"matmul-saturation", one(func() probe { return e.saturation(false) })},
		{"conv-saturation", one(func() probe { return e.saturation(true) })},
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
func attachTimings(ps []probe, ts []*timing) {
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

func one(f func() probe) func() []probe { return func() []probe { return []probe{f()} } }

// guarded runs a probe, turning a panic (a device misbehaving in a way no
// probe foresaw) into an ERROR row so that the rest of the report survives.
func guarded(name string, f func() []probe) (ps []probe) {
	defer func() {
		if r := recover(); r != nil {
			ps = []probe{fail(probe{Name: name}, fmt.Errorf("selftest: probe %s panicked: %v", name, r))}
		}
	}()
	return f()
}

func readBuildStamp() buildStamp {
	s := buildStamp{Version: "(unknown)", Go: runtime.Version()}
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

func printSelftest(w io.Writer, rep *selftestReport) error {
	fmt.Fprintf(w, "anemone selftest (%s)\n", rep.Schema)
	fmt.Fprintf(w, "host:     %s, %s (%s/%s)\n", rep.Host.Chip, rep.Host.OSVersion, rep.Host.OS, rep.Host.Arch)
	if rep.Host.Family != "" {
		fmt.Fprintf(w, "family:   %s (the cost model's)\n", rep.Host.Family)
	}
	fmt.Fprintf(w, "device:   %s (hardware: %v, target %s)\n", rep.Device.Name, rep.Device.Hardware, rep.Device.Target)
	fmt.Fprintf(w, "numerics: %s\n", rep.Device.Numerics)
	commit := rep.Anemone.Commit
	if commit == "" {
		commit = "unknown commit"
	}
	fmt.Fprintf(w, "anemone:  %s, %s, %s\n", rep.Anemone.Version, commit, rep.Anemone.Go)
	if rep.Simulated {
		fmt.Fprintln(w, "SIMULATED: no Neural Engine ran; the probes measure the simulator.")
	}
	if rep.Note != "" {
		fmt.Fprintf(w, "note:     %s\n", rep.Note)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "probe\texpected (simulator model)\tmeasured\tverdict")
	for _, p := range rep.Probes {
		measured := p.Measured
		if p.Error != "" && measured == "" {
			measured = p.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.Expected, measured, p.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printTimings(w, rep)
}

// env carries what every probe needs.
type env struct {
	dev    shim.Device
	t      lower.Target
	narrow bool // the device's model accumulates matmul/conv in fp16
	short  bool
	// family prices the programs (lower.Estimate): the chip's own on
	// hardware, the device's target on the simulator.
	family  string
	timings []*timing // the current probe's programs
}

// cliff is the matmul/conv output magnitude above which the result becomes
// ±Inf (docs/ENGINE.md §7): half of fp16's largest finite value.
const cliff = engine.Cliff

// widthClamp is the magnitude a width-offset slice saturates above on
// targets with Target.WidthSliceClamp (docs/ENGINE.md §7).
const widthClamp = engine.SliceClamp

func conformanceProbe(rs []shimtest.Result) probe {
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
	p := probe{
		Name:     "conformance",
		What:     "every registered op against the float64 evaluator, within its fp16 error bound (shimtest)",
		Expected: fmt.Sprintf("%d of %d cases pass", len(rs), len(rs)),
		Measured: fmt.Sprintf("%d of %d cases pass", len(rs)-len(failed), len(rs)),
		Values:   map[string]any{"cases": len(rs), "failed": failed},
		Verdict:  verdictModeled,
	}
	if len(failed) > 0 {
		p.Verdict = verdictDiffers
		p.Measured += " (failed: " + strings.Join(failed, ", ") + ")"
	}
	return p
}

// compiled is one compiled program, or the reason it did not compile.
type compiled struct {
	exe shim.Executable
	err error
	tm  *timing // nil when the model cannot price the program
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
func (e *env) model(p *lower.Program) *timing {
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
	t := &timing{Program: desc, Family: cost.Target, ModeledNS: int64(cost.Time)}
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

func fail(p probe, err error) probe {
	p.Error = err.Error()
	p.Verdict = verdictError
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
func verdict(pts []point) string {
	for _, pt := range pts {
		if !pt.OK {
			return verdictDiffers
		}
	}
	return verdictModeled
}

// modelDot is the simulator's model of a K-term dot product of v with
// ones: fp16 products (exact here) summed in float32, or in fp16 under the
// narrow model, the sum rounded to fp16; a sum above the cliff before that
// last rounding is ±Inf.
func modelDot(v float64, k int, narrow bool) float64 {
	var sum float64 // the sum before its final rounding
	if narrow {
		var s float64
		for range k - 1 {
			s = fp16.Round64(s + v)
		}
		sum = s + v
	} else {
		var s32 float32
		for range k {
			s32 += float32(v)
		}
		sum = float64(s32)
	}
	if math.Abs(sum) > cliff {
		return math.Copysign(math.Inf(1), sum)
	}
	return fp16.Round64(sum)
}

// saturation sweeps K-term dot products (a matmul of two inputs, or with
// conv a constant weight, which the lowering turns into a 1×1 conv) of
// values v with ones, with true outputs K·v from 32000 to 33000.
func (e *env) saturation(conv bool) probe {
	p := probe{Name: "matmul-saturation", What: "K-term dot of v with ones (matmul of two inputs), true outputs around 32000..33000: where does Inf start?"}
	ks := []int{32}
	if !e.short {
		ks = []int{1, 32, 256, 2048}
	}
	if conv {
		p.Name, p.What = "conv-saturation", "the same with a constant weight, lowered to a 1×1 conv"
		ks = []int{32}
	}
	targets := []float64{32000, 32512, 32704, 32736, engine.Cliff, 32768, 32800, 33000}
	n := e.t.RowLength(1)
	p.Params = map[string]any{"K": ks, "true_outputs": targets, "output_columns": n}
	var exp, meas []string
	for _, k := range ks {
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, k})
		var y dataflow.Value
		if conv {
			ones := make([]float64, k*n)
			for i := range ones {
				ones[i] = 1
			}
			y = g.Const("w", dataflow.Shape{k, n}, ones)
		} else {
			y = g.Input("y", dataflow.Shape{k, n})
		}
		g.Output("z", g.MatMul(x, y, false, false))
		prog, err := lower.Lower(g, e.t)
		if err != nil {
			return fail(p, err)
		}
		op := "matmul("
		if conv {
			op = "conv("
		}
		if !strings.Contains(string(prog.MIL), op) {
			return fail(p, fmt.Errorf("selftest: the lowering emitted no %s for this probe", strings.TrimSuffix(op, "(")))
		}
		c := e.compile(prog)
		if c.err != nil {
			return fail(p, c.err)
		}
		lastFinite, firstInf := math.NaN(), math.NaN()
		wantFinite, wantInf := math.NaN(), math.NaN()
		for _, tgt := range targets {
			v := fp16.Round64(tgt / float64(k))
			truth := v * float64(k)
			want := modelDot(v, k, e.narrow)
			in := [][]float32{fill(k, v)}
			if !conv {
				in = append(in, fill(k*n, 1))
			}
			pt := point{Label: fmt.Sprintf("K=%d v=%g", k, v), In: num(truth), Want: num(want)}
			out, err := c.run(in, n)
			if err != nil {
				pt.Error = err.Error()
				pt.Got = num(math.NaN())
			} else {
				got := float64(out[0][0])
				for _, o := range out[0] { // every column holds the same dot
					if !same(got, float64(o)) {
						pt.Error = fmt.Sprintf("columns disagree: %g and %g", got, o)
					}
				}
				pt.Got, pt.OK = num(got), same(want, got) && pt.Error == ""
				if math.IsInf(got, 0) {
					if math.IsNaN(firstInf) {
						firstInf = truth
					}
				} else {
					lastFinite = truth
				}
			}
			if math.IsInf(want, 0) {
				if math.IsNaN(wantInf) {
					wantInf = truth
				}
			} else {
				wantFinite = truth
			}
			p.Points = append(p.Points, pt)
		}
		c.close()
		exp = append(exp, fmt.Sprintf("finite to %g, Inf from %g", wantFinite, wantInf))
		meas = append(meas, fmt.Sprintf("finite to %g, Inf from %g", lastFinite, firstInf))
		if p.Values == nil {
			p.Values = map[string]any{}
		}
		p.Values[fmt.Sprintf("K%d_last_finite", k)] = num(lastFinite)
		p.Values[fmt.Sprintf("K%d_first_inf", k)] = num(firstInf)
	}
	p.Expected, p.Measured, p.Verdict = perK(ks, exp), perK(ks, meas), verdict(p.Points)
	return p
}

// perK joins one description per K, once if they are all the same.
func perK(ks []int, descs []string) string {
	all := true
	for _, d := range descs {
		all = all && d == descs[0]
	}
	if all {
		return fmt.Sprintf("%s (K = %s)", descs[0], strings.Trim(fmt.Sprint(ks), "[]"))
	}
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("K=%d %s", k, descs[i])
	}
	return strings.Join(parts, "; ")
}

// milBuilder writes a hand-made program through the MIL AST: one input
// surface, one output surface, parameters as named consts.
type milBuilder struct {
	fn   *mil.Function
	blob *mil.BlobWriter
	seq  int
}

func newMIL(opset string) *milBuilder {
	return &milBuilder{fn: &mil.Function{Name: "main", Opset: opset}, blob: mil.NewBlobWriter()}
}

func (b *milBuilder) input(name string, shape ...int) string {
	b.fn.Inputs = append(b.fn.Inputs, mil.Var{Type: mil.TensorType("fp16", shape...), Name: name})
	return name
}

func (b *milBuilder) konst(lit *mil.Literal) string {
	b.seq++
	name := fmt.Sprintf("k%d", b.seq)
	b.fn.Ops = append(b.fn.Ops, &mil.Op{
		Outputs: []mil.Var{{Type: lit.Type, Name: name}},
		Kind:    "const",
		Attrs:   []mil.Arg{{Name: "name", Value: mil.String(name)}, {Name: "val", Value: lit}},
	})
	return name
}

func (b *milBuilder) ints(v ...int) mil.Expr { return &mil.Ref{Name: b.konst(mil.Int32s(v...))} }
func (b *milBuilder) int1(v int) mil.Expr    { return &mil.Ref{Name: b.konst(mil.Int32(v))} }
func (b *milBuilder) bool1(v bool) mil.Expr  { return &mil.Ref{Name: b.konst(mil.Bool(v))} }
func (b *milBuilder) str(v string) mil.Expr  { return &mil.Ref{Name: b.konst(mil.String(v))} }
func (b *milBuilder) half(v float64) mil.Expr {
	return &mil.Ref{Name: b.konst(mil.FP16(v))}
}

func ref(name string) mil.Expr { return &mil.Ref{Name: name} }

// op appends out = kind(args...) of the given shape; args alternate
// keyword and value. An empty out takes a fresh name.
func (b *milBuilder) op(out, kind string, shape []int, args ...any) string {
	if out == "" {
		b.seq++
		out = fmt.Sprintf("v%d", b.seq)
	}
	o := &mil.Op{
		Outputs: []mil.Var{{Type: mil.TensorType("fp16", shape...), Name: out}},
		Kind:    kind,
		Attrs:   []mil.Arg{{Name: "name", Value: mil.String(out)}},
	}
	for i := 0; i+1 < len(args); i += 2 {
		o.Args = append(o.Args, mil.Arg{Name: args[i].(string), Value: args[i+1].(mil.Expr)})
	}
	b.fn.Ops = append(b.fn.Ops, o)
	return out
}

// program finishes the function, returning out, as a lower.Program whose
// one input and one output are each a whole surface of shape [1, C, 1, S]
// (logical shape [C, S]).
func (b *milBuilder) program(t lower.Target, out string, outShape []int) *lower.Program {
	b.fn.Outputs = []string{out}
	var buildInfo = []mil.KV{
		{Key: "coremlc-component-MIL", Value: "3510.2.1"},
		{Key: "coremlc-version", Value: "3505.4.1"},
		{Key: "coremltools-component-milinternal", Value: ""},
		{Key: "coremltools-version", Value: "9.0"},
	}
	p := &lower.Program{
		MIL:    mil.Print(&mil.Program{Version: "1.3", BuildInfo: buildInfo, Functions: []*mil.Function{b.fn}}),
		Target: t.Name,
	}
	if b.blob.Len() > 0 {
		p.Blob = b.blob.Bytes()
	}
	spec := func(name string, shape []int) lower.IOSpec {
		return lower.IOSpec{Name: name, Shape: []int{shape[1], shape[3]}, DeviceShape: append([]int{}, shape...)}
	}
	for _, in := range b.fn.Inputs {
		p.Inputs = append(p.Inputs, spec(in.Name, in.Type.Shape))
		p.InputSurfaces = append(p.InputSurfaces, lower.Surface{Name: in.Name, Shape: append([]int{}, in.Type.Shape...)})
	}
	p.Outputs = []lower.IOSpec{spec(out, outShape)}
	p.OutputSurfaces = []lower.Surface{{Name: out, Shape: append([]int{}, outShape...)}}
	p.Hash = engine.ProgramHash(p.MIL, p.Blob)
	return p
}

// sliceClamp slices a row at last-axis offset 0 and at offset W (one
// aligned row length, 32 on M1–M4) and feeds it values around 4094.
func (e *env) sliceClamp() probe {
	p := probe{Name: "width-slice-clamp", What: "slice_by_size of a row at last-axis offset 0 vs W: does |x| > 4094 become Inf?"}
	w := e.t.RowLength(1)
	values := []float64{2048, 4092, engine.SliceClamp, 4096, 4100, 8192, 30000, -engine.SliceClamp, -4096}
	p.Params = map[string]any{"offsets": []int{0, w}, "width": w, "values": values, "clamp_modeled": e.t.WidthSliceClamp}
	var exp, meas []string
	p.Values = map[string]any{}
	for _, off := range []int{0, w} {
		b := newMIL(e.t.Opset)
		x := b.input("x", 1, 1, 1, 2*w)
		y := b.op("y", "slice_by_size", []int{1, 1, 1, w}, "begin", b.ints(0, 0, 0, off), "size", b.ints(1, 1, 1, w), "x", ref(x))
		c := e.compile(b.program(e.t, y, []int{1, 1, 1, w}))
		if c.err != nil {
			return fail(p, c.err)
		}
		firstInf, wantInf := math.NaN(), math.NaN()
		for _, v := range values {
			want := v
			if off > 0 && e.t.WidthSliceClamp && math.Abs(v) > widthClamp {
				want = math.Copysign(math.Inf(1), v)
			}
			pt := point{Label: fmt.Sprintf("offset %d, x=%g", off, v), In: num(v), Want: num(want)}
			out, err := c.run([][]float32{fill(2*w, v)}, w)
			if err != nil {
				pt.Error, pt.Got = err.Error(), num(math.NaN())
			} else {
				got := float64(out[0][0])
				pt.Got, pt.OK = num(got), same(want, got)
				if math.IsInf(got, 0) && (math.IsNaN(firstInf) || math.Abs(v) < firstInf) {
					firstInf = math.Abs(v)
				}
			}
			if math.IsInf(want, 0) && (math.IsNaN(wantInf) || math.Abs(v) < wantInf) {
				wantInf = math.Abs(v)
			}
			p.Points = append(p.Points, pt)
		}
		c.close()
		desc := func(inf float64) string {
			if math.IsNaN(inf) {
				return fmt.Sprintf("offset %d exact", off)
			}
			return fmt.Sprintf("offset %d Inf from |x|=%g", off, inf)
		}
		exp, meas = append(exp, desc(wantInf)), append(meas, desc(firstInf))
		p.Values[fmt.Sprintf("offset%d_first_inf", off)] = num(firstInf)
	}
	p.Expected, p.Measured, p.Verdict = strings.Join(exp, "; "), strings.Join(meas, "; "), verdict(p.Points)
	return p
}

// reduceSum sums n ones (then zeros) with a native reduce_sum over the last
// axis, which the model gives an fp16 running sum.
func (e *env) reduceSum() probe {
	p := probe{Name: "reduce-sum-integers", What: "reduce_sum of n ones over the last axis: where does exactness end?"}
	const s = 4096
	w := e.t.RowLength(1)
	counts := []int{1024, 2047, 2048, 2049, 2050, 2052, 3000, 4096}
	p.Params = map[string]any{"row": s, "counts": counts}
	b := newMIL(e.t.Opset)
	x := b.input("x", 1, 1, 1, s)
	r := b.op("", "reduce_sum", []int{1, 1, 1, 1}, "axes", b.ints(3), "keep_dims", b.bool1(true), "x", ref(x))
	y := b.op("y", "pad", []int{1, 1, 1, w}, "constant_val", b.half(0), "mode", b.str("constant"), "pad", b.ints(0, 0, 0, 0, 0, 0, 0, w-1), "x", ref(r))
	c := e.compile(b.program(e.t, y, []int{1, 1, 1, w}))
	if c.err != nil {
		return fail(p, c.err)
	}
	defer c.close()
	lastExact, wantExact := 0, 0
	var got4096, want4096 float64
	for _, n := range counts {
		var want float64
		for range n {
			want = fp16.Round64(want + 1) // the model's fp16 running sum
		}
		pt, got := c.onesPoint(s, n, want, &lastExact, &wantExact, w)
		if n == s {
			want4096 = want
			if !math.IsNaN(got) { // a failed run reports 0
				got4096 = got
			}
		}
		p.Points = append(p.Points, pt)
	}
	p.Values = map[string]any{"last_exact": lastExact, "sum_of_4096": num(got4096)}
	p.Expected = fmt.Sprintf("exact to n=%d; 4096 ones sum to %g", wantExact, want4096)
	p.Measured = fmt.Sprintf("exact to n=%d; 4096 ones sum to %g", lastExact, got4096)
	p.Verdict = verdict(p.Points)
	return p
}

// onesPoint runs c on a row of s values, n ones then zeros, and scores its
// first output against want, the model's sum. It raises *lastExact to n
// when the device's sum is exactly n and *wantExact when the model's is,
// and returns the point with the device's sum (NaN if the run failed).
// sizes are the output sizes c.run takes.
func (c compiled) onesPoint(s, n int, want float64, lastExact, wantExact *int, sizes ...int) (point, float64) {
	in := make([]float32, s)
	for i := range n {
		in[i] = 1
	}
	pt := point{Label: fmt.Sprintf("n=%d", n), In: num(n), Want: num(want)}
	got := math.NaN()
	if out, err := c.run([][]float32{in}, sizes...); err != nil {
		pt.Error, pt.Got = err.Error(), num(got)
	} else {
		got = float64(out[0][0])
		pt.Got, pt.OK = num(got), same(want, got)
		if got == float64(n) {
			*lastExact = max(*lastExact, n)
		}
	}
	if want == float64(n) {
		*wantExact = max(*wantExact, n)
	}
	return pt, got
}

// onesDot sums n ones the way the lowering does (a last-axis ReduceSum
// becomes a matmul with ones, wide-accumulated).
func (e *env) onesDot() probe {
	p := probe{Name: "ones-dot", What: "sum of n ones as the lowering emits it (a matmul with ones): exact where reduce_sum is not?"}
	s := engine.RowLimit
	counts := []int{1024, 2048, 2049, 4096, engine.RowLimit}
	if e.short {
		s, counts = 4096, []int{2048, 2049, 4096}
	}
	s = min(s, e.t.MaxSpatial)
	p.Params = map[string]any{"row": s, "counts": counts}
	g := dataflow.New()
	g.Output("s", g.ReduceSum(g.Input("x", dataflow.Shape{1, s}), []int{-1}, true))
	c := e.build(g)
	if c.err != nil {
		return fail(p, c.err)
	}
	defer c.close()
	lastExact, wantExact := 0, 0
	for _, n := range counts {
		if n > s {
			continue
		}
		// Wide: ones summed in float32 (exact), rounded to fp16; narrow: an
		// fp16 running sum.
		pt, _ := c.onesPoint(s, n, modelDot(1, n, e.narrow), &lastExact, &wantExact, 1)
		p.Points = append(p.Points, pt)
	}
	p.Values = map[string]any{"last_exact": lastExact}
	p.Expected = fmt.Sprintf("exact to n=%d", wantExact)
	p.Measured = fmt.Sprintf("exact to n=%d", lastExact)
	p.Verdict = verdict(p.Points)
	return p
}

// subnormals checks whether fp16 subnormals (below 2⁻¹⁴) survive an add
// and a mul, as operands and as results.
func (e *env) subnormals() probe {
	p := probe{Name: "subnormal-flush", What: "do fp16 subnormals (2^-20) survive add and mul, as operands and results?"}
	type tc struct {
		label string
		op    string
		a, b  float64
	}
	cases := []tc{
		{"2^-20 + 2^-20", "add", 0x1p-20, 0x1p-20},
		{"1.5*2^-14 - 2^-14", "add", 0x1.8p-14, -0x1p-14}, // normal operands, subnormal result
		{"2^-20 * 1", "mul", 0x1p-20, 1},
		{"2^-10 * 2^-10", "mul", 0x1p-10, 0x1p-10},
	}
	w := e.t.RowLength(1)
	g := dataflow.New()
	a := g.Input("a", dataflow.Shape{1, w})
	bv := g.Input("b", dataflow.Shape{1, w})
	g.Output("sum", g.Add(a, bv))
	g.Output("product", g.Mul(a, bv))
	c := e.build(g)
	if c.err != nil {
		return fail(p, c.err)
	}
	defer c.close()
	ins := [][]float32{make([]float32, w), make([]float32, w)}
	for i, k := range cases {
		ins[0][i], ins[1][i] = float32(k.a), float32(k.b)
	}
	out, err := c.run(ins, w, w)
	if err != nil {
		return fail(p, err)
	}
	kept, flushed := 0, 0
	for i, k := range cases {
		exact := k.a + k.b
		o := out[0]
		if k.op == "mul" {
			exact, o = k.a*k.b, out[1]
		}
		want := exact
		if e.narrow {
			want = 0 // the narrow model flushes subnormal operands and results
		}
		got := float64(o[i])
		pt := point{Label: k.label, In: num(exact), Want: num(want), Got: num(got), OK: same(want, got)}
		switch got {
		case exact:
			kept++
		case 0:
			flushed++
		}
		p.Points = append(p.Points, pt)
	}
	p.Values = map[string]any{"kept": kept, "flushed": flushed}
	if e.narrow {
		p.Expected = fmt.Sprintf("all %d flushed to 0", len(cases))
	} else {
		p.Expected = fmt.Sprintf("all %d kept", len(cases))
	}
	p.Measured = fmt.Sprintf("%d kept, %d flushed, %d other", kept, flushed, len(cases)-kept-flushed)
	p.Verdict = verdict(p.Points)
	return p
}

// transcendentals measures the relative error of sqrt, exp, pow and gelu
// against float64 at the fp16 inputs, over a grid.
func (e *env) transcendentals() []probe {
	n := 1024
	if e.short {
		n = 256
	}
	// The model: a float32 result rounded to fp16, relative error at most
	// u(1+2⁻¹²) for normal results; the narrow model adds up to 2⁻¹⁰.
	bound := fp16.UnitRoundoff * (1 + 0x1p-12)
	if e.narrow {
		bound = (1+0x1p-10)*(1+bound) - 1
	}
	grid := func(lo, hi float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = fp16.Round64(lo + (hi-lo)*float64(i)/float64(n-1))
		}
		return xs
	}
	type fn struct {
		name   string
		x, y   []float64
		build  func(g *dataflow.Graph, x, y dataflow.Value) dataflow.Value
		f      func(x, y float64) float64
		milOp  string
		domain string
	}
	ys := grid(-2, 2)
	fns := []fn{
		{"sqrt", grid(0x1p-6, 256), nil, func(g *dataflow.Graph, x, _ dataflow.Value) dataflow.Value { return g.Sqrt(x) },
			func(x, _ float64) float64 { return math.Sqrt(x) }, "sqrt(", "x in [2^-6, 256]"},
		{"exp", grid(-8, 8), nil, func(g *dataflow.Graph, x, _ dataflow.Value) dataflow.Value { return g.Exp(x) },
			func(x, _ float64) float64 { return math.Exp(x) }, "exp(", "x in [-8, 8]"},
		{"pow", grid(0.25, 4), ys, func(g *dataflow.Graph, x, y dataflow.Value) dataflow.Value { return g.Pow(x, y) },
			math.Pow, "pow(", "x in [0.25, 4], y in [-2, 2]"},
		{"gelu", grid(-4, 4), nil, func(g *dataflow.Graph, x, _ dataflow.Value) dataflow.Value { return g.Gelu(x, dataflow.GeluExact) },
			func(x, _ float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, "gelu(", "x in [-4, 4], exact (erf) mode"},
	}
	var out []probe
	for _, f := range fns {
		p := probe{Name: f.name + "-accuracy", What: fmt.Sprintf("max relative error of %s against float64 at the fp16 inputs, over points with |f| >= 2^-10", f.name)}
		p.Params = map[string]any{"points": n, "domain": f.domain, "model_bound": bound}
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, n})
		var y dataflow.Value
		if f.y != nil {
			y = g.Input("y", dataflow.Shape{1, n})
		}
		g.Output("f", f.build(g, x, y))
		prog, err := lower.Lower(g, e.t)
		if err != nil {
			out = append(out, fail(p, err))
			continue
		}
		if !strings.Contains(string(prog.MIL), f.milOp) {
			out = append(out, fail(p, fmt.Errorf("selftest: the lowering emitted no %s", strings.TrimSuffix(f.milOp, "("))))
			continue
		}
		c := e.compile(prog)
		if c.err != nil {
			p.Expected = fmt.Sprintf("compiles; rel. err <= %.2e (%.2fu)", bound, bound/fp16.UnitRoundoff)
			p.Measured, p.Verdict, p.Error = refusal(c.err), verdictDiffers, c.err.Error()
			out = append(out, p)
			continue
		}
		ins := [][]float32{fill(n, 0)}
		for i, v := range f.x {
			ins[0][i] = float32(v)
		}
		if f.y != nil {
			ins = append(ins, fill(n, 0))
			for i, v := range f.y {
				ins[1][i] = float32(v)
			}
		}
		res, err := c.run(ins, n)
		c.close()
		if err != nil {
			out = append(out, fail(p, err))
			continue
		}
		worst, worstAt := 0.0, 0
		for i := range n {
			var yy float64
			if f.y != nil {
				yy = f.y[i]
			}
			want := f.f(f.x[i], yy)
			if math.Abs(want) < 0x1p-10 {
				continue
			}
			got := float64(res[0][i])
			rel := math.Abs(got-want) / math.Abs(want)
			if math.IsNaN(got) {
				rel = math.Inf(1)
			}
			if rel > worst {
				worst, worstAt = rel, i
			}
		}
		p.Values = map[string]any{"max_rel_err": num(worst), "in_units_of_u": num(worst / fp16.UnitRoundoff), "worst_x": num(f.x[worstAt])}
		p.Expected = fmt.Sprintf("rel. err <= %.2e (%.2fu)", bound, bound/fp16.UnitRoundoff)
		p.Measured = fmt.Sprintf("max rel. err %.2e (%.2fu) at x=%g", worst, worst/fp16.UnitRoundoff, f.x[worstAt])
		p.Verdict = verdictModeled
		if worst > bound {
			p.Verdict = verdictDiffers
		}
		out = append(out, p)
	}
	return out
}

// concatArity concatenates 2, 3 and 16 rows of the input in reverse order
// with one concat op.
func (e *env) concatArity() probe {
	p := probe{Name: "concat-arity", What: "one concat of 2, 3 and 16 inputs along the channel axis: does it compile, is it right?"}
	w := e.t.RowLength(1)
	counts := []int{2, 3, 16}
	p.Params = map[string]any{"inputs": counts, "width": w}
	var exp, meas []string
	p.Values = map[string]any{}
	for _, k := range counts {
		b := newMIL(e.t.Opset)
		x := b.input("x", 1, 16, 1, w)
		var parts []mil.Expr
		for i := k - 1; i >= 0; i-- {
			parts = append(parts, ref(b.op("", "slice_by_size", []int{1, 1, 1, w}, "begin", b.ints(0, i, 0, 0), "size", b.ints(1, 1, 1, w), "x", ref(x))))
		}
		y := b.op("y", "concat", []int{1, k, 1, w}, "axis", b.int1(1), "interleave", b.bool1(false), "values", &mil.Tuple{Elems: parts})
		want := "compiles, correct"
		if k > 2 {
			want = "refused"
		}
		exp = append(exp, fmt.Sprintf("%d: %s", k, want))
		c := e.compile(b.program(e.t, y, []int{1, k, 1, w}))
		var got string
		if c.err != nil {
			got = "refused"
			if !errors.Is(c.err, shim.ErrUnsupported) {
				got = "error"
			}
			p.Values[fmt.Sprintf("concat%d_error", k)] = c.err.Error()
		} else {
			in := make([]float32, 16*w)
			for i := range in {
				in[i] = float32(i/w + 1) // row r holds r+1
			}
			out, err := c.run([][]float32{in}, k*w)
			c.close()
			switch {
			case err != nil:
				got = "runs with error"
				p.Values[fmt.Sprintf("concat%d_error", k)] = err.Error()
			default:
				got = "compiles, correct"
				for j, v := range out[0] {
					if v != float32(k-j/w) {
						got = fmt.Sprintf("compiles, wrong (element %d is %g, want %d)", j, v, k-j/w)
						break
					}
				}
			}
		}
		p.Points = append(p.Points, point{Label: fmt.Sprintf("%d inputs: %s", k, got), In: num(k), Want: num(boolNum(want == "refused")), Got: num(boolNum(got == "refused")), OK: got == want})
		meas = append(meas, fmt.Sprintf("%d: %s", k, got))
		p.Values[fmt.Sprintf("concat%d", k)] = got
	}
	p.Expected, p.Measured, p.Verdict = strings.Join(exp, "; "), strings.Join(meas, "; "), verdict(p.Points)
	return p
}

func boolNum(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// surfaces lowers one two-input, two-output graph for the device's target
// (inputs packed into one surface) and for a copy of it with PackedIO off
// (a surface per tensor), and runs both.
func (e *env) surfaces() probe {
	p := probe{Name: "io-surfaces", What: "the same 2-input graph with one packed input surface vs a surface per input"}
	w := e.t.RowLength(1)
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{4, w})
	y := g.Input("y", dataflow.Shape{4, w})
	g.Output("s", g.Add(x, y))
	g.Output("d", g.Sub(x, y))
	xs, ys := make([]float32, 4*w), make([]float32, 4*w)
	for i := range xs {
		xs[i], ys[i] = float32(i%64), float32(3*(i%17)) // small integers: exact sums
	}
	separate := e.t
	separate.PackedIO = false
	try := func(t lower.Target) (string, int, error) {
		prog, err := lower.Lower(g, t)
		if err != nil {
			return "lowering failed", 0, err
		}
		c := e.compile(prog)
		if c.err != nil {
			if errors.Is(c.err, shim.ErrUnsupported) {
				return "refused", len(prog.InputSurfaces), c.err
			}
			return "error", len(prog.InputSurfaces), c.err
		}
		defer c.close()
		out, err := c.run([][]float32{xs, ys}, 4*w, 4*w)
		if err != nil {
			return "runs with error", len(prog.InputSurfaces), err
		}
		for i := range xs {
			if out[0][i] != xs[i]+ys[i] || out[1][i] != xs[i]-ys[i] {
				return "runs, wrong", len(prog.InputSurfaces), fmt.Errorf("element %d: got %g, %g; want %g, %g", i, out[0][i], out[1][i], xs[i]+ys[i], xs[i]-ys[i])
			}
		}
		return "runs, correct", len(prog.InputSurfaces), nil
	}
	packed, np, perr := try(e.t)
	sep, ns, serr := try(separate)
	p.Params = map[string]any{"packed_surfaces": np, "separate_surfaces": ns}
	p.Values = map[string]any{"packed": packed, "separate": sep}
	if perr != nil {
		p.Values["packed_error"] = perr.Error()
	}
	if serr != nil {
		p.Values["separate_error"] = serr.Error()
	}
	wantSep := "refused"
	if !e.t.PackedIO {
		wantSep = "runs, correct"
	}
	p.Expected = "packed: runs, correct; separate: " + wantSep
	p.Measured = "packed: " + packed + "; separate: " + sep
	p.Points = []point{
		{Label: "packed: " + packed, In: num(np), OK: packed == "runs, correct"},
		{Label: "separate: " + sep, In: num(ns), OK: sep == wantSep},
	}
	p.Verdict = verdict(p.Points)
	return p
}

// budgetBound caps the compile-budget count: past the ~119 that public
// reports give, a bounded overshoot shows whether the limit exists.
const budgetBound = 160

// compileBudget compiles distinct programs, keeping each loaded, until one
// fails or budgetBound is reached. On hardware only, and not with -short:
// the process may be unable to compile afterwards, so it runs last.
func (e *env) compileBudget() probe {
	p := probe{Name: "compile-budget", What: "how many distinct programs compile (kept loaded) before a failure, bounded", Expected: "about 119 per process (public reports)"}
	p.Params = map[string]any{"bound": budgetBound}
	if !e.dev.Info().Hardware {
		p.Measured, p.Verdict = "simulator: no budget", verdictNA
		return p
	}
	if e.short {
		p.Measured, p.Verdict = "-short", verdictSkipped
		return p
	}
	dev := e.dev
	if c, ok := dev.(interface{ Backend() shim.Device }); ok {
		dev = c.Backend() // past the cache, which would evict and close
	}
	budget := ane.ProcessBudget()
	before, limit := budget.Used(), budget.Limit()
	budget.SetLimit(before + budgetBound)
	defer budget.SetLimit(limit)
	w := e.t.RowLength(1)
	var exes []shim.Executable
	defer func() {
		for _, x := range exes {
			_ = x.Close()
		}
	}()
	var ferr error
	for i := range budgetBound {
		b := newMIL(e.t.Opset)
		x := b.input("x", 1, 1, 1, w)
		y := b.op("y", "add", []int{1, 1, 1, w}, "x", ref(x), "y", b.half(float64(i+1)))
		exe, err := dev.Compile(b.program(e.t, y, []int{1, 1, 1, w}))
		if err != nil {
			ferr = err
			break
		}
		exes = append(exes, exe)
	}
	p.Values = map[string]any{"compiled": len(exes), "compiles_before_probe": before}
	if ferr != nil {
		p.Values["error"] = ferr.Error()
		p.Measured = fmt.Sprintf("%d compiled (after %d earlier compiles), then: %s", len(exes), before, firstLine(ferr.Error()))
	} else {
		p.Measured = fmt.Sprintf("all %d compiled (after %d earlier compiles)", len(exes), before)
	}
	p.Verdict = "measured"
	return p
}
