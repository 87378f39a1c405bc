package lower

import (
	"sort"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower/mil"
)

// Status says how a target runs an op.
type Status int

// Statuses, from public reports of what the engine compiles.
const (
	// Native: the op is emitted as the MIL op named in the capability.
	Native Status = iota + 1
	// Decomposed: a lowering pass rewrites it into native ops first.
	Decomposed
	// Rejected: the target cannot run it; lowering fails with ErrUnsupported.
	Rejected
)

func (s Status) String() string {
	switch s {
	case Native:
		return "native"
	case Decomposed:
		return "decomposed"
	case Rejected:
		return "rejected"
	}
	return "unknown"
}

// Capability is one entry of the op capability registry: how each target
// runs one dataflow op, and what public reports say about it on the
// engine.
type Capability struct {
	Op       dataflow.Op
	MIL      string // the MIL op emitted (for Decomposed: what it becomes)
	MinRank  int    // smallest operand rank the op takes on the device
	MaxRank  int    // largest
	Status   Status // on every target unless Except says otherwise
	Except   map[string]Status
	Via      string // for Decomposed: the pass that rewrites it
	Verified bool   // reported compiling on hardware (Evidence says where)
	Notes    string

	// Evidence says where the MIL op is reported compiling on the engine
	// (which kind of project, which chip when known); empty when no report
	// is known and the entry follows MIL's definition alone.
	Evidence string
	// RejectedBy says where the op, or a form of it, is reported rejected
	// or failing; empty when no such report is known.
	RejectedBy string
	// Caveats are the numeric pitfalls reported on the engine: table-based
	// transcendentals, the cliffs below fp16's range. The simulator models
	// the ones it can (see package shim/sim).
	Caveats string

	// args are the constant arguments an elementwise op (one of
	// dataflow.UnaryOps or BinaryOps) is emitted with besides its
	// operands, written before them: log's epsilon, gelu's mode. Nil for
	// none. Every other fact of such an op's emission is in the entry:
	// the MIL name, and the operands x (and y).
	args func(a dataflow.Attrs) []constArg
	// fuses: the engine applies the MIL op to a conv's or matmul's result
	// on its way out, the value between them never stored (Estimate).
	fuses bool
}

// constArg is one constant argument of an emitted op: the emitter writes
// it as a const named after the op's output and the argument.
type constArg struct {
	name string
	lit  *mil.Literal
}

// StatusOn is the op's status on the named target.
func (c Capability) StatusOn(target string) Status {
	if s, ok := c.Except[target]; ok {
		return s
	}
	return c.Status
}

// Evidence phrases shared by several entries.
const (
	seenCompiling = "compiled on the engine in the MIL programs of several independent public projects"
	measured      = "; its numerics measured on M1 and M5 by a public numerics study"
	noReport      = ""
	tableBased    = "table-based on the engine (not correctly rounded); the narrow simulator gives it a relative error of up to 2⁻¹⁰"
	noNaN         = "NaN is not propagated (replaced silently) by the probed ops"
	matmulCliff   = "an output above 32752 in magnitude becomes ±Inf, for every contraction size (differential fuzzing on M2 Pro and M5); keep outputs below 2¹⁴"
)

// registry is the capability data, one entry per dataflow op. Ops marked
// Verified were reported compiling on hardware; the others follow MIL's
// definition and await a device run.
var registry = []Capability{
	{Op: dataflow.OpAdd, MIL: "add", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling, fuses: true},
	{Op: dataflow.OpSub, MIL: "sub", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling, fuses: true},
	{Op: dataflow.OpMul, MIL: "mul", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling, fuses: true,
		RejectedBy: "a mul of a reduction by a constant 0 is reported to fail to compile; the lowering never emits a multiplication by a constant zero"},
	{Op: dataflow.OpDiv, MIL: "real_div", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling, fuses: true},
	{Op: dataflow.OpPow, MIL: "pow", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling,
		Caveats: "table-based on M1 (not correctly rounded); the narrow simulator gives it a relative error of up to 2⁻¹⁰"},
	{Op: dataflow.OpMaximum, MIL: "maximum", MaxRank: 5, Status: Native, Notes: "NaN handling unconfirmed", Evidence: noReport, Caveats: noNaN, fuses: true},
	{Op: dataflow.OpMinimum, MIL: "minimum", MaxRank: 5, Status: Native, Notes: "NaN handling unconfirmed", Evidence: noReport, Caveats: noNaN, fuses: true},
	{Op: dataflow.OpNeg, MIL: "mul", MaxRank: 5, Status: Decomposed, Via: "neg-to-mul", Notes: "MIL has no neg; x·(−1) is exact", Evidence: seenCompiling},
	{Op: dataflow.OpAbs, MIL: "abs", MaxRank: 5, Status: Native, Evidence: noReport},
	{Op: dataflow.OpSquare, MIL: "mul", MaxRank: 5, Status: Decomposed, Via: "square-to-mul", Evidence: seenCompiling},
	{Op: dataflow.OpSqrt, MIL: "sqrt", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling,
		Caveats: "table-based on M1 (not correctly rounded); the narrow simulator gives it a relative error of up to 2⁻¹⁰"},
	{Op: dataflow.OpRsqrt, MIL: "pow", MaxRank: 5, Status: Decomposed, Via: "rsqrt-to-pow", Notes: "rsqrt is rejected by the ANE compiler; pow(x, −0.5) replaces it",
		Evidence: seenCompiling + " (as pow)", RejectedBy: "the native rsqrt is reported rejected by the compiler (one project's constraint list)",
		Caveats: "table-based on M1, like pow"},
	{Op: dataflow.OpExp, MIL: "exp", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling,
		Caveats: "table-based on M1 (not correctly rounded); the narrow simulator gives it a relative error of up to 2⁻¹⁰"},
	{Op: dataflow.OpLog, MIL: "log", MaxRank: 5, Status: Native, Verified: true, Notes: "emitted with epsilon = 0",
		Evidence: seenCompiling + " (with an epsilon argument)", Caveats: tableBased,
		args: func(dataflow.Attrs) []constArg { return []constArg{{"epsilon", mil.FP16(0)}} }},
	{Op: dataflow.OpTanh, MIL: "tanh", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling, Caveats: tableBased, fuses: true},
	{Op: dataflow.OpSigmoid, MIL: "sigmoid", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling, Caveats: tableBased, fuses: true},
	{Op: dataflow.OpRelu, MIL: "relu", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling, fuses: true},
	{Op: dataflow.OpGelu, MIL: "gelu", MaxRank: 5, Status: Native, Verified: true, Notes: "mode is required on the device",
		Evidence:   "compiled by a public engine library (with its mode argument)",
		RejectedBy: "rejected in another public project's report: whether it compiles depends on the route or the OS version",
		Caveats:    "measured about 0.08 relative error on M1; the narrow simulator gives it up to 2⁻¹⁰",
		fuses:      true, args: geluArgs},
	{Op: dataflow.OpMatMul, MIL: "matmul", MinRank: 2, MaxRank: 5, Status: Native, Verified: true, Notes: "a constant 2-D right operand becomes a 1×1 conv",
		Evidence: seenCompiling + " (with transpose_x and transpose_y)" + measured,
		Caveats:  matmulCliff + "; two transpose-fed matmuls were reported to give Inf on M5 with every partial sum below 17321 (open)"},
	{Op: dataflow.OpConv2D, MIL: "conv", MinRank: 4, MaxRank: 4, Status: Native, Verified: true,
		Evidence:   seenCompiling + "; a 1×1 conv is the usual linear layer, reported about three times faster than matmul" + measured,
		RejectedBy: "a conv whose weight is a program input is reported rejected at batch > 1; kernels wider than 13 (M1) or 15 fail",
		Caveats:    "assumed to share matmul's cliff: " + matmulCliff},
	{Op: dataflow.OpReduceSum, MIL: "reduce_sum", MaxRank: 5, Status: Native, Verified: true, Notes: "fp16 accumulator; a last-axis sum becomes a matmul with ones",
		Evidence: seenCompiling + measured,
		Caveats:  "accumulates in fp16: a sum of 4096 ones stalls at 2048, integer totals above 2048 lose exactness (M2 Pro, M5)"},
	{Op: dataflow.OpReduceMean, MIL: "reduce_mean", MaxRank: 5, Status: Native, Verified: true, Notes: "fp16 accumulator",
		Evidence: seenCompiling, Caveats: "accumulates in fp16, as reduce_sum"},
	{Op: dataflow.OpReduceMax, MIL: "reduce_max", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling, Caveats: noNaN},
	{Op: dataflow.OpSoftmax, MIL: "softmax", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling,
		RejectedBy: "softmax over a non-power-of-two size is reported rejected in one project",
		Caveats:    "uses exp, which is table-based on the engine"},
	{Op: dataflow.OpLayerNorm, MIL: "layer_norm", MaxRank: 5, Status: Native, Verified: true, Notes: "gamma and beta must be constants", Evidence: seenCompiling},
	{Op: dataflow.OpReshape, MIL: "reshape", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling,
		RejectedBy: "a reshape to rank above 5 is reported rejected"},
	{Op: dataflow.OpTranspose, MIL: "transpose", MaxRank: 5, Status: Native, Verified: true, Evidence: seenCompiling},
	{Op: dataflow.OpConcat, MIL: "concat", MaxRank: 5, Status: Native, Verified: true, Notes: "emitted with two inputs: wider concats become binary trees",
		Evidence:   seenCompiling + "; 3- to 5-input channel concats compiled on M4 in one training project",
		RejectedBy: "more than two inputs rejected in two other projects (one says it expects exactly two, one rejects concat outright): version-dependent"},
	{Op: dataflow.OpSlice, MIL: "slice_by_size", MaxRank: 5, Status: Native, Verified: true, Notes: "the lowering slices at channel offsets where values can be large",
		Evidence: seenCompiling + " (every public program uses slice_by_size, none slice_by_index)",
		Caveats:  "a slice at a nonzero last-axis (width) offset saturates |x| > 4094 to ±Inf before A16 (M1–M4); M5 has no such clamp"},
	{Op: dataflow.OpPad, MIL: "pad", MaxRank: 5, Status: Native, Notes: "constant mode", Evidence: noReport},
}

// geluArgs: the device requires gelu's mode.
func geluArgs(a dataflow.Attrs) []constArg {
	mode := a.Gelu
	if mode == "" {
		mode = dataflow.GeluExact
	}
	return []constArg{{"mode", mil.String(string(mode))}}
}

// Rejection is a MIL op, or a form of one, that public reports say the
// engine rejects or mishandles, with no dataflow op of its own.
type Rejection struct {
	MIL    string // the MIL op
	Where  string // where it is reported failing
	Detail string // how it fails, and what to use instead
}

var rejections = []Rejection{
	{"cast", "M1 and M2", "rejected; programs compute in fp16 throughout"},
	{"concat", "two public projects", "more than two inputs rejected; nest binary concats"},
	{"cumsum", "every report", "no hardware path; use matmul with a triangular ones matrix"},
	{"mul", "one public project", "mul(reduce_output, 0) fails to compile; drop the term"},
	{"nan_to_num", "every report", "broken: NaN is not propagated anyway"},
	{"reduce_prod", "every report", "no hardware path"},
	{"rsqrt", "one public project's constraint list", "rejected; use pow(x, −0.5)"},
	{"scaled_dot_product_attention", "M-series", "its mask is ignored; about 3e-3 error up to a sequence of 2048, garbage at 4096"},
	{"tile", "one public project", "corrupts the engine's state until the process exits; use concat"},
}

// Rejections returns the MIL ops reported rejected or broken on the
// engine that the registry has no entry for, sorted by MIL name.
func Rejections() []Rejection { return append([]Rejection(nil), rejections...) }

var registryByOp = func() map[dataflow.Op]Capability {
	m := make(map[dataflow.Op]Capability, len(registry))
	for _, c := range registry {
		m[c.Op] = c
	}
	return m
}()

// Capabilities returns the registry, sorted by op name.
func Capabilities() []Capability {
	out := append([]Capability(nil), registry...)
	sort.Slice(out, func(i, j int) bool { return out[i].Op < out[j].Op })
	return out
}

// CapabilityOf returns the registry entry for op.
func CapabilityOf(op dataflow.Op) (Capability, bool) {
	c, ok := registryByOp[op]
	return c, ok
}
