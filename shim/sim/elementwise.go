package sim

import (
	"math"
	"slices"
)

type ewKind uint8

const (
	ewAdd ewKind = iota
	ewSub
	ewMul
	ewDiv
	ewPow
	ewMax
	ewMin
	ewPowLUT // pow under Narrow: with the table error of lutError
)

func binarySpec(k ewKind) opSpec {
	return opSpec{
		params: []param{{"x", kData, true}, {"y", kData, true}},
		build: func(c *compiler, a *args) (built, error) {
			x, y := a.data("x"), a.data("y")
			if k == ewMul {
				for _, v := range []*value{x, y} {
					if v.isConst && !slices.ContainsFunc(v.halfs, func(h float32) bool { return h != 0 }) {
						return built{}, unsupportedf(a.op.Pos, "mul: %q is a constant zero: multiplying by zero is reported to fail to compile on the engine (mul(reduce_output, 0)); drop the term instead", v.name)
					}
				}
			}
			shape, ok := broadcastShapes(x.shape, y.shape)
			if !ok {
				return built{}, a.errorf("shapes %s and %s do not broadcast", shapeString(x.shape), shapeString(y.shape))
			}
			n := numel(shape)
			xs, ys := x.slot, y.slot
			// One row when each operand is either the full shape or a
			// single element; otherwise one row per index of all but the
			// last dimension.
			xFull, yFull := numel(x.shape) == n, numel(y.shape) == n
			kind := func(narrow bool) ewKind {
				if narrow && k == ewPow {
					return ewPowLUT
				}
				return k
			}
			if (xFull || numel(x.shape) == 1) && (yFull || numel(y.shape) == 1) {
				xl, yl := b2i(xFull), b2i(yFull)
				return built{shape: shape, run: func(b [][]float32, out []float32, narrow bool) {
					binaryRow(kind(narrow), out, b[xs], xl, b[ys], yl)
				}}, nil
			}
			xst, yst := broadcastStrides(x.shape, shape), broadcastStrides(y.shape, shape)
			last := shape[len(shape)-1]
			xl, yl := xst[len(shape)-1], yst[len(shape)-1]
			xr, yr := rowOffsets(shape, xst), rowOffsets(shape, yst)
			return built{shape: shape, run: func(b [][]float32, out []float32, narrow bool) {
				X, Y := b[xs], b[ys]
				kn := kind(narrow)
				for r := range xr {
					binaryRow(kn, out[r*last:(r+1)*last], X[xr[r]:], xl, Y[yr[r]:], yl)
				}
			}}, nil
		},
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// binaryRow computes out[i] = x[i·xs] ∘ y[i·ys]. The float32 result of +, −,
// ×, ÷ on fp16 operands is the exact result rounded to 24 bits, and 24 ≥
// 2·11 + 2, so rounding it again to fp16 gives the exact result rounded once.
func binaryRow(k ewKind, out, x []float32, xs int, y []float32, ys int) {
	if len(out) == 0 {
		return
	}
	// The common layouts get loops without index arithmetic.
	switch {
	case xs == 1 && ys == 1:
		if binaryVV(k, out, x[:len(out)], y[:len(out)]) {
			return
		}
	case xs == 1 && ys == 0:
		if binaryVS(k, out, x[:len(out)], y[0]) {
			return
		}
	case xs == 0 && ys == 1:
		if binarySV(k, out, x[0], y[:len(out)]) {
			return
		}
	}
	switch k {
	case ewAdd:
		for i := range out {
			out[i] = r16(x[i*xs] + y[i*ys])
		}
	case ewSub:
		for i := range out {
			out[i] = r16(x[i*xs] - y[i*ys])
		}
	case ewMul:
		for i := range out {
			out[i] = r16(x[i*xs] * y[i*ys])
		}
	case ewDiv:
		for i := range out {
			out[i] = r16(x[i*xs] / y[i*ys])
		}
	case ewPow:
		for i := range out {
			out[i] = r16(float32(math.Pow(float64(x[i*xs]), float64(y[i*ys]))))
		}
	case ewPowLUT:
		for i := range out {
			a, b := x[i*xs], y[i*ys]
			e := lutError(uint32(ewPowLUT)<<28 ^ math.Float32bits(a)>>13<<16 ^ math.Float32bits(b)>>13)
			out[i] = r16(f32(math.Pow(float64(a), float64(b)) * (1 + e)))
		}
	case ewMax:
		for i := range out {
			a, b := x[i*xs], y[i*ys]
			if a > b {
				out[i] = a
			} else {
				out[i] = b
			}
		}
	case ewMin:
		for i := range out {
			a, b := x[i*xs], y[i*ys]
			if a > b {
				out[i] = b
			} else {
				out[i] = a
			}
		}
	}
}

// binaryVV, binaryVS and binarySV are binaryRow for two full rows, a full
// row and a scalar, and a scalar and a full row; they report false for the
// ops they leave to the general loop. Their rounding takes the split (see
// split) for results that are zero or in fp16's normal range, behind a
// branch that is well predicted when most results are, and r16 for the
// others: it is r16 written out, because the two together are too large to
// inline.
func binaryVV(k ewKind, out, x, y []float32) bool {
	x, y = x[:len(out)], y[:len(out)]
	switch k {
	case ewAdd:
		for i, v := range x {
			d := v + y[i]
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewSub:
		for i, v := range x {
			d := v - y[i]
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewMul:
		for i, v := range x {
			d := float32(v * y[i])
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewDiv:
		for i, v := range x {
			d := v / y[i]
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	default:
		return false
	}
	return true
}

func binaryVS(k ewKind, out, x []float32, y float32) bool {
	x = x[:len(out)]
	switch k {
	case ewAdd:
		for i, v := range x {
			d := v + y
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewSub:
		for i, v := range x {
			d := v - y
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewMul:
		for i, v := range x {
			d := float32(v * y)
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewDiv:
		for i, v := range x {
			d := v / y
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	default:
		return false
	}
	return true
}

func binarySV(k ewKind, out []float32, x float32, y []float32) bool {
	y = y[:len(out)]
	switch k {
	case ewAdd:
		for i, v := range y {
			d := x + v
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewSub:
		for i, v := range y {
			d := x - v
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewMul:
		for i, v := range y {
			d := float32(x * v)
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	case ewDiv:
		for i, v := range y {
			d := x / v
			if math.Float32bits(d)&0x7fffffff-minNormalBits < fastSpan || d == 0 {
				t := float32(d * 8193)
				out[i] = t - float32(t-d)
			} else {
				out[i] = r16(d)
			}
		}
	default:
		return false
	}
	return true
}

type unaryKind uint8

const (
	uAbs unaryKind = iota
	uSquare
	uSqrt
	uExp
	uLog
	uTanh
	uSigmoid
	uRelu
	uGelu
)

func unarySpec(k unaryKind) opSpec {
	return opSpec{params: []param{{"x", kData, true}}, build: buildUnary(k)}
}

const (
	geluExact   = "EXACT"
	geluTanh    = "TANH_APPROXIMATION"
	geluSigmoid = "SIGMOID_APPROXIMATION"
)

func buildUnary(k unaryKind) func(c *compiler, a *args) (built, error) {
	return func(c *compiler, a *args) (built, error) {
		x := a.data("x")
		xs := x.slot
		eps := float64(a.half("epsilon", 0)) // log: default 1e-45 is 0 in fp16
		mode := a.str("mode", geluExact)
		if k == uGelu && mode != geluExact && mode != geluTanh && mode != geluSigmoid {
			return built{}, a.errorf("mode %q is not one of %s, %s, %s", mode, geluExact, geluTanh, geluSigmoid)
		}
		return built{shape: x.shape, run: func(b [][]float32, out []float32, narrow bool) {
			unaryRow(k, out, b[xs], eps, mode, narrow)
		}}, nil
	}
}

// f32 rounds a float64 to float32: a transcendental's float32 result.
func f32(x float64) float32 { return float32(x) }

// unaryRow computes out[i] = f(x[i]). With lut (the Narrow model) sqrt,
// exp, log, tanh, sigmoid and gelu carry the table error of lutError: the
// float64 result times 1 + lutError(key), then float32, then fp16.
func unaryRow(k unaryKind, out, x []float32, eps float64, mode string, lut bool) {
	x = x[:len(out)]
	if lut && k != uAbs && k != uSquare && k != uRelu {
		for i, v := range x {
			out[i] = r16(f32(unaryExact(k, float64(v), eps, mode) * (1 + lutError(uint32(k)<<28^math.Float32bits(v)>>13))))
		}
		return
	}
	switch k {
	case uAbs:
		for i, v := range x {
			out[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		}
	case uSquare:
		for i, v := range x {
			out[i] = r16(v * v)
		}
	case uSqrt:
		// float64 → float32 is innocuous for √ (53 ≥ 2·24 + 2), and
		// float32 → fp16 likewise (24 ≥ 2·11 + 2).
		for i, v := range x {
			out[i] = r16(f32(math.Sqrt(float64(v))))
		}
	case uExp:
		for i, v := range x {
			out[i] = r16(f32(math.Exp(float64(v))))
		}
	case uLog:
		for i, v := range x {
			out[i] = r16(f32(math.Log(float64(v) + eps))) // the fp16 sum is exact in float64
		}
	case uTanh:
		for i, v := range x {
			out[i] = r16(f32(math.Tanh(float64(v))))
		}
	case uSigmoid:
		for i, v := range x {
			out[i] = r16(f32(1 / (1 + math.Exp(-float64(v)))))
		}
	case uRelu:
		for i, v := range x {
			if v > 0 {
				out[i] = v
			} else {
				out[i] = 0
			}
		}
	case uGelu:
		for i, v := range x {
			out[i] = r16(f32(gelu(float64(v), mode)))
		}
	}
}

// unaryExact is the float64 value of the transcendental k at x.
func unaryExact(k unaryKind, x, eps float64, mode string) float64 {
	switch k {
	case uSqrt:
		return math.Sqrt(x)
	case uExp:
		return math.Exp(x)
	case uLog:
		return math.Log(x + eps)
	case uTanh:
		return math.Tanh(x)
	case uSigmoid:
		return 1 / (1 + math.Exp(-x))
	case uGelu:
		return gelu(x, mode)
	}
	panic("sim: unaryExact of a kind that is not a transcendental")
}

// lutErrorMax bounds the table error of the Narrow model: 2⁻¹⁰ relative.
const lutErrorMax = 0x1p-10

// lutError is the Narrow model's relative error of a table-based
// transcendental, a deterministic function of key (the op and the fp16
// bits of its operands): a multiple of 2⁻²⁰ in [−2⁻¹⁰, 2⁻¹⁰], spread by a
// 32-bit integer hash (multiply–xorshift rounds) so that neighbouring
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

func gelu(x float64, mode string) float64 {
	switch mode {
	case geluTanh:
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	case geluSigmoid:
		return x / (1 + math.Exp(-1.702*x))
	}
	return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
}
