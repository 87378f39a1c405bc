package sim

import (
	"math"
	"slices"
)

// The elementwise ops. Each one's simulator facts — its parameters, its
// argument checks, its fp16 kernels under both numerics models and, for a
// table-based op, its float64 value and its key in lutError — are its
// entry in unaryOps or binaryOps; ops.go registers every entry in opSpecs,
// so adding such an op is its entry. The kernels are per-row functions:
// their inner loops call no function value.

// unaryArgs are a unary op's arguments besides x, read at compile time.
type unaryArgs struct {
	eps  float64 // log's epsilon: default 0 (MIL's default 1e-45 is 0 in fp16)
	mode string  // gelu's mode: default geluExact
	key  uint32  // the op's lutError key tag (unaryOp.lut)
}

// unaryOp is the simulator's descriptor of one elementwise unary MIL op.
type unaryOp struct {
	// params are the op's parameters besides x.
	params []param
	// check validates the arguments besides x (nil: none).
	check func(a *args, u *unaryArgs) error
	// row computes out[i] = f(x[i]) rounded to fp16, for len(x) ≥
	// len(out): the op under Wide, and under Narrow too unless the op is
	// table-based.
	row func(out, x []float32, u *unaryArgs)

	// A table-based op (lut ≠ 0) carries the table error of lutError
	// under Narrow.
	//
	// lut is its key tag, in the top four bits: distinct among the
	// table-based ops, unary and binary. Changing it changes the Narrow
	// model's outputs.
	lut uint32
	// exact is its float64 value: row rounds exact(x) to float32, then to
	// fp16.
	exact func(x float64, u *unaryArgs) float64
	// lutRow is row under Narrow: exact(x) times 1 + lutError(u.key ^
	// bits(x)>>13), then float32, then fp16.
	lutRow func(out, x []float32, u *unaryArgs)
}

const (
	geluExact   = "EXACT"
	geluTanh    = "TANH_APPROXIMATION"
	geluSigmoid = "SIGMOID_APPROXIMATION"
)

// unaryOps holds every elementwise unary MIL op's descriptor.
var unaryOps = map[string]*unaryOp{
	"abs": {row: func(out, x []float32, _ *unaryArgs) {
		x = x[:len(out)]
		for i, v := range x {
			out[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		}
	}},
	"square": {row: func(out, x []float32, _ *unaryArgs) {
		x = x[:len(out)]
		for i, v := range x {
			out[i] = r16(v * v)
		}
	}},
	"relu": {row: func(out, x []float32, _ *unaryArgs) {
		x = x[:len(out)]
		for i, v := range x {
			if v > 0 {
				out[i] = v
			} else {
				out[i] = 0
			}
		}
	}},
	"sqrt": {
		lut:   2 << 28,
		exact: func(x float64, _ *unaryArgs) float64 { return math.Sqrt(x) },
		// float64 → float32 is innocuous for √ (53 ≥ 2·24 + 2), and
		// float32 → fp16 likewise (24 ≥ 2·11 + 2).
		row: func(out, x []float32, _ *unaryArgs) {
			x = x[:len(out)]
			for i, v := range x {
				out[i] = r16(f32(math.Sqrt(float64(v))))
			}
		},
		lutRow: func(out, x []float32, u *unaryArgs) {
			x, key := x[:len(out)], u.key
			for i, v := range x {
				b := math.Float32bits(v)
				out[i] = r16(f32(math.Sqrt(lutArg(b)) * (1 + lutError(key^b>>13))))
			}
		},
	},
	"exp": {
		lut:   3 << 28,
		exact: func(x float64, _ *unaryArgs) float64 { return math.Exp(x) },
		row: func(out, x []float32, _ *unaryArgs) {
			x = x[:len(out)]
			for i, v := range x {
				out[i] = r16(f32(math.Exp(float64(v))))
			}
		},
		lutRow: func(out, x []float32, u *unaryArgs) {
			x, key := x[:len(out)], u.key
			for i, v := range x {
				b := math.Float32bits(v)
				out[i] = r16(f32(math.Exp(lutArg(b)) * (1 + lutError(key^b>>13))))
			}
		},
	},
	"log": {
		params: []param{{"epsilon", kHalf, false}},
		lut:    4 << 28,
		exact:  func(x float64, u *unaryArgs) float64 { return math.Log(x + u.eps) },
		row: func(out, x []float32, u *unaryArgs) {
			x, eps := x[:len(out)], u.eps
			for i, v := range x {
				out[i] = r16(f32(math.Log(float64(v) + eps))) // the fp16 sum is exact in float64
			}
		},
		lutRow: func(out, x []float32, u *unaryArgs) {
			x, eps, key := x[:len(out)], u.eps, u.key
			for i, v := range x {
				b := math.Float32bits(v)
				out[i] = r16(f32(math.Log(lutArg(b)+eps) * (1 + lutError(key^b>>13))))
			}
		},
	},
	"tanh": {
		lut:   5 << 28,
		exact: func(x float64, _ *unaryArgs) float64 { return math.Tanh(x) },
		row: func(out, x []float32, _ *unaryArgs) {
			x = x[:len(out)]
			for i, v := range x {
				out[i] = r16(f32(math.Tanh(float64(v))))
			}
		},
		lutRow: func(out, x []float32, u *unaryArgs) {
			x, key := x[:len(out)], u.key
			for i, v := range x {
				b := math.Float32bits(v)
				out[i] = r16(f32(math.Tanh(lutArg(b)) * (1 + lutError(key^b>>13))))
			}
		},
	},
	"sigmoid": {
		lut:   6 << 28,
		exact: func(x float64, _ *unaryArgs) float64 { return sigmoid(x) },
		row: func(out, x []float32, _ *unaryArgs) {
			x = x[:len(out)]
			for i, v := range x {
				out[i] = r16(f32(sigmoid(float64(v))))
			}
		},
		lutRow: func(out, x []float32, u *unaryArgs) {
			x, key := x[:len(out)], u.key
			for i, v := range x {
				b := math.Float32bits(v)
				out[i] = r16(f32(sigmoid(lutArg(b)) * (1 + lutError(key^b>>13))))
			}
		},
	},
	"gelu": {
		params: []param{{"mode", kString, true}},
		check: func(a *args, u *unaryArgs) error {
			if m := u.mode; m != geluExact && m != geluTanh && m != geluSigmoid {
				return a.errorf("mode %q is not one of %s, %s, %s", m, geluExact, geluTanh, geluSigmoid)
			}
			return nil
		},
		lut:   8 << 28,
		exact: func(x float64, u *unaryArgs) float64 { return gelu(x, u.mode) },
		row: func(out, x []float32, u *unaryArgs) {
			x, mode := x[:len(out)], u.mode
			for i, v := range x {
				out[i] = r16(f32(gelu(float64(v), mode)))
			}
		},
		lutRow: func(out, x []float32, u *unaryArgs) {
			x, mode, key := x[:len(out)], u.mode, u.key
			for i, v := range x {
				b := math.Float32bits(v)
				out[i] = r16(f32(gelu(lutArg(b), mode) * (1 + lutError(key^b>>13))))
			}
		},
	},
}

// spec is the op's registration: x, then its own parameters.
func (op *unaryOp) spec() opSpec {
	return opSpec{params: append([]param{{"x", kData, true}}, op.params...), build: op.build}
}

func (op *unaryOp) build(c *compiler, a *args) (built, error) {
	x := a.data("x")
	xs := x.slot
	u := &unaryArgs{eps: float64(a.half("epsilon", 0)), mode: a.str("mode", geluExact), key: op.lut}
	if op.check != nil {
		if err := op.check(a, u); err != nil {
			return built{}, err
		}
	}
	return built{shape: x.shape, run: func(b [][]float32, out []float32, narrow bool) {
		op.apply(out, b[xs], u, narrow)
	}}, nil
}

// apply computes out[i] = f(x[i]) under Narrow (narrow) or Wide.
func (op *unaryOp) apply(out, x []float32, u *unaryArgs, narrow bool) {
	if narrow && op.lutRow != nil {
		op.lutRow(out, x, u)
		return
	}
	op.row(out, x, u)
}

// f32 rounds a float64 to float32: a transcendental's float32 result.
func f32(x float64) float32 { return float32(x) }

// lutArg is a lutRow's operand as a float64, converted from its bits b
// (which the row reads first, for the key): so that the operand's float
// register is free when it is converted, and the compiler converts it in
// place. On amd64 a conversion into another register depends on that
// register's previous value (CVTSS2SD keeps its upper half), which chains
// the row's iterations: twice as slow for sqrt, exp and sigmoid.
func lutArg(b uint32) float64 { return float64(math.Float32frombits(b)) }

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func gelu(x float64, mode string) float64 {
	switch mode {
	case geluTanh:
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	case geluSigmoid:
		return x / (1 + math.Exp(-1.702*x))
	}
	return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
}

// lutErrorMax bounds the table error of the Narrow model: 2⁻¹⁰ relative.
const lutErrorMax = 0x1p-10

// lutError is the Narrow model's relative error of a table-based
// transcendental, a deterministic function of key (the op's tag and the
// fp16 bits of its operands): a multiple of 2⁻²⁰ in [−2⁻¹⁰, 2⁻¹⁰], spread
// by a 32-bit integer hash (multiply–xorshift rounds) so that neighbouring
// operands get unrelated errors. The same program on the same inputs gives
// the same outputs on every run and machine.
func lutError(key uint32) float64 {
	h := key * 0x9e3779b1
	h ^= h >> 15
	h *= 0x85ebca77
	h ^= h >> 13
	h *= 0xc2b2ae3d
	h ^= h >> 16
	return float64(int(h%2049)-1024) * 0x1p-20
}

// binaryOp is the simulator's descriptor of one elementwise binary MIL op,
// out = x ∘ y with broadcasting. The float32 result of +, −, ×, ÷ on fp16
// operands is the exact result rounded to 24 bits, and 24 ≥ 2·11 + 2, so
// rounding it again to fp16 gives the exact result rounded once.
type binaryOp struct {
	// check validates the operands (nil: none).
	check func(a *args, x, y *value) error
	// row computes out[i] = x[i·xs] ∘ y[i·ys] rounded to fp16, for any
	// strides: the op under Wide, and under Narrow too unless the op is
	// table-based.
	row func(out, x []float32, xs int, y []float32, ys int)
	// vv, vs and sv are row for two full rows (xs = ys = 1), a full row and
	// a scalar (ys = 0) and a scalar and a full row (xs = 0), written out
	// without index arithmetic for the common layouts; nil leaves the
	// layout to row. Their rounding takes the split (see split) for
	// results that are zero or in fp16's normal range, behind a branch
	// that is well predicted when most results are, and r16 for the
	// others: it is r16 written out, because the two together are too
	// large to inline.
	vv func(out, x, y []float32)
	vs func(out, x []float32, y float32)
	sv func(out []float32, x float32, y []float32)

	// A table-based op (lut ≠ 0) carries the table error of lutError
	// under Narrow; lut, exact and lutRow are as for unaryOp, the key
	// holding both operands' bits.
	lut    uint32
	exact  func(x, y float64) float64
	lutRow func(key uint32, out, x []float32, xs int, y []float32, ys int)
}

// binaryOps holds every elementwise binary MIL op's descriptor.
var binaryOps = map[string]*binaryOp{
	"add": {
		row: func(out, x []float32, xs int, y []float32, ys int) {
			for i := range out {
				out[i] = r16(x[i*xs] + y[i*ys])
			}
		},
		vv: func(out, x, y []float32) {
			x, y = x[:len(out)], y[:len(out)]
			for i, v := range x {
				d := v + y[i]
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
		vs: func(out, x []float32, y float32) {
			x = x[:len(out)]
			for i, v := range x {
				d := v + y
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
		sv: func(out []float32, x float32, y []float32) {
			y = y[:len(out)]
			for i, v := range y {
				d := x + v
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
	},
	"sub": {
		row: func(out, x []float32, xs int, y []float32, ys int) {
			for i := range out {
				out[i] = r16(x[i*xs] - y[i*ys])
			}
		},
		vv: func(out, x, y []float32) {
			x, y = x[:len(out)], y[:len(out)]
			for i, v := range x {
				d := v - y[i]
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
		vs: func(out, x []float32, y float32) {
			x = x[:len(out)]
			for i, v := range x {
				d := v - y
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
		sv: func(out []float32, x float32, y []float32) {
			y = y[:len(out)]
			for i, v := range y {
				d := x - v
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
	},
	"mul": {
		check: func(a *args, x, y *value) error {
			for _, v := range []*value{x, y} {
				if v.isConst && !slices.ContainsFunc(v.halfs, func(h float32) bool { return h != 0 }) {
					return unsupportedf(a.op.Pos, "mul: %q is a constant zero: multiplying by zero is reported to fail to compile on the engine (mul(reduce_output, 0)); drop the term instead", v.name)
				}
			}
			return nil
		},
		row: func(out, x []float32, xs int, y []float32, ys int) {
			for i := range out {
				out[i] = r16(x[i*xs] * y[i*ys])
			}
		},
		vv: func(out, x, y []float32) {
			x, y = x[:len(out)], y[:len(out)]
			for i, v := range x {
				d := float32(v * y[i])
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
		vs: func(out, x []float32, y float32) {
			x = x[:len(out)]
			for i, v := range x {
				d := float32(v * y)
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
		sv: func(out []float32, x float32, y []float32) {
			y = y[:len(out)]
			for i, v := range y {
				d := float32(x * v)
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
	},
	"real_div": {
		row: func(out, x []float32, xs int, y []float32, ys int) {
			for i := range out {
				out[i] = r16(x[i*xs] / y[i*ys])
			}
		},
		vv: func(out, x, y []float32) {
			x, y = x[:len(out)], y[:len(out)]
			for i, v := range x {
				d := v / y[i]
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
		vs: func(out, x []float32, y float32) {
			x = x[:len(out)]
			for i, v := range x {
				d := v / y
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
		sv: func(out []float32, x float32, y []float32) {
			y = y[:len(out)]
			for i, v := range y {
				d := x / v
				if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
					t := float32(d * 8193)
					out[i] = t - float32(t-d)
				} else {
					out[i] = r16(d)
				}
			}
		},
	},
	"pow": {
		lut:   7 << 28,
		exact: math.Pow,
		row: func(out, x []float32, xs int, y []float32, ys int) {
			for i := range out {
				out[i] = r16(float32(math.Pow(float64(x[i*xs]), float64(y[i*ys]))))
			}
		},
		lutRow: func(key uint32, out, x []float32, xs int, y []float32, ys int) {
			for i := range out {
				a, b := x[i*xs], y[i*ys]
				e := lutError(key ^ math.Float32bits(a)>>13<<16 ^ math.Float32bits(b)>>13)
				out[i] = r16(f32(math.Pow(float64(a), float64(b)) * (1 + e)))
			}
		},
	},
	"maximum": {row: func(out, x []float32, xs int, y []float32, ys int) {
		for i := range out {
			a, b := x[i*xs], y[i*ys]
			if a > b {
				out[i] = a
			} else {
				out[i] = b
			}
		}
	}},
	"minimum": {row: func(out, x []float32, xs int, y []float32, ys int) {
		for i := range out {
			a, b := x[i*xs], y[i*ys]
			if a > b {
				out[i] = b
			} else {
				out[i] = a
			}
		}
	}},
}

// spec is the op's registration: operands x and y.
func (op *binaryOp) spec() opSpec {
	return opSpec{params: []param{{"x", kData, true}, {"y", kData, true}}, build: op.build}
}

func (op *binaryOp) build(c *compiler, a *args) (built, error) {
	x, y := a.data("x"), a.data("y")
	if op.check != nil {
		if err := op.check(a, x, y); err != nil {
			return built{}, err
		}
	}
	shape, ok := broadcastShapes(x.shape, y.shape)
	if !ok {
		return built{}, a.errorf("shapes %s and %s do not broadcast", shapeString(x.shape), shapeString(y.shape))
	}
	n := numel(shape)
	xs, ys := x.slot, y.slot
	// One row when each operand is either the full shape or a single
	// element; otherwise one row per index of all but the last dimension.
	xFull, yFull := numel(x.shape) == n, numel(y.shape) == n
	if (xFull || numel(x.shape) == 1) && (yFull || numel(y.shape) == 1) {
		xl, yl := b2i(xFull), b2i(yFull)
		return built{shape: shape, run: func(b [][]float32, out []float32, narrow bool) {
			op.apply(out, b[xs], xl, b[ys], yl, narrow)
		}}, nil
	}
	xst, yst := broadcastStrides(x.shape, shape), broadcastStrides(y.shape, shape)
	last := shape[len(shape)-1]
	xl, yl := xst[len(shape)-1], yst[len(shape)-1]
	xr, yr := rowOffsets(shape, xst), rowOffsets(shape, yst)
	return built{shape: shape, run: func(b [][]float32, out []float32, narrow bool) {
		X, Y := b[xs], b[ys]
		for r := range xr {
			op.apply(out[r*last:(r+1)*last], X[xr[r]:], xl, Y[yr[r]:], yl, narrow)
		}
	}}, nil
}

// apply computes out[i] = x[i·xs] ∘ y[i·ys] under Narrow (narrow) or Wide.
func (op *binaryOp) apply(out, x []float32, xs int, y []float32, ys int, narrow bool) {
	if len(out) == 0 {
		return
	}
	if narrow && op.lutRow != nil {
		op.lutRow(op.lut, out, x, xs, y, ys)
		return
	}
	// The common layouts get loops without index arithmetic.
	switch {
	case xs == 1 && ys == 1 && op.vv != nil:
		op.vv(out, x, y)
		return
	case xs == 1 && ys == 0 && op.vs != nil:
		op.vs(out, x, y[0])
		return
	case xs == 0 && ys == 1 && op.sv != nil:
		op.sv(out, x[0], y)
		return
	}
	op.row(out, x, xs, y, ys)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
