package selftest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/anemone-go/anemone/shim/shimtest"
)

// Schema names the JSON layout of a report (docs/HARDWARE.md).
const Schema = "anemone-selftest/1"

// The verdicts of a probe (Probe.Verdict).
const (
	VerdictModeled  = "as modeled"     // the device did what the simulator's model of its target predicts
	VerdictDiffers  = "DIFFERS"        // it did something else
	VerdictNA       = "not applicable" // the probe does not apply to the device
	VerdictSkipped  = "skipped"        // left out of a short run
	VerdictError    = "ERROR"          // the probe could not run
	VerdictMeasured = "measured"       // a count the model does not predict (the compile budget)
)

// Report is the outcome of Run, and what `anemone selftest -json`
// writes: encoding/json marshals it in the layout Schema names.
type Report struct {
	Schema      string            `json:"schema"`
	Time        string            `json:"time"`
	Anemone     BuildStamp        `json:"anemone"`
	Host        HostInfo          `json:"host"`
	Device      DeviceInfo        `json:"device"`
	Simulated   bool              `json:"simulated"`
	Note        string            `json:"note,omitempty"`
	Short       bool              `json:"short"`
	Probes      []Probe           `json:"probes"`
	Conformance []shimtest.Result `json:"conformance"`
}

// BuildStamp names the anemone build that ran the probes (the main
// module's version and VCS stamp, where the binary carries them).
type BuildStamp struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// HostInfo describes the machine; on darwin chip and OS version come from
// sysctl, elsewhere they are GOOS/GOARCH.
type HostInfo struct {
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

// DeviceInfo describes the device the probes ran on.
type DeviceInfo struct {
	Name     string `json:"name"`
	Hardware bool   `json:"hardware"`
	Target   string `json:"target"`
	Numerics string `json:"numerics"`
	// CostFamily is the family the probes' programs are priced on: the
	// chip's on hardware, the target's on the simulator.
	CostFamily string `json:"cost_family"`
}

// Probe is one measurement: what the simulator's model of the device's
// target predicts, what the device did, and whether they agree.
type Probe struct {
	Name     string         `json:"name"`
	What     string         `json:"what"`
	Params   map[string]any `json:"params,omitempty"`
	Expected string         `json:"expected"`
	Measured string         `json:"measured"`
	Verdict  string         `json:"verdict"`
	Values   map[string]any `json:"values,omitempty"`
	Points   []Point        `json:"points,omitempty"`
	Error    string         `json:"error,omitempty"`
	// Timings are the probe's programs: modeled engine time against the
	// engine's own, where it reports one.
	Timings []Timing `json:"timings,omitempty"`
}

// Timing is one program of a probe: its modeled engine time on the chip's
// family (lower.Estimate) and the engine's own execution time
// (hwExecutionTime, the least over the runs that reported one), so that a
// report from a Mac calibrates the model.
type Timing struct {
	Program   string `json:"program"` // node count and the costliest op
	Family    string `json:"family"`
	ModeledNS int64  `json:"modeled_ns"`
	// MeasuredNS is 0 when the engine reported no time (the simulator,
	// statistics unavailable).
	MeasuredNS int64 `json:"measured_ns,omitempty"`
	Runs       int   `json:"runs"`          // runs of the program
	Reported   int   `json:"reported_runs"` // of them, runs that reported an engine time
}

// Point is one run of a probe's program: the swept input, the value the
// model predicts and the value the device returned.
type Point struct {
	Label string `json:"label"`
	In    Num    `json:"in"`
	Want  Num    `json:"want"`
	Got   Num    `json:"got"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// Num is a float64 that JSON-encodes ±Inf and NaN as the strings "+Inf",
// "-Inf" and "NaN" (encoding/json refuses them as numbers).
type Num float64

// MarshalJSON writes n as a JSON number, or as "+Inf", "-Inf" or "NaN".
func (n Num) MarshalJSON() ([]byte, error) {
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

// UnmarshalJSON reads what MarshalJSON writes.
func (n *Num) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"NaN"`:
		*n = Num(math.NaN())
	case `"+Inf"`:
		*n = Num(math.Inf(1))
	case `"-Inf"`:
		*n = Num(math.Inf(-1))
	default:
		var f float64
		if err := json.Unmarshal(b, &f); err != nil {
			return err
		}
		*n = Num(f)
	}
	return nil
}

// Departures names the probes whose verdict is VerdictDiffers or
// VerdictError, in report order.
func (r *Report) Departures() []string {
	var bad []string
	for _, p := range r.Probes {
		if p.Verdict == VerdictDiffers || p.Verdict == VerdictError {
			bad = append(bad, p.Name)
		}
	}
	return bad
}

// WriteText prints the report for a reader: the host, the device and the
// build, a table of every probe's expected and measured behaviour and
// verdict, and the programs' modeled against measured engine times.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "anemone selftest (%s)\n", r.Schema)
	fmt.Fprintf(w, "host:     %s, %s (%s/%s)\n", r.Host.Chip, r.Host.OSVersion, r.Host.OS, r.Host.Arch)
	if r.Host.Family != "" {
		fmt.Fprintf(w, "family:   %s (the cost model's)\n", r.Host.Family)
	}
	fmt.Fprintf(w, "device:   %s (hardware: %v, target %s)\n", r.Device.Name, r.Device.Hardware, r.Device.Target)
	fmt.Fprintf(w, "numerics: %s\n", r.Device.Numerics)
	commit := r.Anemone.Commit
	if commit == "" {
		commit = "unknown commit"
	}
	fmt.Fprintf(w, "anemone:  %s, %s, %s\n", r.Anemone.Version, commit, r.Anemone.Go)
	if r.Simulated {
		fmt.Fprintln(w, "SIMULATED: no Neural Engine ran; the probes measure the simulator.")
	}
	if r.Note != "" {
		fmt.Fprintf(w, "note:     %s\n", r.Note)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "probe\texpected (simulator model)\tmeasured\tverdict")
	for _, p := range r.Probes {
		measured := p.Measured
		if p.Error != "" && measured == "" {
			measured = p.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.Expected, measured, p.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printTimings(w, r)
}

// printTimings lists every program's modeled engine time beside the
// engine's own, or says there is none.
func printTimings(w io.Writer, rep *Report) error {
	var n, reported int
	var ratios []float64
	family := ""
	for _, p := range rep.Probes {
		for _, t := range p.Timings {
			n++
			family = t.Family
			if t.MeasuredNS > 0 {
				reported++
				ratios = append(ratios, float64(t.ModeledNS)/float64(t.MeasuredNS))
			}
		}
	}
	if n == 0 {
		return nil
	}
	if reported == 0 {
		why := "the engine reported no execution time"
		if rep.Simulated {
			why = "simulated: no engine time"
		}
		fmt.Fprintf(w, "\ntiming: %d programs modeled on %s; %s (JSON: probes[].timings)\n", n, family, why)
		return nil
	}
	sort.Float64s(ratios)
	fmt.Fprintf(w, "\ntiming: modeled (lower.Estimate on %s) against the engine's own time, %d of %d programs; median modeled/measured %.2f\n",
		family, reported, n, ratios[len(ratios)/2])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "probe\tprogram\tmodeled\tmeasured\tmodeled/measured")
	for _, p := range rep.Probes {
		for _, t := range p.Timings {
			if t.MeasuredNS == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%.2f\n", p.Name, t.Program, time.Duration(t.ModeledNS), time.Duration(t.MeasuredNS), float64(t.ModeledNS)/float64(t.MeasuredNS))
		}
	}
	return tw.Flush()
}
