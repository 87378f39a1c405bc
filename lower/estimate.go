package lower

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anemone-go/anemone/lower/mil"
)

// ErrEstimate reports a program Estimate cannot price: MIL that does not
// parse or check, no function main, a weight the blob does not hold, or an
// op whose operands do not have the shapes its flop count needs.
var ErrEstimate = errors.New("lower: cannot estimate program")

// Cost is the modeled cost of one dispatch of a program on one ANE family,
// as Estimate computes it. (The issue that asked for it calls it an
// estimate; Go cannot give a type and a function one name, so the function
// is Estimate and its result a Cost.)
type Cost struct {
	Target  string        // the target priced: Estimate's argument, or p.Target for ""
	Nodes   int           // ops other than const: what the model charges
	Bytes   int64         // Σ bytes moved over the nodes, at either memory level
	OnChip  int64         // of Bytes, those the model keeps in on-chip memory
	Flops   int64         // Σ flops over the nodes (matmul, conv and linear only)
	Time    time.Duration // modeled engine time: floor + Σ per-node time
	PerNode []NodeCost    // in program order
}

// NodeCost is one node's share of a Cost.
type NodeCost struct {
	Name   string        // the op's output variable
	Op     string        // the MIL op kind: "conv", "add", "reshape", ...
	Bytes  int64         // (input + output + weight elements) × 2
	OnChip int64         // of Bytes, those moved in on-chip memory rather than DRAM
	Flops  int64         // 2·(output elements)·(contraction length), or 0
	Time   time.Duration // max(DRAM bytes/bw, on-chip bytes/on-chip bw, flops/peak), without the floor
	// Fused: the node applies an elementwise op to the result of the
	// conv or matmul before it (directly or through other fused ops); the
	// value between them is not moved and takes no time.
	Fused bool
}

// family holds the roofline constants of one ANE family.
type family struct {
	peak  float64 // fp16 compute ceiling of matmul and linear, flop/s
	bw    float64 // DRAM streaming bandwidth, byte/s
	floor float64 // dispatch floor, charged once per program, seconds
	// rampFlops, rampExp: a compute ramp for mid-size ops, eff_peak =
	// peak·min(1, (flops/rampFlops)^rampExp); rampFlops 0 means none.
	rampFlops, rampExp float64
	// convPeak is the compute ceiling of conv; 0 means peak.
	convPeak float64
	// sram is the on-chip memory, bytes, that keeps a program's
	// intermediate tensors off DRAM; 0 means the family has no modeled
	// residency and every byte moves at bw (ANEForge's model as is).
	sram float64
	// sramBW is the on-chip bandwidth, byte/s, of the resident tensors.
	sramBW float64
}

// The measured anchors, from ANEForge's analytic per-chip cost model
// (its developer notes on the optimizer and cost model; the constants as in its
// aneforge/_cost.py and pinned by tests/test_cost_model_analytic.py).
var (
	// M1 (H13): a latency-roofline fit to 5 measured M1 convs, within ±17%.
	// No on-chip residency: those convs, the only published M1 timings,
	// move data at 7–12 GB/s whether weights or activations dominate
	// them, so nothing measured on M1 shows a faster on-chip level.
	anchorM1 = family{peak: 3.25e12, bw: 9.0e9, floor: 220e-6}
	// M2 Pro (H14), measured, with the mid-size compute ramp F = 1.8e10
	// flop, q = 0.38 fit to a 25-point grid. Base M2 and M2 Pro have the
	// same 16-core Neural Engine (Apple's specifications), so this anchor
	// prices ane-m2 as it is.
	anchorM2 = family{peak: 7.3e12, bw: 48e9, floor: 100e-6, rampFlops: 1.8e10, rampExp: 0.38}.onChip()
	// M5 (H17s): the re-fit of measured M5 bandwidth, floor and convs; the
	// conv ceiling is the conv-stack peak measured on an M5 (maderix/ANE,
	// 12.2–12.4 TFLOP/s; the middle), which Orion's report that a 1×1 conv
	// runs about 3× faster than the same matmul makes distinct from the
	// matmul ceiling.
	anchorM5 = family{peak: 8.9e12, bw: 57e9, floor: 110e-6, convPeak: 12.3e12}.onChip()
)

// On-chip memory (docs/ENGINE.md §6). sramBytes: about 32 MB measured on
// M4 and M4 Max (maderix/ANE, ANEForge), taken for every family from M2
// on, which share the engine layout (no other size is published).
// sramBandwidth: no published measurement; it is the one constant the
// end-to-end programs (ResNet-18, MiniLM, ViT-B/16 on an M5 Pro) are
// used to infer, as the rate that leaves their non-matrix ops (norms,
// softmax, activations, layout) the time the measurements leave them —
// those ops move 50–70% of the bytes of these programs and no flops.
// pastSRAM: a node whose operands and result exceed the on-chip memory
// computes at this fraction of its peak — the ~30% drop past SRAM
// reported on M4 (maderix/ANE), matching its single matmul at 4.0
// against 5.7 TFLOP/s from 2048² (24 MB of operands, fits) to 4096²
// (96 MB, does not).
const (
	sramBytes     = 32 << 20
	sramBandwidth = 300e9
	pastSRAM      = 4.0 / 5.7
)

// onChip gives a family the on-chip memory every family from M2 on has.
func (a family) onChip() family {
	a.sram, a.sramBW = sramBytes, sramBandwidth
	return a
}

// Engine core counts and top clocks of the families without a measured
// anchor, and of the anchor they scale from: the cores_0x238 field and the
// largest freq_0x760 entry of each family's performance curve as extracted
// by ANEForge (aneforge/costmodel_curves.json).
const (
	coresH14, clockH14 = 4, 1938e6 // M2
	coresH15, clockH15 = 4, 2064e6 // M3
	coresH16, clockH16 = 4, 2160e6 // M4
)

// scale moves an anchor to another family of the same engine layout by
// ANEForge's cross-chip rules: bandwidth ∝ cores, floor ∝ 1/clock, peak
// ∝ cores·clock (and the ramp's saturation point with the peak). The
// on-chip memory is kept.
func (a family) scale(coresFrom, clockFrom, coresTo, clockTo float64) family {
	c, f := coresTo/coresFrom, clockTo/clockFrom
	a.peak *= c * f
	a.convPeak *= c * f
	a.bw *= c
	a.floor /= f
	a.rampFlops *= c * f
	return a
}

// M3 and M4: no timing of a whole program is published, so the floor and
// bandwidth are the M2 anchor scaled (ANEForge's rules); the ceilings are
// what was measured on the same engine (every M3 and M4 chip has the same
// 16-core engine, Apple's specifications): the conv-stack peaks of an M3
// Pro (9.98 TFLOP/s) and an M4 Pro (12.6; maderix/ANE), and ANEForge's
// GEMM peak on an M4 (5.44), which replaces the scaled one (8.14, which
// overshoots it and maderix/ANE's 5.7 on one 2048³ matmul). A measured
// ceiling carries no ramp: the ramp is the M2 Pro's.
var (
	anchorM3 = withConv(anchorM2.scale(coresH14, clockH14, coresH15, clockH15), 9.98e12)
	anchorM4 = func() family {
		f := withConv(anchorM2.scale(coresH14, clockH14, coresH16, clockH16), 12.6e12)
		f.peak, f.rampFlops = 5.44e12, 0
		return f
	}()
)

// withConv gives f a measured conv ceiling.
func withConv(f family, conv float64) family {
	f.convPeak = conv
	return f
}

// Larger chips of a family, each from its own published measurements
// (docs/ENGINE.md §6). They are cost-model names only: a program is
// lowered for the family's target (ane-m1, ane-m4, ane-m5) and priced
// under these.
var (
	// M1 Max: the same 16-core H13 engine as M1; ANEForge's GEMM peak on
	// it, 4.6 TFLOP/s, replaces M1's 3.25 fit; its measured streaming
	// rate (7.4 GB/s) is in the class of M1's fitted 9 GB/s, which is kept
	// with M1's floor, and like M1 no residency.
	anchorM1Max = family{peak: 4.6e12, bw: 9.0e9, floor: 220e-6}
	// M4 Max: ANEForge's GEMM peak, 8.90 TFLOP/s; anemll-bench's 119 GB/s
	// as the engine's DRAM bandwidth; maderix/ANE's conv-stack peak of the
	// M4 Pro, whose engine is the M4 Max's (16 cores), 12.6 TFLOP/s; the
	// floor of ane-m4 (no floor is published for the Max).
	anchorM4Max = family{peak: 8.90e12, bw: 119e9, floor: 100e-6 * clockH14 / clockH16, convPeak: 12.6e12}.onChip()
	// M5 Pro: ANEForge's GEMM peak, 10.0 TFLOP/s; M5's conv peak and DRAM
	// bandwidth scaled by the M5 Pro/M5 ratios ANEForge measured on the
	// same benchmarks (GEMM 10.0/8.71, streaming 24/20.2); M5's floor.
	anchorM5Pro = family{peak: 10.0e12, bw: 57e9 * 24 / 20.2, floor: 110e-6, convPeak: 12.3e12 * 10.0 / 8.71}.onChip()
)

// families prices each target name. "sim" prices as ane-m1, the slowest
// family, so a simulated program is never shown faster than the slowest
// engine would run it.
var families = map[string]family{
	"sim":    anchorM1,
	"ane-m1": anchorM1,
	"ane-m2": anchorM2,
	// M3, M4: scaled from the M2 anchor (same 4-core engine layout in the
	// extracted curves), with their measured ceilings. ANEForge itself
	// folds M4 into the M5 tier, but scaling M5 by those core counts gives
	// an M4 peak of ~2 TFLOP/s, below the 5.4 TFLOP/s GEMM measured on an
	// M4.
	"ane-m3": anchorM3,
	"ane-m4": anchorM4,
	"ane-m5": anchorM5,

	"ane-m1max": anchorM1Max,
	"ane-m4max": anchorM4Max,
	"ane-m5pro": anchorM5Pro,
}

// EstimateTargets returns the target names Estimate prices, sorted.
func EstimateTargets() []string {
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// EstimateFamily names the cost-model family of a Mac's chip from its
// brand string (sysctl machdep.cpu.brand_string, "Apple M5 Pro"): the
// chip's own family where one is modeled (ane-m1max, ane-m4max,
// ane-m5pro), else its generation's (ane-m1 … ane-m5; later generations
// price as ane-m5), and "" for a brand that is not an Apple M chip.
func EstimateFamily(brand string) string {
	_, rest, ok := strings.Cut(brand, "Apple M")
	if !ok {
		return ""
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	gen, err := strconv.Atoi(rest[:end])
	if err != nil || gen < 1 {
		return ""
	}
	gen = min(gen, 5)
	base := fmt.Sprintf("ane-m%d", gen)
	tier := strings.ToLower(strings.TrimSpace(rest[end:]))
	if i := strings.IndexAny(tier, " ("); i >= 0 {
		tier = tier[:i]
	}
	if _, ok := families[base+tier]; ok && tier != "" {
		return base + tier
	}
	return base
}

// Estimate models the engine time of one dispatch of p on an ANE family:
// target "ane-m1" … "ane-m5", or a larger chip with its own measurements
// ("ane-m1max", "ane-m4max", "ane-m5pro"); "sim" prices as "ane-m1"; ""
// means p.Target. It parses p.MIL, checks every BLOBFILE weight against
// p.Blob, and prices what the MIL says, including the ops the lowering
// adds around the graph (slices and concats of packed I/O, reshapes,
// pads).
//
// It is a model, not a measurement: no estimate here has been checked
// against hardware by this project. It extends the roofline model
// ANEForge published, which reproduces its 5 measured M1 convs within
// ±17%, with the engine's on-chip memory. Every op but const is a node:
//
//	bytes = (input elements + output elements + weight elements) × 2
//	flops = 2·(output elements)·K  for matmul, conv and linear; else 0
//	time  = floor + Σ_nodes max(DRAM bytes/BW, on-chip bytes/BW_chip,
//	                            flops/peak)
//
// with the floor charged once per program, and from M2 on intermediates
// kept on chip while they fit its memory. The constants per family, where
// the published anchors disagree and why each was chosen are in
// docs/COST.md; the figures it is compared with, in docs/ENGINE.md §6.
// PerNode times are rounded to the nanosecond one by one, so their sum may
// differ from Time − floor by a nanosecond per node.
func Estimate(p *Program, target string) (Cost, error) {
	if p == nil {
		return Cost{}, fmt.Errorf("lower: estimate: nil program; pass one Lower returned: %w", ErrEstimate)
	}
	if target == "" {
		target = p.Target
	}
	fam, ok := families[target]
	if !ok {
		return Cost{}, fmt.Errorf("lower: estimate: no cost model for target %q (known: %v): %w", target, EstimateTargets(), ErrUnsupported)
	}
	prog, err := countNodes(p)
	if err != nil {
		return Cost{}, err
	}
	c := Cost{Target: target, Nodes: len(prog.nodes), PerNode: make([]NodeCost, len(prog.nodes))}
	var chip float64
	var dram int64
	for i, s := range fam.price(prog) {
		n := prog.nodes[i].NodeCost
		n.OnChip, n.Fused = s.onChip, s.fused
		n.Time = seconds(s.seconds)
		chip += s.chip
		dram += s.dram
		c.PerNode[i] = n
		c.Bytes += n.Bytes
		c.OnChip += n.OnChip
		c.Flops += n.Flops
	}
	total := fam.floor + chip
	if fam.sram > 0 {
		// The DRAM stream (inputs, outputs, weights, spills) overlaps the
		// nodes' on-chip work; past the on-chip memory it slows by the
		// reported drop.
		bw := fam.bw
		if float64(prog.weights) > fam.sram {
			bw *= pastSRAM
		}
		total = fam.floor + max(chip, float64(dram)/bw)
	}
	c.Time = seconds(total)
	return c, nil
}

// priced is one node's time and on-chip bytes.
type priced struct {
	seconds float64 // the node's own roofline, DRAM bytes included
	chip    float64 // the same without its DRAM bytes
	dram    int64   // bytes it moves through DRAM
	onChip  int64
	fused   bool
}

// fusable are the elementwise MIL ops the engine can apply to a conv's or
// matmul's result on its way out (a bias, a scale, an activation, a
// residual add), the value between them never stored: those of the
// registry's entries marked fuses, and silu and clip, which no dataflow op
// lowers to.
var fusable = func() map[string]bool {
	m := map[string]bool{"silu": true, "clip": true}
	for _, c := range registry {
		if c.fuses {
			m[c.MIL] = true
		}
	}
	return m
}()

// price places every node's bytes in DRAM or on chip and prices the node.
func (f family) price(prog *counted) []priced {
	out := make([]priced, len(prog.nodes))
	if f.sram <= 0 {
		for i, n := range prog.nodes {
			s := f.nodeSeconds(n.Op, n.Bytes, 0, n.Flops, false)
			out[i] = priced{seconds: s, chip: s, dram: n.Bytes}
		}
		return out
	}
	last := map[string]int{} // the last node that reads each value
	readers := map[string]int{}
	for i, n := range prog.nodes {
		for _, r := range n.reads {
			last[r.name] = i
			readers[r.name]++
		}
	}
	budget := int64(f.sram)
	resident := map[string]int64{} // values on chip, and their bytes
	var live int64
	keep := func(name string, b int64, i int) bool {
		if last[name] <= i || live+b > budget {
			return false
		}
		resident[name] = b
		live += b
		return true
	}
	// chain: the previous node is a conv or matmul, or an op fused into
	// one; fused: values written by one node and read only by the next,
	// in such a chain, which never move.
	chain := false
	fused := map[string]bool{}
	for i, n := range prog.nodes {
		if i > 0 && chain && fusable[n.Op] {
			for _, w := range prog.nodes[i-1].writes {
				if readers[w.name] == 1 && last[w.name] == i && !prog.outputs[w.name] {
					fused[w.name] = true
					out[i].fused = true
				}
			}
		}
		chain = n.Flops > 0 || out[i].fused
	}
	for i, n := range prog.nodes {
		var onChip, moved int64 // moved: the on-chip bytes that take time
		for _, r := range n.reads {
			if fused[r.name] {
				onChip += r.bytes
				continue
			}
			if _, ok := resident[r.name]; ok {
				onChip += r.bytes
				moved += r.bytes
				continue
			}
			// From DRAM: an input or a weight read for the first time, or
			// a spilled intermediate. The first two stay if they fit.
			if r.kind != readValue && r.name != "" {
				keep(r.name, r.bytes, i)
			}
		}
		for _, o := range n.writes {
			switch {
			case fused[o.name]:
				onChip += o.bytes
			case prog.outputs[o.name]:
				keep(o.name, o.bytes, i) // written to DRAM, kept for later readers
			case keep(o.name, o.bytes, i):
				onChip += o.bytes
				moved += o.bytes
			case last[o.name] <= i:
				onChip += o.bytes // never read: written and dropped
				moved += o.bytes
			}
		}
		for name, b := range resident {
			if last[name] <= i {
				delete(resident, name)
				live -= b
			}
		}
		dram := n.Bytes - onChip
		spills := float64(n.Bytes) > f.sram
		out[i] = priced{
			seconds: f.nodeSeconds(n.Op, dram, moved, n.Flops, spills),
			chip:    f.nodeSeconds(n.Op, 0, moved, n.Flops, spills),
			dram:    dram, onChip: onChip, fused: out[i].fused,
		}
	}
	return out
}

// nodeSeconds is one node's roofline time: the slowest of its DRAM
// traffic, its on-chip traffic and its compute at the op's (ramped,
// possibly past-SRAM) peak.
func (f family) nodeSeconds(op string, dram, onChip, flops int64, spills bool) float64 {
	t := float64(dram) / f.bw
	if onChip > 0 {
		t = max(t, float64(onChip)/f.sramBW)
	}
	if flops == 0 {
		return t
	}
	peak := f.peak
	switch {
	case op == "conv" && f.convPeak > 0:
		peak = f.convPeak // a measured ceiling: no ramp
	case f.rampFlops > 0:
		peak *= min(1, math.Pow(float64(flops)/f.rampFlops, f.rampExp))
	}
	if spills && f.sram > 0 {
		peak *= pastSRAM
	}
	return max(t, float64(flops)/peak)
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// bytesPerElement: the model streams every value as fp16.
const bytesPerElement = 2

// operand is one tensor a node reads or writes.
type operand struct {
	name  string // the MIL variable; "" for an inline literal
	bytes int64
	kind  int // readInput, readWeight or readValue
}

// What an operand is: a function input, a constant tensor, or the output
// of an earlier op (or an inline tensor literal, a weight without a name).
const (
	readInput = iota
	readWeight
	readValue
)

// countedNode is one node's counts and the tensors it moves.
type countedNode struct {
	NodeCost
	reads, writes []operand
}

// counted is a parsed program: its nodes in order and the names of the
// function's outputs.
type counted struct {
	nodes   []countedNode
	outputs map[string]bool
	weights int64 // bytes of the constant tensors
}

// countNodes parses p and counts every non-const op of main.
func countNodes(p *Program) (*counted, error) {
	prog, err := mil.Parse(p.MIL)
	if err != nil {
		return nil, fmt.Errorf("lower: estimate: the program's MIL does not parse: %w: %w", err, ErrEstimate)
	}
	if err := prog.Check(); err != nil {
		return nil, fmt.Errorf("lower: estimate: the program's MIL does not check: %w: %w", err, ErrEstimate)
	}
	var fn *mil.Function
	for _, f := range prog.Functions {
		if f.Name == "main" {
			fn = f
		}
	}
	if fn == nil {
		return nil, fmt.Errorf("lower: estimate: the MIL has no function main, the one a device runs: %w", ErrEstimate)
	}
	var blob *mil.BlobFile
	types := make(map[string]mil.Type, len(fn.Inputs)+len(fn.Ops))
	consts := make(map[string]*mil.Literal)
	inputs := make(map[string]bool, len(fn.Inputs))
	for _, v := range fn.Inputs {
		types[v.Name] = v.Type
		inputs[v.Name] = true
	}
	c := &counted{outputs: make(map[string]bool, len(fn.Outputs))}
	for _, o := range fn.Outputs {
		c.outputs[o] = true
	}
	for _, op := range fn.Ops {
		for _, v := range op.Outputs {
			types[v.Name] = v.Type
		}
		if op.Kind == "const" {
			lit, ok := op.Attr("val").(*mil.Literal)
			if !ok || len(op.Outputs) != 1 {
				return nil, fmt.Errorf("lower: estimate: %s: const without a literal val and one output: %w", op.Pos, ErrEstimate)
			}
			if lit.Blob != nil {
				if blob == nil {
					if blob, err = readBlob(p.Blob); err != nil {
						return nil, err
					}
				}
				if err := checkBlob(blob, op.Outputs[0], lit); err != nil {
					return nil, err
				}
			}
			consts[op.Outputs[0].Name] = lit
			if t := op.Outputs[0].Type; floating(t.DType) && len(t.Shape) > 0 {
				c.weights += int64(t.Elements()) * bytesPerElement
			}
			continue
		}
		n, err := countOp(op, types, consts, inputs)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	return c, nil
}

func readBlob(b []byte) (*mil.BlobFile, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("lower: estimate: the MIL names a BLOBFILE weight but the program has no blob; pass the Program with its Blob: %w", ErrEstimate)
	}
	f, err := mil.ReadBlob(b)
	if err != nil {
		return nil, fmt.Errorf("lower: estimate: the program's weight file: %w: %w", err, ErrEstimate)
	}
	return f, nil
}

// checkBlob checks that the blob holds v's data: an entry at the offset,
// of v's dtype and exactly its size.
func checkBlob(f *mil.BlobFile, v mil.Var, lit *mil.Literal) error {
	e, err := f.At(lit.Blob.Offset)
	if err != nil {
		return fmt.Errorf("lower: estimate: const %s: %w; the weight file does not match the MIL: %w", v.Name, err, ErrEstimate)
	}
	want := map[string]mil.BlobDType{"fp16": mil.BlobFP16, "fp32": mil.BlobFP32, "bf16": mil.BlobBF16}[v.Type.DType]
	size := map[string]int{"fp16": 2, "fp32": 4, "bf16": 2}[v.Type.DType]
	if want == 0 || e.DType != want || len(e.Data) != v.Type.Elements()*size {
		return fmt.Errorf("lower: estimate: const %s of type %v: blob entry at offset %d is %v of %d bytes; the weight file does not match the MIL: %w",
			v.Name, v.Type, lit.Blob.Offset, e.DType, len(e.Data), ErrEstimate)
	}
	return nil
}

// floating reports whether values of dtype d are streamed data (fp16 on
// the engine) rather than integer, bool or string parameters.
func floating(d string) bool { return d == "fp16" || d == "fp32" || d == "bf16" || d == "fp64" }

// countOp charges one node: every floating-point operand (a function input
// or op output, or a constant tensor: a weight), every output, and the
// flops of matmul, conv and linear.
func countOp(op *mil.Op, types map[string]mil.Type, consts map[string]*mil.Literal, inputs map[string]bool) (countedNode, error) {
	n := countedNode{NodeCost: NodeCost{Op: op.Kind}}
	if len(op.Outputs) > 0 {
		n.Name = op.Outputs[0].Name
	}
	var visit func(e mil.Expr)
	visit = func(e mil.Expr) {
		switch e := e.(type) {
		case *mil.Ref:
			t, ok := types[e.Name]
			_, isConst := consts[e.Name]
			if isConst && len(t.Shape) == 0 {
				return // a scalar constant is a parameter
			}
			if ok && floating(t.DType) {
				kind := readValue
				switch {
				case isConst:
					kind = readWeight
				case inputs[e.Name]:
					kind = readInput
				}
				n.reads = append(n.reads, operand{name: e.Name, bytes: int64(t.Elements()) * bytesPerElement, kind: kind})
			}
		case *mil.Literal:
			if floating(e.Type.DType) && len(e.Type.Shape) > 0 {
				n.reads = append(n.reads, operand{bytes: int64(e.Type.Elements()) * bytesPerElement, kind: readWeight})
			}
		case *mil.Tuple:
			for _, x := range e.Elems {
				visit(x)
			}
		}
	}
	for _, a := range op.Args {
		visit(a.Value)
	}
	for _, v := range op.Outputs {
		if floating(v.Type.DType) {
			n.writes = append(n.writes, operand{name: v.Name, bytes: int64(v.Type.Elements()) * bytesPerElement, kind: readValue})
		}
	}
	if op.Kind == "slice_by_size" && len(n.writes) == 1 {
		// A slice reads the region it returns, not its whole operand: the
		// packed input surface is sliced into its bands once each, so it is
		// read once in all, not once per band.
		for i := range n.reads {
			if n.reads[i].kind != readWeight {
				n.reads[i].bytes = min(n.reads[i].bytes, n.writes[0].bytes)
			}
		}
	}
	for _, o := range append(n.reads, n.writes...) {
		n.Bytes += o.bytes
	}
	var err error
	n.Flops, err = opFlops(op, types, consts)
	return n, err
}

// opFlops is 2·(output elements)·(contraction length) for matmul, conv and
// linear: every output element is one dot product of that length. Other
// ops count 0.
func opFlops(op *mil.Op, types map[string]mil.Type, consts map[string]*mil.Literal) (int64, error) {
	shape := func(arg string) ([]int, bool) {
		r, ok := op.Arg(arg).(*mil.Ref)
		if !ok {
			if l, ok := op.Arg(arg).(*mil.Literal); ok {
				return l.Type.Shape, true
			}
			return nil, false
		}
		t, ok := types[r.Name]
		return t.Shape, ok
	}
	fail := func(format string, args ...any) (int64, error) {
		return 0, fmt.Errorf("lower: estimate: %s: %s %s: %s: %w", op.Pos, op.Kind, op.Name(), fmt.Sprintf(format, args...), ErrEstimate)
	}
	if len(op.Outputs) != 1 {
		return 0, nil
	}
	outElems := int64(op.Outputs[0].Type.Elements())
	var k int
	switch op.Kind {
	case "matmul":
		x, ok := shape("x")
		if !ok || len(x) == 0 {
			return fail("operand x is missing or a scalar")
		}
		tx, err := boolArg(op, "transpose_x", consts)
		if err != nil {
			return fail("%v", err)
		}
		switch {
		case len(x) == 1:
			k = x[0]
		case tx:
			k = x[len(x)-2]
		default:
			k = x[len(x)-1]
		}
	case "conv":
		w, ok := shape("weight")
		if !ok || len(w) < 3 {
			return fail("weight is missing or of rank below 3")
		}
		k = 1
		for _, d := range w[1:] { // Cin/groups · kh · kw
			k *= d
		}
	case "linear":
		w, ok := shape("weight")
		if !ok || len(w) != 2 {
			return fail("weight is missing or not of rank 2")
		}
		k = w[1]
	default:
		return 0, nil
	}
	return 2 * outElems * int64(k), nil
}

// boolArg is the value of a bool parameter given as a const or inline;
// false when absent.
func boolArg(op *mil.Op, name string, consts map[string]*mil.Literal) (bool, error) {
	var lit *mil.Literal
	switch e := op.Arg(name).(type) {
	case nil:
		return false, nil
	case *mil.Literal:
		lit = e
	case *mil.Ref:
		lit = consts[e.Name]
	}
	if lit == nil || len(lit.Bools) != 1 {
		return false, fmt.Errorf("%s is not a constant bool", name)
	}
	return lit.Bools[0], nil
}
