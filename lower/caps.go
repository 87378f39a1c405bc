package lower

import (
	"sort"

	"github.com/anemone-go/anemone/dataflow"
)

// Status says how a target runs an op.
type Status int

// Statuses, from the hardware reports collected in ANE_FACTS §2.
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
// runs one dataflow op.
type Capability struct {
	Op       dataflow.Op
	MIL      string // the MIL op emitted (for Decomposed: what it becomes)
	MinRank  int    // smallest operand rank the op takes on the device
	MaxRank  int    // largest
	Status   Status // on every target unless Except says otherwise
	Except   map[string]Status
	Via      string // for Decomposed: the pass that rewrites it
	Verified bool   // reported compiling on hardware (ANE_FACTS §2)
	Notes    string
}

// StatusOn is the op's status on the named target.
func (c Capability) StatusOn(target string) Status {
	if s, ok := c.Except[target]; ok {
		return s
	}
	return c.Status
}

// registry is the capability data, one entry per dataflow op. Ops marked
// Verified were reported compiling on hardware; the others follow MIL's
// definition and await a device run.
var registry = []Capability{
	{Op: dataflow.OpAdd, MIL: "add", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpSub, MIL: "sub", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpMul, MIL: "mul", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpDiv, MIL: "real_div", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpPow, MIL: "pow", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpMaximum, MIL: "maximum", MaxRank: 5, Status: Native, Notes: "NaN handling unconfirmed"},
	{Op: dataflow.OpMinimum, MIL: "minimum", MaxRank: 5, Status: Native, Notes: "NaN handling unconfirmed"},
	{Op: dataflow.OpNeg, MIL: "mul", MaxRank: 5, Status: Decomposed, Via: "neg-to-mul", Notes: "MIL has no neg; x·(−1) is exact"},
	{Op: dataflow.OpAbs, MIL: "abs", MaxRank: 5, Status: Native},
	{Op: dataflow.OpSquare, MIL: "mul", MaxRank: 5, Status: Decomposed, Via: "square-to-mul"},
	{Op: dataflow.OpSqrt, MIL: "sqrt", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpRsqrt, MIL: "pow", MaxRank: 5, Status: Decomposed, Via: "rsqrt-to-pow", Notes: "rsqrt is rejected by the ANE compiler (Orion #17)"},
	{Op: dataflow.OpExp, MIL: "exp", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpLog, MIL: "log", MaxRank: 5, Status: Native, Verified: true, Notes: "emitted with epsilon = 0"},
	{Op: dataflow.OpTanh, MIL: "tanh", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpSigmoid, MIL: "sigmoid", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpRelu, MIL: "relu", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpGelu, MIL: "gelu", MaxRank: 5, Status: Native, Verified: true, Notes: "mode is required on the device"},
	{Op: dataflow.OpMatMul, MIL: "matmul", MinRank: 2, MaxRank: 5, Status: Native, Verified: true, Notes: "a constant 2-D right operand becomes a 1×1 conv"},
	{Op: dataflow.OpConv2D, MIL: "conv", MinRank: 4, MaxRank: 4, Status: Native, Verified: true},
	{Op: dataflow.OpReduceSum, MIL: "reduce_sum", MaxRank: 5, Status: Native, Verified: true, Notes: "fp16 accumulator; a last-axis sum becomes a matmul with ones"},
	{Op: dataflow.OpReduceMean, MIL: "reduce_mean", MaxRank: 5, Status: Native, Verified: true, Notes: "fp16 accumulator"},
	{Op: dataflow.OpReduceMax, MIL: "reduce_max", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpSoftmax, MIL: "softmax", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpLayerNorm, MIL: "layer_norm", MaxRank: 5, Status: Native, Verified: true, Notes: "gamma and beta must be constants"},
	{Op: dataflow.OpReshape, MIL: "reshape", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpTranspose, MIL: "transpose", MaxRank: 5, Status: Native, Verified: true},
	{Op: dataflow.OpConcat, MIL: "concat", MaxRank: 5, Status: Native, Verified: true, Notes: "some routes take only 2 inputs"},
	{Op: dataflow.OpSlice, MIL: "slice_by_size", MaxRank: 5, Status: Native, Verified: true, Notes: "on A13/A14-class engines (M1) a slice at a width (last-axis) offset saturates |x| > 4094: slice along rows where values can be large"},
	{Op: dataflow.OpPad, MIL: "pad", MaxRank: 5, Status: Native, Notes: "constant mode"},
}

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
