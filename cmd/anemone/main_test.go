package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/krylov"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/shim"
)

func runCmd(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := run(args, &out, &errOut)
	return out.String(), err
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"bogus"},
		{"mil"},
		{"mil", "nosuchkernel"},
		{"mil", "matmul", "-m", "0"},
		{"mil", "matmul", "-target", "ane-m9"},
		{"mil", "matmul", "-wat"},
		{"info", "extra"},
		{"caps", "-json=maybe"},
		{"solve"},
		{"solve", "heat"},
		{"solve", "poisson", "-n", "0"},
		{"solve", "poisson", "-precision", "fp8"},
	} {
		_, err := runCmd(args...)
		require.True(t, errors.Is(err, errUsage), "%v: %v", args, err)
	}
}

func TestMILPrintsAParsableProgram(t *testing.T) {
	for _, k := range kernelNames() {
		out, err := runCmd("mil", k, "-m", "8", "-k", "40", "-n", "5")
		require.NoError(t, err, k)
		p, err := mil.Parse([]byte(out))
		require.NoError(t, err, k)
		require.NoError(t, p.Check(), k)
		require.Equal(t, "main", p.Functions[0].Name)
	}
	out, err := runCmd("mil", "matvec", "-m", "4", "-k", "40")
	require.NoError(t, err)
	require.Contains(t, out, "conv(", "a constant matmul is lowered to a 1×1 conv")
}

func TestInfoAndCaps(t *testing.T) {
	out, err := runCmd("info", "-device", "sim-narrow")
	require.NoError(t, err)
	require.Contains(t, out, "sim-narrow")
	require.Contains(t, out, "16384")

	out, err = runCmd("caps", "-device", "sim", "--json")
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rows))
	require.Greater(t, len(rows), 30)
	for _, r := range rows {
		require.Equal(t, true, r["pass"], "%v", r)
	}
	out, err = runCmd("caps")
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(strings.TrimSpace(out), "0 failed"))

	if runtime.GOOS != "darwin" {
		_, err = runCmd("info", "-device", "ane")
		require.ErrorIs(t, err, shim.ErrNoDevice)
	}
}

func TestSolve(t *testing.T) {
	out, err := runCmd("solve", "poisson", "-n", "16", "-device", "sim")
	require.NoError(t, err)
	require.Contains(t, out, "converged true")
	out, err = runCmd("solve", "convdiff", "-n", "16", "-pe", "10")
	require.NoError(t, err)
	require.Contains(t, out, "GMRES(30) convdiff 16×16")
	_, err = runCmd("solve", "poisson", "-n", "16", "-max-dispatches", "1", "-unroll", "2", "-precond", "polynomial")
	require.ErrorIs(t, err, krylov.ErrNotConverged)
	for _, c := range []struct{ flag, method string }{
		{"default", "CG + FastDiagonalization (default) poisson 16×16"},
		{"fd", "CG + FastDiagonalization poisson 16×16"},
		{"polynomial", "CG, device polynomial poisson 16×16"},
	} {
		out, err = runCmd("solve", "poisson", "-n", "16", "-precond", c.flag)
		require.NoError(t, err, c.flag)
		require.Contains(t, out, c.method)
		require.Contains(t, out, "converged true")
	}
	_, err = runCmd("solve", "poisson", "-n", "16", "-precond", "ilu")
	require.ErrorIs(t, err, errUsage)
	_, err = runCmd("solve", "convdiff", "-n", "16", "-precond", "fd")
	require.ErrorIs(t, err, errUsage)
}

// helpCases are the ways to ask for a command's flags, with the command
// whose usage answers.
var helpCases = []struct {
	args []string
	cmd  string
}{
	{[]string{"info", "-h"}, "info"},
	{[]string{"caps", "-help"}, "caps"},
	{[]string{"mil", "-h"}, "mil"},
	{[]string{"mil", "matmul", "-h"}, "mil"},
	{[]string{"solve", "-h"}, "solve"},
	{[]string{"solve", "poisson", "-h"}, "solve"},
	{[]string{"solve", "convdiff", "--help"}, "solve"},
	{[]string{"solve", "poisson", "-n", "8", "-h"}, "solve"},
	{[]string{"selftest", "-h"}, "selftest"},
	{[]string{"cost", "-h"}, "cost"},
	{[]string{"cost", "gmres", "-h"}, "cost"},
	{[]string{"help", "solve"}, "solve"},
}

// flagLine is a flag as flag.PrintDefaults lists it.
var flagLine = regexp.MustCompile(`(?m)^  -([a-z-]+)`)

// TestHelp: every command's -h prints its own usage line and its flags
// with their defaults to stdout, and returns no error (exit code 0): never
// "flag: help requested" or the global usage.
func TestHelp(t *testing.T) {
	for _, c := range helpCases {
		out, err := runCmd(c.args...)
		require.NoError(t, err, "%v", c.args)
		require.True(t, strings.HasPrefix(out, "usage: anemone "+c.cmd), "%v: %q", c.args, out)
		require.NotContains(t, out, "help requested")
		require.NotContains(t, out, "usage:\n", "not the global usage")
		require.NotEmpty(t, flagLine.FindAllString(out, -1), "%v lists its flags", c.args)
	}
	out, err := runCmd("solve", "poisson", "-h")
	require.NoError(t, err)
	for _, want := range []string{"-precond", "-n int", "(default 64)", "-tol float", "(default 1e-10)", "-restart int", "(default 30)", "-precision string", `(default "fp16")`, "-max-dispatches", "-unroll", "-pe", "-device"} {
		require.Contains(t, out, want)
	}
	out, err = runCmd("mil", "matvec", "-h")
	require.NoError(t, err)
	require.Contains(t, out, "-blob")
	require.Contains(t, out, "(default 64)")
}

// TestGlobalUsageListsEveryFlag: the global usage's entry for each command
// names every flag that command's -h lists (solve's -precond and mil's
// -blob included).
func TestGlobalUsageListsEveryFlag(t *testing.T) {
	var buf bytes.Buffer
	usage(&buf)
	sections := map[string]string{}
	for _, sec := range strings.Split(buf.String(), "\n  anemone ")[1:] {
		cmd, _, _ := strings.Cut(sec, " ")
		sections[cmd] = sec
	}
	for _, c := range helpCases {
		out, err := runCmd(c.args...)
		require.NoError(t, err)
		sec, ok := sections[c.cmd]
		require.True(t, ok, "usage has no entry for %s", c.cmd)
		for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
			require.Regexp(t, `\[-`+regexp.QuoteMeta(m[1])+`[\] ]`, sec, "usage of %s lacks -%s", c.cmd, m[1])
		}
	}
	require.Contains(t, sections["solve"], "-precond")
	require.Contains(t, sections["mil"], "-blob")
}

// TestHelpExitCode: the binary itself exits 0 on -h and prints to stdout
// (the test binary re-run as anemone).
func TestHelpExitCode(t *testing.T) {
	if os.Getenv("ANEMONE_MAIN_TEST") == "1" {
		os.Args = append([]string{"anemone"}, strings.Fields(os.Getenv("ANEMONE_MAIN_ARGS"))...)
		main()
		os.Exit(0)
	}
	for _, c := range []struct{ args, flag string }{{"solve poisson -h", "-precond"}, {"mil -h", "-blob"}, {"cost matmul -h", "-target"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitCode$")
		cmd.Env = append(os.Environ(), "ANEMONE_MAIN_TEST=1", "ANEMONE_MAIN_ARGS="+c.args)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "%s: exit code 0 (stderr %q)", c.args, stderr.String())
		require.Contains(t, stdout.String(), "usage: anemone ")
		require.Contains(t, stdout.String(), c.flag, "%s", c.args)
		require.Empty(t, stderr.String(), c.args)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitCode$")
	cmd.Env = append(os.Environ(), "ANEMONE_MAIN_TEST=1", "ANEMONE_MAIN_ARGS=solve poisson -wat")
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Run(), &ee)
	require.Equal(t, 2, ee.ExitCode(), "an unknown flag is still a usage error")
}

// TestSolveRefusesSizeBeyondMemory: a grid whose memory estimate exceeds
// what the machine has is refused before anything runs, with the estimate
// in bytes, the memory available and the largest -n that fits. The
// machine's figure is fixed at 1 GiB here, so that -n 2048 (4194304
// unknowns, about 2 GB for CG) is refused as on a small machine.
func TestSolveRefusesSizeBeyondMemory(t *testing.T) {
	saved := memoryAvailable
	t.Cleanup(func() { memoryAvailable = saved })
	const avail = 1 << 30
	memoryAvailable = func() (float64, string) { return avail, "test figure" }
	for _, c := range []struct {
		problem string
		n       int
		need    float64
	}{
		// 480 bytes per unknown (CG) and 300 + 16·30 (GMRES(30)), plus
		// 32 MiB: see solveBytes.
		{"poisson", 2048, 32<<20 + 480*2048*2048},
		{"convdiff", 2048, 32<<20 + 780*2048*2048},
		{"poisson", 100000, 32<<20 + 480e10},
	} {
		unknowns := float64(c.n) * float64(c.n)
		require.Equal(t, c.need, solveBytes(c.problem, unknowns, 30))
		out, err := runCmd("solve", c.problem, "-n", fmt.Sprint(c.n))
		require.Error(t, err)
		require.Empty(t, out, "nothing runs")
		msg := err.Error()
		require.Contains(t, msg, fmt.Sprintf("-n %d has %.0f unknowns, whose memory estimate is %.0f bytes", c.n, unknowns, c.need))
		require.Contains(t, msg, fmt.Sprintf("%d bytes available (test figure)", avail))
		side := maxSide(c.problem, avail, 30)
		require.Contains(t, msg, fmt.Sprintf("use -n %d or less", side))
		require.LessOrEqual(t, solveBytes(c.problem, float64(side)*float64(side), 30), float64(avail))
		require.Greater(t, solveBytes(c.problem, float64(side+1)*float64(side+1), 30), float64(avail))
	}
	// A size that fits runs, and its first line gives the estimate:
	// 32 MiB + 480·32² bytes.
	out, err := runCmd("solve", "poisson", "-n", "32")
	require.NoError(t, err)
	require.Contains(t, out, "1024 unknowns, memory estimate 34045952 bytes of 1073741824 available (test figure)")
	require.Contains(t, out, "converged true")
}

// TestAvailableMemory: on linux the figure is MemAvailable of
// /proc/meminfo, positive and at most MemTotal.
func TestAvailableMemory(t *testing.T) {
	b, source := availableMemory()
	require.Positive(t, b)
	if runtime.GOOS == "linux" {
		require.Contains(t, source, "MemAvailable")
		data, err := os.ReadFile("/proc/meminfo")
		require.NoError(t, err)
		var total float64
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				_, err := fmt.Sscan(f[1], &total)
				require.NoError(t, err)
			}
		}
		require.LessOrEqual(t, b, total*1024)
	}
}

// TestSolveNoSummaryWhenNotStarted: a setting out of the solver's range
// (GMRES's restart above krylov.MaxRestart, CG's unroll above
// krylov.MaxUnroll: usage errors, checked before the device is opened) or
// one krylov refuses (FastDiagonalization past its side) returns an error
// and prints no "converged … after 0 dispatches" summary.
func TestSolveNoSummaryWhenNotStarted(t *testing.T) {
	for _, c := range []struct {
		args []string
		want error
	}{
		{[]string{"solve", "convdiff", "-n", "16", "-restart", "40"}, errUsage},
		{[]string{"solve", "poisson", "-n", "16", "-precond", "polynomial", "-unroll", "100000"}, errUsage},
		{[]string{"solve", "poisson", "-n", "1100", "-precond", "fd"}, krylov.ErrUnsupported},
	} {
		args := c.args
		out, err := runCmd(args...)
		require.ErrorIs(t, err, c.want, "%v", args)
		require.NotContains(t, out, "converged", "%v", args)
		require.NotContains(t, out, "after 0 dispatches", "%v", args)
		require.NotContains(t, out, "dispatch ", "no table header either")
	}
}

// callerWriter records, for every write, whether a krylov solver is on
// the call stack: a line written inside the solve is printed as it goes.
type callerWriter struct {
	buf    bytes.Buffer
	inside []bool
	lines  []string
}

func (w *callerWriter) Write(p []byte) (int, error) {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	in := false
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "anemone/krylov.") {
			in = true
		}
		if !more {
			break
		}
	}
	w.inside = append(w.inside, in)
	w.lines = append(w.lines, string(p))
	return w.buf.Write(p)
}

// TestSolveProgress: every dispatch's line (number, residual, elapsed) is
// written while the solver runs, not after it returns, for CG and GMRES.
func TestSolveProgress(t *testing.T) {
	for _, args := range [][]string{
		{"solve", "poisson", "-n", "32", "-precond", "polynomial"},
		{"solve", "convdiff", "-n", "16", "-pe", "10"},
	} {
		var w callerWriter
		var errOut bytes.Buffer
		require.NoError(t, run(args, &w, &errOut), "%v", args)
		dispatchLine := regexp.MustCompile(`^ +(\d+) +\d+ +\d\.\d{3}e[+-]\d+ +\S+\n$`)
		seen := 0
		for i, l := range w.lines {
			if m := dispatchLine.FindStringSubmatch(l); m != nil {
				seen++
				require.Equal(t, fmt.Sprint(seen), m[1], "dispatches in order")
				require.True(t, w.inside[i], "dispatch %s printed during the solve", m[1])
			}
		}
		require.Positive(t, seen, "%v: %q", args, w.buf.String())
		out := w.buf.String()
		require.Contains(t, out, fmt.Sprintf("after %d dispatches", seen), "one line per dispatch")
		require.Contains(t, out, "converged true")
		require.Contains(t, out, "memory estimate")
	}
}
