package sim

import (
	"slices"
)

// opSpecs lists every supported op with its keyword parameters (names as in
// MIL's op definitions) and how to build its kernel. The elementwise ops
// are registered from their entries in unaryOps and binaryOps
// (elementwise.go).
var opSpecs map[string]opSpec

func init() {
	x := param{"x", kData, true}
	opSpecs = map[string]opSpec{
		"matmul": {
			params: []param{x, {"y", kData, true}, {"transpose_x", kBool, false}, {"transpose_y", kBool, false}},
			build:  buildMatmul,
		},
		"conv": {
			params: []param{x, {"weight", kData, true}, {"bias", kData, false}, {"strides", kInts, false},
				{"pad_type", kString, false}, {"pad", kInts, false}, {"dilations", kInts, false}, {"groups", kInt, false}},
			build: buildConv,
		},

		"reduce_sum":  reduceSpec(redSum),
		"reduce_mean": reduceSpec(redMean),
		"reduce_max":  reduceSpec(redMax),
		"softmax": {
			params: []param{x, {"axis", kInt, false}},
			build:  buildSoftmax,
		},
		"layer_norm": {
			params: []param{x, {"axes", kInts, false}, {"gamma", kHalfTensor, false}, {"beta", kHalfTensor, false}, {"epsilon", kHalf, false}},
			build:  buildLayerNorm,
		},

		"reshape": {
			params: []param{x, {"shape", kInts, true}},
			build:  buildReshape,
		},
		"transpose": {
			params: []param{x, {"perm", kInts, true}},
			build:  buildTranspose,
		},
		"concat": {
			params: []param{{"values", kTuple, true}, {"axis", kInt, true}, {"interleave", kBool, false}},
			build:  buildConcat,
		},
		"slice_by_size": {
			params: []param{x, {"begin", kInts, true}, {"size", kInts, true}},
			build:  buildSlice,
		},
		"pad": {
			params: []param{x, {"pad", kInts, true}, {"mode", kString, false}, {"constant_val", kHalf, false}},
			build:  buildPad,
		},
	}
	for name, op := range unaryOps {
		register(name, op.spec())
	}
	for name, op := range binaryOps {
		register(name, op.spec())
	}
}

// register adds an elementwise op's spec to opSpecs; a name given twice is
// a bug of the tables.
func register(name string, s opSpec) {
	if _, dup := opSpecs[name]; dup {
		panic("sim: op " + name + " is registered twice")
	}
	opSpecs[name] = s
}

// SupportedOps returns the names of the MIL ops the simulator executes,
// sorted (const included).
func SupportedOps() []string {
	names := []string{"const"}
	for n := range opSpecs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
