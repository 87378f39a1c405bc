package benchclaim

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// ModeledTol is the relative tolerance on a modeled engine time.
	ModeledTol = 0.02
	// RatioSlack is the factor, either way, allowed between a measured
	// ratio and the documented one: on this 2-core machine, load from
	// another process moved rows by up to 1.8× (gonum's products, which
	// use both cores, are hit hardest).
	RatioSlack = 2.0
	// Doc is the document holding the table, from the module's root.
	Doc = "docs/RESULTS.md"
)

// Run is what one call of the device path took.
type Run struct {
	Dispatches int
	Engine     time.Duration // modeled engine time (M1 for the simulator's programs)
	Host       time.Duration // measured host time, graph build included
	// Compile is the modeled compile and load of the call's programs: the
	// first call's, charged once (a caller that compiled before Pair
	// passes that call's figure with every run).
	Compile time.Duration
}

// Row is one line of the table.
type Row struct {
	Problem    string
	Dispatches int
	Engine     time.Duration
	Ratio      float64
}

// Pair runs device and cpu alternately once per iteration of b.Loop (cpu
// once before, untimed, as the caller has run device once to compile its
// programs), reports per call the modeled engine time, the
// measured host time, the modeled total, the CPU time and the ratios (the
// compile left out, and counted once), logs the table row the run gives
// and fails b unless the row named problem in docs/RESULTS.md agrees with
// it. cpuName is the baseline as the table names it.
func Pair(b *testing.B, problem, cpuName string, device func() Run, cpu func()) {
	b.Helper()
	var engine, host, cpuTime, compile time.Duration
	dispatches := -1
	cpu()
	for b.Loop() {
		r := device()
		if dispatches >= 0 && r.Dispatches != dispatches {
			b.Fatalf("%s: %d dispatches, then %d: the call is not repeatable", problem, dispatches, r.Dispatches)
		}
		dispatches = r.Dispatches
		engine += r.Engine
		host += r.Host
		compile = max(compile, r.Compile)
		start := time.Now()
		cpu()
		cpuTime += time.Since(start)
	}
	n := time.Duration(b.N)
	engine, host, cpuTime = engine/n, host/n, cpuTime/n
	total := engine + host
	ratio := total.Seconds() / cpuTime.Seconds()
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 }
	b.ReportMetric(float64(dispatches), "dispatches")
	b.ReportMetric(ms(engine), "modeled-engine-ms")
	b.ReportMetric(ms(host), "host-ms")
	b.ReportMetric(ms(total), "modeled-total-ms")
	b.ReportMetric(ms(compile), "modeled-compile-ms")
	b.ReportMetric(ms(cpuTime), "cpu-ms")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric((total+compile).Seconds()/cpuTime.Seconds(), "ratio-compiled")
	line := fmt.Sprintf("| %s | %d | %s | %s | **%s** | %s | %s %s | **%s** |", problem, dispatches,
		Duration(engine), Duration(host), Duration(total), Duration(compile), cpuName, Duration(cpuTime), Ratio(ratio))
	b.Log(line)
	want, err := Find(problem)
	if err == nil {
		err = want.Check(dispatches, engine, ratio)
	}
	if err != nil {
		b.Fatalf("%v\nthis run's row (b.N = %d):\n%s", err, b.N, line)
	}
}

// Check compares a measured call with the row.
func (w Row) Check(dispatches int, engine time.Duration, ratio float64) error {
	if dispatches != w.Dispatches {
		return fmt.Errorf("%s: %d dispatches; %s says %d", w.Problem, dispatches, Doc, w.Dispatches)
	}
	if rel := math.Abs(engine.Seconds()-w.Engine.Seconds()) / w.Engine.Seconds(); !(rel <= ModeledTol) {
		return fmt.Errorf("%s: modeled engine %s; %s says %s (%.1f %% apart, more than %.0f %%)", w.Problem, Duration(engine), Doc, Duration(w.Engine), 100*rel, 100*ModeledTol)
	}
	if !(ratio <= w.Ratio*RatioSlack && ratio >= w.Ratio/RatioSlack) {
		return fmt.Errorf("%s: %s the CPU's time; %s says %s (beyond a factor %.1f either way)", w.Problem, Ratio(ratio), Doc, Ratio(w.Ratio), RatioSlack)
	}
	return nil
}

// Find reads the row whose first cell is problem from the module's
// docs/RESULTS.md.
func Find(problem string) (Row, error) {
	path, err := docPath()
	if err != nil {
		return Row{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Row{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 10 || strings.TrimSpace(cells[1]) != problem {
			continue
		}
		return parseRow(problem, cells[2:len(cells)-1])
	}
	if err := sc.Err(); err != nil {
		return Row{}, err
	}
	return Row{}, fmt.Errorf("%s has no end-to-end row %q: add this run's row", Doc, problem)
}

// parseRow reads the cells after the problem: dispatches, engine, host,
// total, compile, CPU, ratio.
func parseRow(problem string, cells []string) (Row, error) {
	for i := range cells {
		cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "*")
	}
	if len(cells) != 7 {
		return Row{}, fmt.Errorf("%s: row %q has %d cells after the problem, want 7", Doc, problem, len(cells))
	}
	r := Row{Problem: problem}
	var err error
	if r.Dispatches, err = strconv.Atoi(cells[0]); err != nil {
		return Row{}, fmt.Errorf("%s: row %q: dispatches: %v", Doc, problem, err)
	}
	if r.Engine, err = ParseDuration(cells[1]); err != nil {
		return Row{}, fmt.Errorf("%s: row %q: modeled engine: %v", Doc, problem, err)
	}
	ratio, ok := strings.CutSuffix(cells[6], "×")
	if r.Ratio, err = strconv.ParseFloat(ratio, 64); !ok || err != nil || !(r.Ratio > 0) {
		return Row{}, fmt.Errorf("%s: row %q: ratio %q is not a positive number followed by ×", Doc, problem, cells[6])
	}
	return r, nil
}

func docPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, Doc), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("benchclaim: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Duration formats a duration as the table prints it: three significant
// digits, in ms below 10 s and in s from there.
func Duration(d time.Duration) string {
	if d >= 10*time.Second {
		return sig3(d.Seconds()) + " s"
	}
	return sig3(d.Seconds()*1e3) + " ms"
}

// ParseDuration reads what Duration writes.
func ParseDuration(s string) (time.Duration, error) {
	num, unit, ok := strings.Cut(s, " ")
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(v > 0) {
		return 0, fmt.Errorf("%q is not a positive number and a unit", s)
	}
	switch unit {
	case "ms":
		return time.Duration(v * 1e6), nil
	case "s":
		return time.Duration(v * 1e9), nil
	}
	return 0, fmt.Errorf("%q: unit %q, want ms or s", s, unit)
}

// Ratio formats a ratio as the table prints it: two significant digits
// and ×.
func Ratio(r float64) string {
	return sig(r, 2) + "×"
}

func sig3(v float64) string { return sig(v, 3) }

// sig formats v to n significant digits, without an exponent.
func sig(v float64, n int) string {
	if v == 0 {
		return "0"
	}
	digits := max(n-1-int(math.Floor(math.Log10(math.Abs(v)))), 0)
	return strconv.FormatFloat(v, 'f', digits, 64)
}
