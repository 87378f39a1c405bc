package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/krylov"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/sim"
)

// familySimulator is the simulator whose target is each family's, by
// target name, for the programs krylov lowers for a device: sim.Families
// inverted.
var familySimulator = func() map[string]string {
	m := map[string]string{}
	for name, t := range sim.Families {
		m[t.Name] = name
	}
	return m
}()

// costFamilies are the ANE families `anemone cost` prices, in order.
var costFamilies = []string{"ane-m1", "ane-m2", "ane-m3", "ane-m4", "ane-m5"}

// costParams are the sizes a cost program is built from.
type costParams struct {
	M, K, N int // the kernels' sizes; N is also the grid side of the grid programs
	Unroll  int // CG iterations per program (cgplain, cg)
	Restart int // GMRES steps per program (gmres)

	// Target is what the kernels and costPrograms are lowered for.
	Target lower.Target
	// Device, when not nil, is the device whose target krylov lowers the
	// solvers' programs for (costSolvers); nil means the default device.
	Device shim.Device
}

// costProgram builds a graph and says how many unknowns and iterations it
// covers (0 when "bytes per unknown per iteration" does not apply).
type costProgram struct {
	doc   string
	build func(p costParams) (g *dataflow.Graph, unknowns, iterations int, err error)
}

// gridInRow refuses an n×n grid whose vector [1, n²] is longer than the
// target's row (stencil and cgplain lay the grid out in one row; the
// solvers' programs keep it on its grid), as a usage error that names -n
// and its largest value; Lower would refuse the graph too (ErrUnsupported,
// from its shapes).
func gridInRow(p costParams) error {
	if err := positive(size{"n", p.N}); err != nil {
		return err
	}
	if float64(p.N)*float64(p.N) > float64(p.Target.MaxSpatial) {
		return fmt.Errorf("%w: -n %d: the %d×%d grid's vector is longer than target %s's last-dimension limit of %d (use -n %d or less)",
			errUsage, p.N, p.N, p.N, p.Target.Name, p.Target.MaxSpatial, int(math.Sqrt(float64(p.Target.MaxSpatial))))
	}
	return nil
}

// costPrograms are the programs only `anemone cost` builds, besides every
// kernel of `anemone mil`.
var costPrograms = map[string]costProgram{
	"stencil": {"y = A·x for the 5-point Laplacian on an n×n grid (one 3×3 conv)", func(p costParams) (*dataflow.Graph, int, int, error) {
		if err := gridInRow(p); err != nil {
			return nil, 0, 0, err
		}
		g := dataflow.New()
		a, err := laplacian(p.N)
		if err != nil {
			return nil, 0, 0, err
		}
		g.Output("y", a.DeviceApply(g, g.Input("x", dataflow.Shape{1, a.Dims()}), 0))
		return g, a.Dims(), 1, g.Err()
	}},
	"cgplain": {"textbook CG on the n×n Laplacian, -unroll iterations: a lower bound on the solver's program", func(p costParams) (*dataflow.Graph, int, int, error) {
		if err := positive(size{"unroll", p.Unroll}); err != nil {
			return nil, 0, 0, err
		}
		if err := gridInRow(p); err != nil {
			return nil, 0, 0, err
		}
		a, err := laplacian(p.N)
		if err != nil {
			return nil, 0, 0, err
		}
		g := plainCG(a, p.Unroll)
		return g, a.Dims(), p.Unroll, g.Err()
	}},
}

// costSolver builds a solver's own device program: what the solver
// dispatches, lowered for the target of costParams.Device (the default
// device's when nil).
type costSolver struct {
	doc   string
	build func(p costParams) (prog *lower.Program, unknowns, iterations int, err error)
}

// costSolvers are krylov's programs (krylov.CGProgram, krylov.GMRESProgram).
var costSolvers = map[string]costSolver{
	"cg": {"krylov's CG polynomial program on the n×n Laplacian, -unroll iterations", func(p costParams) (*lower.Program, int, int, error) {
		a, err := laplacian(p.N)
		if err != nil {
			return nil, 0, 0, err
		}
		if err := positive(size{"unroll", p.Unroll}); err != nil {
			return nil, 0, 0, err
		}
		poly, err := krylov.Polynomial(a)
		if err != nil {
			return nil, 0, 0, err
		}
		prog, err := krylov.CGProgram(a, &krylov.Settings{Device: p.Device, Unroll: p.Unroll, Precond: poly})
		if err != nil {
			return nil, 0, 0, err
		}
		return prog, a.Dims(), p.Unroll, nil
	}},
	"cg-fd": {"krylov's default CG program on the n×n Laplacian (n ≤ 1024): FastDiagonalization, one iteration", func(p costParams) (*lower.Program, int, int, error) {
		a, err := laplacian(p.N)
		if err != nil {
			return nil, 0, 0, err
		}
		fd, err := krylov.FastDiagonalization(a)
		if err != nil {
			return nil, 0, 0, err
		}
		prog, err := krylov.CGProgram(a, &krylov.Settings{Device: p.Device, Precond: fd})
		if err != nil {
			return nil, 0, 0, err
		}
		return prog, a.Dims(), 1, nil
	}},
	"gmres": {"krylov's GMRES program on the n×n Laplacian, -restart steps", func(p costParams) (*lower.Program, int, int, error) {
		a, err := laplacian(p.N)
		if err != nil {
			return nil, 0, 0, err
		}
		if err := positive(size{"restart", p.Restart}); err != nil {
			return nil, 0, 0, err
		}
		prog, err := krylov.GMRESProgram(a, &krylov.Settings{Device: p.Device, Restart: p.Restart})
		if err != nil {
			return nil, 0, 0, err
		}
		return prog, a.Dims(), p.Restart, nil
	}},
}

// laplacian is the 5-point Laplacian on an n×n grid, unscaled.
func laplacian(n int) (krylov.Operator, error) {
	if err := positive(size{"n", n}); err != nil {
		return nil, err
	}
	return krylov.Stencil2D(n, n, [3][3]float64{{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}})
}

// plainCG unrolls textbook CG (no scaling, no reliable updates): per
// iteration one operator application, two dots and three vector updates.
func plainCG(a krylov.Operator, unroll int) *dataflow.Graph {
	n := a.Dims()
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, n})
	r := g.Input("r", dataflow.Shape{1, n})
	p := g.Input("p", dataflow.Shape{1, n})
	dot := func(u, v dataflow.Value) dataflow.Value { return g.ReduceSum(g.Mul(u, v), []int{-1}, true) }
	rr := dot(r, r)
	for range unroll {
		q := a.DeviceApply(g, p, 0)
		alpha := g.Div(rr, dot(p, q))
		x = g.Add(x, g.Mul(alpha, p))
		r = g.Sub(r, g.Mul(alpha, q))
		next := dot(r, r)
		p = g.Add(r, g.Mul(g.Div(next, rr), p))
		rr = next
	}
	g.Output("x_out", x)
	g.Output("r_out", r)
	g.Output("p_out", p) // the next dispatch continues from x, r and p
	return g
}

// costNames lists what `anemone cost` can price.
func costNames() []string {
	names := kernelNames()
	for n := range costPrograms {
		names = append(names, n)
	}
	for n := range costSolvers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// costRow is one family's line of `anemone cost`.
type costRow struct {
	Target string `json:"target"`
	Nodes  int    `json:"nodes"`
	Bytes  int64  `json:"bytes"`
	Flops  int64  `json:"flops"`
	TimeNS int64  `json:"time_ns"`
	// BytesPerUnknownIter is Bytes/(unknowns·iterations), when it applies.
	BytesPerUnknownIter float64 `json:"bytes_per_unknown_per_iteration,omitempty"`
}

// costReport is what `anemone cost -json` prints.
type costReport struct {
	Program    string    `json:"program"`
	LoweredFor string    `json:"lowered_for"`
	Unknowns   int       `json:"unknowns,omitempty"`
	Iterations int       `json:"iterations,omitempty"`
	Families   []costRow `json:"families"`
	Model      string    `json:"model"`
}

const costModelNote = "modeled, not measured: ANEForge's published roofline (floor + Σ_nodes max(bytes/BW, flops/peak); ±17% on M1 convs) with on-chip memory, fusion and conv/matmul ceilings from M2 on; median error ~10% against published measurements (docs/ENGINE.md §6); never checked against hardware here"

// cmdCost prices a program on every ANE family with lower.Estimate.
//
//	anemone cost KERNEL [-m M] [-k K] [-n N] [-unroll U] [-target T] [-json] [-nodes]
//
// The solvers' programs (cg, cg-fd, gmres) are built by krylov for a
// device's target: -target sim (the default) uses the default device, and
// ane-m1, ane-m3 or ane-m5 that family's simulator; no simulator has the
// ane-m2 or ane-m4 rules, so those targets are refused for them.
func cmdCost(args []string, w io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && !isHelp(args[0]) {
		return fmt.Errorf("%w: cost: name a program (%s)", errUsage, strings.Join(costNames(), ", "))
	}
	name := args[0]
	_, isKernel := kernels[name]
	prog, isCost := costPrograms[name]
	solver, isSolver := costSolvers[name]
	fsName, rest := "cost", args // "cost -h": the flags every program takes
	if !isHelp(name) {
		if !isKernel && !isCost && !isSolver {
			return fmt.Errorf("%w: cost: unknown program %q (known: %s)", errUsage, name, strings.Join(costNames(), ", "))
		}
		fsName, rest = "cost "+name, args[1:]
	}
	fs := newFlags(fsName)
	target := fs.String("target", "sim", "target to lower for: sim, ane-m1 … ane-m5 (cg, cg-fd, gmres: sim, ane-m1, ane-m3 or ane-m5, through that family's simulator)")
	var cp costParams
	fs.IntVar(&cp.M, "m", 64, "rows of the left operand")
	fs.IntVar(&cp.K, "k", 64, "contraction length")
	fs.IntVar(&cp.N, "n", 64, "columns of the right operand; grid side of stencil and cgplain")
	fs.IntVar(&cp.Unroll, "unroll", 32, "CG iterations per program (cgplain, cg)")
	fs.IntVar(&cp.Restart, "restart", 30, "GMRES steps per program (gmres)")
	asJSON := fs.Bool("json", false, "print JSON")
	perNode := fs.Bool("nodes", false, "also list every node's cost on ane-m1")
	if err := parse(fs, rest); err != nil {
		return err
	}
	t, err := lower.TargetByName(*target)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	cp.Target = t
	if isSolver {
		if *target != "sim" {
			dev, ok := familySimulator[*target]
			if !ok {
				return fmt.Errorf("%w: cost %s: -target %s: krylov lowers its programs for a device, and no simulator follows %s's rules (sim, ane-m1, ane-m3 or ane-m5)", errUsage, name, *target, *target)
			}
			if cp.Device, err = shim.Open(dev); err != nil {
				return err
			}
			defer cp.Device.Close()
		}
		p, unknowns, iterations, err := solver.build(cp)
		if err != nil {
			return err
		}
		return printCost(w, name, p, unknowns, iterations, *asJSON, *perNode)
	}
	var g *dataflow.Graph
	var unknowns, iterations int
	if isKernel {
		g, err = kernels[name].build(t, cp.M, cp.K, cp.N)
	} else {
		g, unknowns, iterations, err = prog.build(cp)
	}
	if err != nil {
		return err
	}
	p, err := lower.Lower(g, t)
	if err != nil {
		return err
	}
	return printCost(w, name, p, unknowns, iterations, *asJSON, *perNode)
}

// printCost estimates p on every family and prints the table or JSON.
// unknowns·iterations, when positive, divides Bytes into bytes per unknown
// per iteration.
func printCost(w io.Writer, name string, p *lower.Program, unknowns, iterations int, asJSON, perNode bool) error {
	rep := costReport{Program: name, LoweredFor: p.Target, Unknowns: unknowns, Iterations: iterations, Model: costModelNote}
	var m1 lower.Cost
	for _, fam := range costFamilies {
		c, err := lower.Estimate(p, fam)
		if err != nil {
			return err
		}
		if fam == "ane-m1" {
			m1 = c
		}
		row := costRow{Target: fam, Nodes: c.Nodes, Bytes: c.Bytes, Flops: c.Flops, TimeNS: int64(c.Time)}
		if unknowns > 0 && iterations > 0 {
			row.BytesPerUnknownIter = float64(c.Bytes) / (float64(unknowns) * float64(iterations))
		}
		rep.Families = append(rep.Families, row)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(w, "%s, lowered for %s", name, p.Target)
	if unknowns > 0 {
		fmt.Fprintf(w, ": %d unknowns, %d iterations", unknowns, iterations)
	}
	fmt.Fprintf(w, "\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "family\tnodes\tbytes\tflops\tmodeled time\t")
	if unknowns > 0 {
		fmt.Fprintf(tw, "bytes/unknown/iter\t")
	}
	fmt.Fprintf(tw, "\n")
	for _, r := range rep.Families {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%v\t", r.Target, r.Nodes, r.Bytes, r.Flops, time.Duration(r.TimeNS).Round(100*time.Nanosecond))
		if unknowns > 0 {
			fmt.Fprintf(tw, "%.1f\t", r.BytesPerUnknownIter)
		}
		fmt.Fprintf(tw, "\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if perNode {
		fmt.Fprintf(w, "\nnodes on ane-m1:\n")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "op\tname\tbytes\tflops\ttime\n")
		for _, n := range m1.PerNode {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%v\n", n.Op, n.Name, n.Bytes, n.Flops, n.Time)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "%s\n", costModelNote)
	return nil
}
