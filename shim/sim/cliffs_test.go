package sim

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
)

// The engine's cliffs below fp16's range (the package doc, "Cliffs"), in
// both variants and through every kernel: the fast paths and the generic
// kernels of the reference device.

// cliffModel is the matmul/conv model with its cliff, written apart from
// the kernels: the products (exact here) summed in float64 and rounded
// to float32 after every addition (Wide; every partial sum of these cases
// is a float32 value, so the order cannot matter) or to fp16 (Narrow); a
// sum above 32752 in magnitude is ±Inf, otherwise it is rounded to fp16.
func cliffModel(prods []float64, narrow bool) float64 {
	s := 0.0
	for _, p := range prods {
		s += p
		if narrow {
			s = fp16.Round64(s)
		} else {
			s = float64(float32(s))
		}
	}
	if math.Abs(s) > 32752 {
		return math.Copysign(math.Inf(1), s)
	}
	return fp16.Round64(s)
}

// cliffKernel is a program whose every output is the dot product of xs
// with ones, through one of the kernels.
type cliffKernel struct {
	name  string
	build func(k int) (ins []port, body string, outs []port)
	data  func(xs []float32) [][]float32 // the inputs for xs
}

func repeatRows(xs []float32, rows int) []float32 {
	var out []float32
	for range rows {
		out = append(out, xs...)
	}
	return out
}

func ones(n int) []float32 { return filled(n, 1) }

func cliffKernels() []cliffKernel {
	matmul := func(m, n int) cliffKernel {
		return cliffKernel{
			name: fmt.Sprintf("matmul %d×K·K×%d", m, n),
			build: func(k int) ([]port, string, []port) {
				return []port{in("x", m, k), in("y", k, n)}, stmt("z", []int{m, n}, "matmul", "x = x", "y = y"), []port{in("z", m, n)}
			},
			data: func(xs []float32) [][]float32 { return [][]float32{repeatRows(xs, m), ones(len(xs) * n)} },
		}
	}
	return []cliffKernel{
		matmul(1, 1), // a matrix-vector product, checked kernels
		matmul(2, 2), // the 2×2 kernel (Wide)
		matmul(8, 6), // the gemm tiles
		{
			name: "conv 1×1, const weight (matrix-vector)",
			build: func(k int) ([]port, string, []port) {
				// Six output rows: a group of four and a remainder of two.
				return []port{in("x", 1, k, 1, 1)}, cHalfs("w", []int{6, k, 1, 1}, ones64(6*k)) +
					stmt("z", []int{1, 6, 1, 1}, "conv", "weight = w", "x = x"), []port{in("z", 1, 6, 1, 1)}
			},
			data: func(xs []float32) [][]float32 { return [][]float32{xs} },
		},
		{
			name: "conv 1×1, input weight (checked matrix-vector)",
			build: func(k int) ([]port, string, []port) {
				return []port{in("x", 1, k, 1, 1), in("w", 6, k, 1, 1)}, stmt("z", []int{1, 6, 1, 1}, "conv", "weight = w", "x = x"), []port{in("z", 1, 6, 1, 1)}
			},
			data: func(xs []float32) [][]float32 { return [][]float32{xs, ones(6 * len(xs))} },
		},
		{
			name: "conv over 4 positions (direct up to 32 taps, else im2col)",
			build: func(k int) ([]port, string, []port) {
				return []port{in("x", 1, k, 1, 4)}, cHalfs("w", []int{2, k, 1, 1}, ones64(2*k)) +
					stmt("z", []int{1, 2, 1, 4}, "conv", "weight = w", "x = x"), []port{in("z", 1, 2, 1, 4)}
			},
			// Channel c of x holds xs[c] at all four positions.
			data: func(xs []float32) [][]float32 {
				var x []float32
				for _, v := range xs {
					x = append(x, v, v, v, v)
				}
				return [][]float32{x}
			},
		},
	}
}

func ones64(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

func TestMatmulConvCliff(t *testing.T) {
	vec := func(k int, v ...float32) []float32 { // k copies of v[0], then the rest
		xs := filled(k, v[0])
		return append(xs, v[1:]...)
	}
	cases := []struct {
		name string
		xs   []float32
		wide float64 // the answer under Wide, stated independently of cliffModel
	}{
		// 32 × 1000 = 32000 ≤ 32752 is an fp16 value: exact.
		{"K=32 of 1000", vec(32, 1000), 32000},
		// 33 × 1000 = 33000 > 32752: Inf, though fp16 could hold 32992.
		{"K=33 of 1000", vec(33, 1000), math.Inf(1)},
		{"K=32 of −1000", vec(32, -1000), -32000},
		{"K=33 of −1000", vec(33, -1000), math.Inf(-1)},
		// 4 × 8188 = 32752, the cliff itself: finite.
		{"sum at the cliff", vec(4, 8188), 32752},
		// 3 × 8188 + 8192 = 32756 rounds to 32752 in fp16, but the sum
		// exceeds the cliff: Inf.
		{"sum just above the cliff", vec(3, 8188, 8192), math.Inf(1)},
		// Partial sums above the cliff do not matter, only the output:
		// 33 × 1000 − 2 × 16000 = 1000 (the wide partial sum 33000 is exact
		// in float32).
		{"partial sums above the cliff", vec(33, 1000, -16000, -16000), 1000},
	}
	for _, kc := range cliffKernels() {
		for _, c := range cases {
			p := program(kc.build(len(c.xs)))
			for _, num := range []Numerics{Wide, Narrow} {
				prods := make([]float64, len(c.xs))
				for i, v := range c.xs {
					prods[i] = float64(v)
				}
				want := cliffModel(prods, num == Narrow)
				if num == Wide {
					require.Equal(t, c.wide, want, "the model disagrees with the stated answer")
				}
				for _, dev := range []*Device{New(num), newReference(num)} {
					name := fmt.Sprintf("%s/%s/%v/reference=%v", kc.name, c.name, num, dev.reference)
					exe, err := dev.Compile(p)
					require.NoError(t, err, name)
					out, err := exe.Run(kc.data(c.xs))
					if math.IsInf(want, 0) {
						require.ErrorIs(t, err, shim.ErrRange, name)
					} else {
						require.NoError(t, err, name)
					}
					for i, v := range out[0] {
						require.Equal(t, want, float64(v), "%s: output %d", name, i)
					}
				}
			}
		}
	}
}

func TestConvBiasCliff(t *testing.T) {
	// The cliff applies to the sum and again after the bias: under Wide
	// 32 × 1000 = 32000 is finite, and 32000 + 1000 = 33000 is not.
	const k = 32
	for _, num := range []Numerics{Wide, Narrow} {
		for _, bias := range []float64{0x1p-2, 1000} {
			body := cHalfs("w", []int{2, k, 1, 1}, ones64(2*k)) + cHalfs("b", []int{2}, []float64{bias, bias}) +
				stmt("z", []int{1, 2, 1, 1}, "conv", "bias = b", "weight = w", "x = x")
			p := program([]port{in("x", 1, k, 1, 1)}, body, []port{in("z", 1, 2, 1, 1)})
			for _, dev := range []*Device{New(num), newReference(num)} {
				exe, err := dev.Compile(p)
				require.NoError(t, err)
				out, err := exe.Run([][]float32{filled(k, 1000)})
				sum := cliffModel(prods1000(k), num == Narrow)
				want := cliffModel([]float64{sum, bias}, false) // the fp16 add, with the cliff
				if num == Wide {
					require.Equal(t, map[float64]float64{0x1p-2: 32000, 1000: math.Inf(1)}[bias], want)
				}
				if math.IsInf(want, 0) {
					require.ErrorIs(t, err, shim.ErrRange)
				} else {
					require.NoError(t, err)
				}
				require.Equal(t, []float32{float32(want), float32(want)}, out[0], "%v bias %g", num, bias)
			}
		}
	}
}

func prods1000(k int) []float64 {
	p := make([]float64, k)
	for i := range p {
		p[i] = 1000
	}
	return p
}

// sliceProgram slices x [1, 64] at last-axis offset off, 32 wide.
func sliceProgram(off int) *lower.Program {
	body := cInts("b", 0, off) + cInts("s", 1, 32) + stmt("z", []int{1, 32}, "slice_by_size", "begin = b", "size = s", "x = x")
	return program([]port{in("x", 1, 64)}, body, []port{in("z", 1, 32)})
}

func TestWidthSliceClamp(t *testing.T) {
	// fp16 values next to the clamp: 4094 stays, 4096 (the next fp16
	// value) becomes Inf at a nonzero width offset on targets before A16.
	x := make([]float32, 64)
	for i := range x {
		x[i] = [...]float32{4094, 4096, -4096, -4094, 65504, 1}[i%6]
	}
	m5 := lower.TargetM5
	m5.MaxKernel, m5.RowAlign, m5.MinRow = lower.TargetSim.MaxKernel, lower.TargetSim.RowAlign, lower.TargetSim.MinRow
	m5.MinSurfaceBytes, m5.Rounding = 0, lower.TargetSim.Rounding // the clamp alone
	require.False(t, m5.WidthSliceClamp)
	require.True(t, lower.TargetSim.WidthSliceClamp)
	for _, num := range []Numerics{Wide, Narrow} {
		for _, c := range []struct {
			off    int
			target lower.Target
			clamps bool
		}{
			{0, lower.TargetSim, false},
			{32, lower.TargetSim, true},
			{1, lower.TargetSim, true},
			{32, m5, false}, // the M5 family has no clamp
		} {
			dev := New(num)
			dev.target = c.target
			exe, err := dev.Compile(sliceProgram(c.off))
			require.NoError(t, err)
			out, err := exe.Run([][]float32{x})
			if c.clamps {
				require.ErrorIs(t, err, shim.ErrRange)
			} else {
				require.NoError(t, err)
			}
			for i, v := range out[0] {
				want := x[c.off+i]
				if c.clamps && math.Abs(float64(want)) > 4094 {
					want = float32(math.Copysign(math.Inf(1), float64(want)))
				}
				require.Equal(t, want, v, "%v offset %d on %s, element %d", num, c.off, c.target.Name, i)
			}
		}
	}
}

func TestNarrowFlushesSubnormals(t *testing.T) {
	// z = (x·2¹⁰)·y. Operands: x = 2⁻²⁰ (an fp16 subnormal) gives 2⁻¹⁰
	// under Wide, 0 under Narrow, which flushes the input. Results: x =
	// ±2⁻¹³ gives ±2⁻³·2⁻¹⁴ = ±2⁻¹⁷, subnormal, kept by Wide and flushed to a
	// zero of its sign by Narrow, though every operand is normal. Normal
	// values pass unchanged.
	body := cHalf("big", 0x1p10) + stmt("a", []int{1, 4}, "mul", "x = x", "y = big") +
		stmt("z", []int{1, 4}, "mul", "x = a", "y = y")
	p := program([]port{in("x", 1, 4), in("y", 1, 4)}, body, []port{in("z", 1, 4)})
	x := []float32{0x1p-20, 0x1p-13, -0x1p-13, 0x1p-4}
	y := []float32{1, 0x1p-14, 0x1p-14, 0x1p-6}
	wide := []float32{0x1p-10, 0x1p-17, -0x1p-17, 0x1p0}
	narrow := []float32{0, 0, float32(math.Copysign(0, -1)), 0x1p0}
	for _, num := range []Numerics{Wide, Narrow} {
		got := run(t, num, p, x, y)[0]
		want := wide
		if num == Narrow {
			want = narrow
		}
		_, same := sameBits(got, want)
		require.True(t, same, "%v: got %v, want %v", num, got, want)
	}
	// A matmul result is flushed too: 2⁻⁸ · 2⁻⁸ = 2⁻¹⁶.
	p = program([]port{in("x", 1, 1), in("y", 1, 1)}, stmt("z", []int{1, 1}, "matmul", "x = x", "y = y"), []port{in("z", 1, 1)})
	require.Equal(t, []float32{0x1p-16}, run(t, Wide, p, []float32{0x1p-8}, []float32{0x1p-8})[0])
	require.Equal(t, []float32{0}, run(t, Narrow, p, []float32{0x1p-8}, []float32{0x1p-8})[0])
}

// transcendental is one table-based op of the Narrow model.
type transcendental struct {
	op     string
	extra  string // const declarations
	args   string // extra arguments
	f      func(x, y float64) float64
	lo, hi float64 // the domain of x, sampled on every fp16 value
	binary bool    // pow: y is a second input
}

func transcendentals() []transcendental {
	g := func(f func(float64) float64) func(x, _ float64) float64 {
		return func(x, _ float64) float64 { return f(x) }
	}
	return []transcendental{
		{op: "sqrt", f: g(math.Sqrt), lo: 0x1p-10, hi: 60000},
		{op: "exp", f: g(math.Exp), lo: -9, hi: 11},
		{op: "log", f: g(math.Log), lo: 0x1p-10, hi: 60000},
		{op: "tanh", f: g(math.Tanh), lo: 0x1p-10, hi: 8},
		{op: "sigmoid", f: g(func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }), lo: -9, hi: 20},
		{op: "gelu", extra: cStr("mode", "EXACT"), args: "mode = mode, ", f: g(func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }), lo: -3, hi: 100},
		{op: "gelu", extra: cStr("mode", "TANH_APPROXIMATION"), args: "mode = mode, ", f: g(func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}), lo: -3, hi: 100},
		{op: "gelu", extra: cStr("mode", "SIGMOID_APPROXIMATION"), args: "mode = mode, ", f: g(func(x float64) float64 { return x / (1 + math.Exp(-1.702*x)) }), lo: -3, hi: 100},
		{op: "pow", f: math.Pow, lo: 0x1p-2, hi: 16, binary: true},
	}
}

// fp16Range lists every fp16 value in [lo, hi].
func fp16Range(lo, hi float64) []float32 {
	var xs []float32
	for h := range 1 << 16 {
		v := fp16.Bits(h).Float64()
		if v >= lo && v <= hi {
			xs = append(xs, float32(v))
		}
	}
	return xs
}

func TestTranscendentalError(t *testing.T) {
	// Wide: the float64 value rounded to float32, then to fp16, exactly.
	// Narrow: out = fp16(float32(f·(1 + δ))) with |δ| ≤ 2⁻¹⁰, so
	//   |out − f| ≤ |δ|·|f| + |out − f·(1 + δ)|
	//            ≤ 2⁻¹⁰·|f| + (u + 2⁻²⁴)(1 + 2⁻²⁴)·(1 + 2⁻¹⁰)·|f|,
	// u = 2⁻¹¹, for results in fp16's normal range (the only ones checked:
	// Narrow flushes subnormal results). The error must also be there: a
	// correctly rounded result never errs by more than u·|f|, and most
	// Narrow results must differ from the Wide ones.
	const rel = 0x1p-10 + (u16+u32)*(1+u32)*(1+0x1p-10)
	for _, c := range transcendentals() {
		t.Run(c.op+" "+c.args, func(t *testing.T) {
			// Every fp16 value of the domain, in rows of 128 (the last padded
			// with the domain's lower end).
			xs := fp16Range(c.lo, c.hi)
			for len(xs)%128 != 0 {
				xs = append(xs, float32(c.lo))
			}
			ys := make([]float32, len(xs))
			for i := range ys {
				ys[i] = [...]float32{-2, -0.5, 0.5, 1.5, 3}[i%5]
			}
			shape := []int{len(xs) / 128, 128}
			ins := []port{in("x", shape...)}
			call := fmt.Sprintf("%s(%sx = x)", c.op, c.args)
			inputs := [][]float32{xs}
			if c.binary {
				ins = append(ins, in("y", shape...))
				call = fmt.Sprintf("%s(x = x, y = y)", c.op)
				inputs = append(inputs, ys)
			}
			body := c.extra + fmt.Sprintf("        %s z = %s[name = string(\"z\")];\n", ft(shape), call)
			p := program(ins, body, []port{in("z", shape...)})
			wide := run(t, Wide, p, inputs...)[0]
			narrow := run(t, Narrow, p, inputs...)[0]
			again := run(t, Narrow, p, inputs...)[0]
			_, same := sameBits(narrow, again)
			require.True(t, same, "the table error is deterministic")
			differ, checked, worst := 0, 0, 0.0
			for i, x := range xs {
				exact := c.f(float64(x), float64(ys[i]))
				require.Equal(t, float32(fp16.Round64(float64(float32(exact)))), wide[i], "wide %s(%g)", c.op, x)
				if math.Abs(exact) < 0x1p-13 || math.Abs(exact) > 65000 {
					continue
				}
				checked++
				e := math.Abs(float64(narrow[i])-exact) / math.Abs(exact)
				require.LessOrEqual(t, e, rel, "narrow %s(%g): got %g, exact %g", c.op, x, narrow[i], exact)
				worst = max(worst, e)
				if narrow[i] != wide[i] {
					differ++
				}
			}
			require.Greater(t, checked, 500)
			require.Greater(t, worst, 1.5*u16, "the table error must exceed fp16 rounding somewhere")
			require.Greater(t, differ, checked/4, "most narrow results carry a table error")
			t.Logf("%d values checked, worst relative error %.3g (bound %.3g), %d differ from wide", checked, worst, rel, differ)
		})
	}
}

func TestLUTErrorRange(t *testing.T) {
	// lutError spans [−2⁻¹⁰, 2⁻¹⁰] in steps of 2⁻²⁰, roughly uniformly:
	// over 2²⁰ keys each of the 2049 values has an expected count of 512.
	counts := make([]int, 2049)
	for key := range uint32(1 << 20) {
		e := lutError(key)
		j := e*0x1p20 + 1024
		if math.Abs(e) > lutErrorMax || math.Trunc(j) != j {
			t.Fatalf("lutError(%#x) = %g: not a multiple of 2⁻²⁰ in [−2⁻¹⁰, 2⁻¹⁰]", key, e)
		}
		counts[int(j)]++
	}
	for j, n := range counts {
		require.Greater(t, n, 300, "value %d", j)
		require.Less(t, n, 750, "value %d", j)
	}
}

func TestHeadroomReport(t *testing.T) {
	// x [1, 64] of 1000s: m = x·ones (a K = 32 dot of the first half) is
	// 32000 under Wide (less under Narrow), ratio 32000/32752; a
	// width-offset slice of x holds 1000, ratio 1000/4094; relu(x) holds
	// 1000, ratio 1000/65504.
	body := cInts("b0", 0, 0) + cInts("b1", 0, 32) + cInts("s", 1, 32) +
		stmt("lo", []int{1, 32}, "slice_by_size", "begin = b0", "size = s", "x = x") +
		stmt("hi", []int{1, 32}, "slice_by_size", "begin = b1", "size = s", "x = x") +
		cHalfs("ones", []int{32, 1}, ones64(32)) +
		stmt("m", []int{1, 1}, "matmul", "x = lo", "y = ones") +
		stmt("r", []int{1, 32}, "relu", "x = hi") +
		stmt("z", []int{1, 32}, "add", "x = r", "y = m")
	p := program([]port{in("x", 1, 64)}, body, []port{in("z", 1, 32)})
	for _, name := range []string{"sim", "sim-narrow"} {
		dev, err := shim.Open(name)
		require.NoError(t, err)
		d, ok := Backend(dev)
		require.True(t, ok, "shim.Open returns a wrapper around the simulator")
		exe, err := dev.Compile(p)
		require.NoError(t, err)
		_, err = exe.Run([][]float32{filled(64, 1000)})
		require.NoError(t, err)
		require.Nil(t, d.Headroom(), "nothing recorded yet")

		d.RecordHeadroom(true)
		_, err = exe.Run([][]float32{filled(64, 1000)})
		require.NoError(t, err)
		h := d.Headroom()
		byName := map[string]OpHeadroom{}
		for _, e := range h {
			byName[e.Name] = e
		}
		dot := cliffModel(prods1000(32), name == "sim-narrow")
		require.Equal(t, OpHeadroom{Op: "matmul", Name: "m", Pos: byName["m"].Pos, Max: dot, Cliff: 32752}, byName["m"])
		require.Equal(t, posOf(t, p.MIL, "m = matmul("), byName["m"].Pos.String())
		require.Equal(t, 4094.0, byName["hi"].Cliff)
		require.Equal(t, 65504.0, byName["lo"].Cliff, "a slice at width offset 0 is not clamped")
		require.Equal(t, 1000.0, byName["hi"].Max)
		require.Equal(t, 65504.0, byName["r"].Cliff)
		require.Equal(t, fp16.Round64(1000+dot), byName["z"].Max)
		require.Equal(t, "m", h.Worst().Name)
		require.InDelta(t, dot/32752, h.Worst().Ratio(), 1e-15)

		// An overflowing run reports +Inf for the op that overflowed.
		x := filled(64, 1000)
		x[0] = 4000 // the dot becomes 35000 > 32752 (under Narrow too)
		_, err = exe.Run([][]float32{x})
		require.ErrorIs(t, err, shim.ErrRange)
		h = d.Headroom()
		require.Equal(t, "m", h.Worst().Name)
		require.True(t, math.IsInf(h.Worst().Max, 1))

		// Off again: the last recorded report stays.
		d.RecordHeadroom(false)
		_, err = exe.Run([][]float32{filled(64, 1)})
		require.NoError(t, err)
		require.True(t, math.IsInf(d.Headroom().Worst().Max, 1))
		require.NoError(t, dev.Close())
	}
	_, ok := Backend(nil)
	require.False(t, ok)
	var se *Error
	require.False(t, errors.As(nil, &se))
}
