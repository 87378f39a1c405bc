// Command anemone inspects the Neural Engine stack: the device in use, the
// ops it runs, and the programs anemone lowers.
//
//	anemone info                      device, target, numerics model, limits
//	anemone caps [--json]             run the conformance suite on the device
//	anemone mil KERNEL [flags]        print the MIL of a kernel
//	anemone solve PROBLEM [flags]     solve a model problem, printing each dispatch
//	anemone cost PROGRAM [flags]      model a program's engine time per ANE family
//	anemone selftest [flags]          probe the device's numerics, cliffs and compiler rules
//
// Every command's -h (or "anemone help COMMAND") prints its usage line and
// its flags with their defaults, and exits 0.
//
// The device is chosen by -device or $ANEMONE_DEVICE (ane, sim, sim-narrow,
// or the per-family simulators sim-m1, sim-m3, sim-m5); by default the ANE
// when present, the simulator otherwise.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn/nntest"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/ane"
	"github.com/anemone-go/anemone/shim/shimtest"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// errUsage marks a command-line mistake: usage is printed and the exit code is 2.
var errUsage = errors.New("usage")

// deviceHelp is the -device flag's description: the registered devices.
const deviceHelp = "device: ane, sim, sim-narrow, or a family's simulator sim-m1, sim-m3, sim-m5 (default: $ANEMONE_DEVICE, else the ANE when present, else sim)"

// targetHelp is the -target flag's description: lower's targets.
const targetHelp = "target: sim, ane-m1, ane-m2, ane-m3, ane-m4 or ane-m5"

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "anemone:", err)
		usage(os.Stderr)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "anemone:", err)
		os.Exit(1)
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, "usage:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %s\n", synopsis(c))
	}
	fmt.Fprint(w, "  anemone COMMAND -h    (or anemone help COMMAND) a command's flags and their defaults\n")
}

// commands are the subcommands, in the order usage lists them.
var commands = []string{"info", "caps", "mil", "solve", "selftest", "cost"}

// synopsis is the usage of command cmd with every flag it takes.
func synopsis(cmd string) string {
	switch cmd {
	case "info":
		return "anemone info [-device NAME]"
	case "caps":
		return "anemone caps [-device NAME] [-json]"
	case "mil":
		return "anemone mil KERNEL [-target NAME] [-m M] [-k K] [-n N] [-blob]\n      kernels: " + strings.Join(kernelNames(), ", ")
	case "solve":
		return `anemone solve poisson|convdiff [-device NAME] [-n N] [-tol T] [-unroll U]
      [-restart M] [-pe PE] [-precision fp16|compensated] [-max-dispatches D]
      [-precond default|polynomial|fd]`
	case "selftest":
		return "anemone selftest [-device NAME] [-short] [-json FILE]"
	case "cost":
		return "anemone cost PROGRAM [-target NAME] [-m M] [-k K] [-n N] [-unroll U] [-restart M]\n      [-json] [-nodes]\n      programs: " + strings.Join(costNames(), ", ")
	}
	return "anemone " + cmd
}

// helpRequest is parse's error for -h, -help or --help: run prints the
// command's usage and flags to stdout and returns nil, so the exit code
// is 0.
type helpRequest struct{ fs *flag.FlagSet }

func (h *helpRequest) Error() string { return h.fs.Name() + ": help requested" }

// isHelp reports a help flag (-h, -help, --h, --help), which a command
// given it in place of its KERNEL, PROGRAM or PROBLEM argument answers
// too.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--h" || arg == "--help"
}

// printHelp writes fs's command usage and flags with their defaults.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	cmd, _, _ := strings.Cut(fs.Name(), " ")
	fmt.Fprintf(w, "usage: %s\n\nflags of %s:\n", synopsis(cmd), fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

func run(args []string, stdout, stderr io.Writer) error {
	err := dispatch(args, stdout, stderr)
	var h *helpRequest
	if errors.As(err, &h) {
		printHelp(stdout, h.fs)
		return nil
	}
	return err
}

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	switch args[0] {
	case "info":
		return cmdInfo(args[1:], stdout)
	case "caps":
		return cmdCaps(args[1:], stdout)
	case "mil":
		return cmdMIL(args[1:], stdout)
	case "solve":
		return cmdSolve(args[1:], stdout)
	case "selftest":
		return cmdSelftest(args[1:], stdout)
	case "cost":
		return cmdCost(args[1:], stdout)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			if !slices.Contains(commands, args[1]) {
				return fmt.Errorf("%w: help: unknown command %q", errUsage, args[1])
			}
			return dispatch([]string{args[1], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return nil
	}
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses args into fs; -h, -help or --help is a helpRequest, which
// run answers with fs's usage and flags.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return &helpRequest{fs}
	} else if err != nil {
		return fmt.Errorf("%w: %s: %v", errUsage, fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: %s: unexpected argument %q", errUsage, fs.Name(), fs.Arg(0))
	}
	return nil
}

func cmdInfo(args []string, w io.Writer) error {
	fs := newFlags("info")
	name := fs.String("device", "", deviceHelp)
	if err := parse(fs, args); err != nil {
		return err
	}
	dev, err := shim.Open(*name)
	if err != nil {
		return err
	}
	defer dev.Close()
	info := dev.Info()
	t := info.Target
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "device\t%s\n", info.Name)
	fmt.Fprintf(tw, "hardware\t%v\n", info.Hardware)
	fmt.Fprintf(tw, "target\t%s (MIL opset %s)\n", t.Name, t.Opset)
	fmt.Fprintf(tw, "numerics\t%s\n", info.Numerics)
	fmt.Fprintf(tw, "max rank\t%d\n", t.MaxRank)
	fmt.Fprintf(tw, "max spatial (last) dimension\t%d\n", t.MaxSpatial)
	fmt.Fprintf(tw, "max channels\t%d\n", t.MaxChannels)
	fmt.Fprintf(tw, "max conv kernel\t%d\n", t.MaxKernel)
	fmt.Fprintf(tw, "row alignment\t%d fp16 elements\n", t.RowAlign)
	fmt.Fprintf(tw, "devices registered\t%s\n", strings.Join(shim.Registered(), ", "))
	return tw.Flush()
}

func cmdCaps(args []string, w io.Writer) error {
	fs := newFlags("caps")
	name := fs.String("device", "", deviceHelp)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	dev, err := shim.Open(*name)
	if err != nil {
		return err
	}
	defer dev.Close()
	results := append(shimtest.Check(dev), nntest.CheckLayers(dev)...)
	if *asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "op\tstatus\tMIL\tmax error (fp16 ulps)\tbound (ulps)\tresult\tevidence\n")
	failed := 0
	for _, r := range results {
		verdict := "ok"
		if !r.Pass {
			verdict = "FAIL: " + r.Error
			failed++
		}
		evidence := r.Evidence
		if evidence == "" {
			evidence = "no hardware report (follows MIL's definition)"
		}
		if r.RejectedBy != "" {
			evidence += "; rejected: " + r.RejectedBy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3g\t%.3g\t%s\t%s\n", r.Op, r.Status, r.MIL, r.MaxULPs, r.BoundULPs, verdict, evidence)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d cases on %s, %d failed\n", len(results), dev.Info().Name, failed)
	if failed > 0 {
		return fmt.Errorf("%d ops failed conformance", failed)
	}
	return nil
}

func cmdMIL(args []string, w io.Writer) error {
	fsName, rest := "mil", args // "mil -h": the flags every kernel takes
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0]) {
		return fmt.Errorf("%w: mil: name a kernel (%s)", errUsage, strings.Join(kernelNames(), ", "))
	}
	k, ok := kernels[args[0]]
	if !isHelp(args[0]) {
		if !ok {
			return fmt.Errorf("%w: mil: unknown kernel %q (known: %s)", errUsage, args[0], strings.Join(kernelNames(), ", "))
		}
		fsName, rest = "mil "+args[0], args[1:]
	}
	fs := newFlags(fsName)
	target := fs.String("target", "sim", targetHelp)
	m := fs.Int("m", 64, "rows of the left operand")
	kk := fs.Int("k", 64, "contraction length")
	n := fs.Int("n", 64, "columns of the right operand")
	blob := fs.Bool("blob", false, "also describe the weight blob")
	if err := parse(fs, rest); err != nil {
		return err
	}
	t, err := lower.TargetByName(*target)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	g, err := k.build(t, *m, *kk, *n)
	if err != nil {
		return err
	}
	p, err := lower.Lower(g, t)
	if err != nil {
		return err
	}
	if _, err := w.Write(p.MIL); err != nil {
		return err
	}
	if *blob {
		fmt.Fprintf(w, "// weight.bin: %d bytes, hash %s\n", len(p.Blob), p.Hash)
	}
	return nil
}
