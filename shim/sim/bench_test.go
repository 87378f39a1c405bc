package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"

	"gonum.org/v1/gonum/mat"
)

// matmulProgram is C = A·B for n×n inputs as the lowering lays them out:
// each input arrives as [1, n, 1, n] (n rows of n, no padding when n is a
// multiple of 32), is reshaped to [n, n] in the MIL, and the product is
// reshaped back to [1, n, 1, n].
func benchMatMul(b *testing.B, n int, num Numerics) {
	body := stmt("z", []int{n, n}, "matmul", "x = x", "y = y")
	p := program([]port{in("x", n, n), in("y", n, n)}, body, []port{in("z", n, n)})
	exe, err := New(num).Compile(p)
	if err != nil {
		b.Fatal(err)
	}
	rng := newRNG(12)
	x, y := halfs(rng, n*n, 1), halfs(rng, n*n, 1)
	in := [][]float32{x, y}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := exe.Run(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkSimMatMul256(b *testing.B)       { benchMatMul(b, 256, Wide) }
func BenchmarkSimMatMul512(b *testing.B)       { benchMatMul(b, 512, Wide) }
func BenchmarkSimMatMul1024(b *testing.B)      { benchMatMul(b, 1024, Wide) }
func BenchmarkSimNarrowMatMul512(b *testing.B) { benchMatMul(b, 512, Narrow) }

// BenchmarkGonumDgemm* is the float64 baseline: gonum's mat.Dense.Mul.
func benchGonum(b *testing.B, n int) {
	rng := newRNG(13)
	d := func() *mat.Dense {
		v := make([]float64, n*n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return mat.NewDense(n, n, v)
	}
	x, y := d(), d()
	var c mat.Dense
	b.ResetTimer()
	for range b.N {
		c.Mul(x, y)
	}
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkGonumDgemm256(b *testing.B)  { benchGonum(b, 256) }
func BenchmarkGonumDgemm512(b *testing.B)  { benchGonum(b, 512) }
func BenchmarkGonumDgemm1024(b *testing.B) { benchGonum(b, 1024) }

// BenchmarkSimConv3x3 is a 3×3 conv of 64 → 64 channels on a 64×64 image.
func BenchmarkSimConv3x3(b *testing.B) {
	const c, h = 64, 64
	body := cStr("pt", "same") + stmt("z", []int{1, c, h, h}, "conv", "pad_type = pt", "weight = w", "x = x")
	p := program([]port{in("x", 1, c, h, h), in("w", c, c, 3, 3)}, body, []port{in("z", 1, c, h, h)})
	exe, err := New(Wide).Compile(p)
	if err != nil {
		b.Fatal(err)
	}
	rng := newRNG(14)
	in := [][]float32{halfs(rng, c*h*h, 1), halfs(rng, c*c*9, 0.1)}
	b.ResetTimer()
	for range b.N {
		if _, err := exe.Run(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*float64(c*c*9*h*h)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkKernelDotBlock times the single-threaded kernel on a 128×128
// block of outputs with K = 512 (no packing, no goroutines).
func BenchmarkKernelDotBlock(b *testing.B) {
	const m, k = 128, 512
	rng := newRNG(15)
	x, y := halfs(rng, m*k, 1), halfs(rng, m*k, 1)
	ta, tb := smallThresholds(maxAbs(x), maxAbs(y))
	a, bo := newOperand(m, k, x, k), newOperand(m, k, y, k)
	a.markSmall(k, ta)
	bo.markSmall(k, tb)
	c := make([]float32, m*m)
	b.ResetTimer()
	for range b.N {
		dotBlock(m, m, k, a, bo, c, m, false, nil)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(m*m*k), "ns/MAC")
}

// The solvers' shapes (package krylov): each benchmark runs on the device
// with its fast paths ("fast") and on one with the generic kernels only
// ("generic", the kernels before the fast paths; both give the same bits).

func benchRun(b *testing.B, p *lower.Program, inputs [][]float32, work float64, unit string) {
	for _, generic := range []bool{false, true} {
		name := "fast"
		if generic {
			name = "generic"
		}
		b.Run(name, func(b *testing.B) {
			d := New(Wide)
			d.reference = generic
			exe, err := d.Compile(p)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := exe.Run(inputs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/work, "ns/"+unit)
		})
	}
}

// matvecProgram is A·x as the lowering emits it: x [1, K, 1, 1], a const
// weight [N, K, 1, 1]. Entries of A are N(0, 1/K) and those of x N(0, 1),
// so that a quarter of the products are subnormal, as in the dense CG runs
// (weights below 2⁻¹⁴ become ±2⁻¹⁴: constants may not be subnormal).
// compensated makes the operator krylov's compensated one instead: integer
// digits, |A| ≤ 16 and |x| ≤ 8 (so that every output stays below the
// matmul cliff, 32752), and a −I block of N more columns.
func matvecProgram(n, k int, compensated bool) (*lower.Program, [][]float32) {
	rng := newRNG(31)
	kw := k
	if compensated {
		kw += n
	}
	w := halfs(rng, n*kw, 1/math.Sqrt(float64(k)))
	for i, v := range w {
		if v != 0 && math.Abs(float64(v)) < fp16.MinNormal {
			w[i] = float32(math.Copysign(fp16.MinNormal, float64(v)))
		}
	}
	x := halfs(rng, kw, 1)
	if compensated {
		for r := range n {
			for c := range k {
				w[r*kw+c] = float32(rng.IntN(33) - 16)
			}
			clear(w[r*kw+k : (r+1)*kw])
			w[r*kw+k+r] = -1
		}
		for i := range x {
			x[i] = float32(rng.IntN(17) - 8)
		}
	}
	bw := mil.NewBlobWriter()
	body := cInts("st", 1, 1) + cInts("dl", 1, 1) + cStr("pt", "valid") + cInt("gr", 1) +
		cInts("v_shape", 1, kw, 1, 1) + stmt("v", []int{1, kw, 1, 1}, "reshape", "shape = v_shape", "x = x") +
		blobConst(bw, "w", []int{n, kw, 1, 1}, w) +
		stmt("y4", []int{1, n, 1, 1}, "conv", "dilations = dl", "groups = gr", "pad_type = pt", "strides = st", "weight = w", "x = v") +
		cInts("y_shape", 1, n) + stmt("y", []int{1, n}, "reshape", "shape = y_shape", "x = y4")
	p := program([]port{in("x", 1, kw)}, body, []port{in("y", 1, n)})
	p.Blob = bw.Bytes()
	return p, [][]float32{x}
}

func BenchmarkMatvec512(b *testing.B) {
	p, in := matvecProgram(512, 512, false)
	benchRun(b, p, in, 512*512, "MAC")
}

func BenchmarkMatvec4096(b *testing.B) {
	p, in := matvecProgram(4096, 4096, false)
	benchRun(b, p, in, 4096*4096, "MAC")
}

func BenchmarkMatvecCompensated(b *testing.B) {
	p, in := matvecProgram(1024, 7168, true)
	benchRun(b, p, in, 1024*8192, "MAC")
}

// BenchmarkStencil128 is the Poisson operator: a 3×3 conv with one channel
// on a 128×128 grid, pads 1, five nonzero weights.
func BenchmarkStencil128(b *testing.B) {
	const n = 128
	bw := mil.NewBlobWriter()
	body := cInts("st", 1, 1) + cInts("dl", 1, 1) + cStr("pt", "custom") + cInts("pd", 1, 1, 1, 1) + cInt("gr", 1) +
		blobConst(bw, "w", []int{1, 1, 3, 3}, []float32{0, -0.25, 0, -0.25, 1, -0.25, 0, -0.25, 0}) +
		stmt("z", []int{1, 1, n, n}, "conv", "dilations = dl", "groups = gr", "pad = pd", "pad_type = pt", "strides = st", "weight = w", "x = x")
	p := program([]port{in("x", 1, 1, n, n)}, body, []port{in("z", 1, 1, n, n)})
	p.Blob = bw.Bytes()
	benchRun(b, p, [][]float32{halfs(newRNG(32), n*n, 1)}, n*n, "output")
}

// BenchmarkDots16384 is the CG step's dot products: [2, n]·[n, 1] and
// the Gram matrix [2, n]·[2, n]ᵀ, n = 16384.
func BenchmarkDots16384(b *testing.B) {
	const n = 16384
	body := cBool("f", false) + cBool("t", true) +
		stmt("g", []int{2, 2}, "matmul", "transpose_x = f", "transpose_y = t", "x = x", "y = x") +
		cInts("v_shape", n, 1) + stmt("v", []int{n, 1}, "reshape", "shape = v_shape", "x = y") +
		stmt("d", []int{2, 1}, "matmul", "transpose_x = f", "transpose_y = f", "x = x", "y = v")
	p := program([]port{in("x", 2, n), in("y", 1, n)}, body, []port{in("g", 2, 2), in("d", 2, 1)})
	rng := newRNG(33)
	benchRun(b, p, [][]float32{halfs(rng, 2*n, 1), halfs(rng, n, 1)}, 6*n, "MAC")
}

// BenchmarkVectorOps is the CG update on [1, n] vectors: axpy steps with
// [1, 1] scalars (broadcast), differences, abs and reduce_max, 100 ops.
func BenchmarkVectorOps(b *testing.B) {
	const n, steps = 16384, 20
	var sb strings.Builder
	v := []int{1, n}
	sb.WriteString(cInts("ax", -1) + cBool("kd", true))
	prev := "x"
	for i := range steps {
		s := fmt.Sprintf("_%d", i)
		sb.WriteString(stmt("m"+s, v, "mul", "x = y", "y = a") +
			stmt("u"+s, v, "sub", "x = "+prev, "y = m"+s) +
			stmt("b"+s, v, "abs", "x = u"+s) +
			stmt("r"+s, []int{1, 1}, "reduce_max", "axes = ax", "keep_dims = kd", "x = b"+s) +
			stmt("q"+s, v, "real_div", "x = u"+s, "y = r"+s))
		prev = "q" + s
	}
	p := program([]port{in("x", 1, n), in("y", 1, n), in("a", 1, 1)}, sb.String(), []port{in(prev, 1, n)})
	rng := newRNG(34)
	benchRun(b, p, [][]float32{halfs(rng, n, 1), halfs(rng, n, 0.01), {0.5}}, 5*steps*n, "element")
}

// BenchmarkScalarOps is a program of 2000 ops on [1, 1] scalars (the CG
// coefficients): per-op overhead.
func BenchmarkScalarOps(b *testing.B) {
	const steps = 400
	var sb strings.Builder
	s1 := []int{1, 1}
	sb.WriteString(cHalfs("h", s1, []float64{-0.5}))
	prev := "x"
	for i := range steps {
		s := fmt.Sprintf("_%d", i)
		sb.WriteString(stmt("a"+s, s1, "mul", "x = "+prev, "y = y") +
			stmt("b"+s, s1, "maximum", "x = a"+s, "y = y") +
			stmt("c"+s, s1, "pow", "x = b"+s, "y = h") +
			stmt("d"+s, s1, "real_div", "x = c"+s, "y = b"+s) +
			stmt("e"+s, s1, "sqrt", "x = d"+s))
		prev = "e" + s
	}
	p := program([]port{in("x", 1, 1), in("y", 1, 1)}, sb.String(), []port{in(prev, 1, 1)})
	benchRun(b, p, [][]float32{{1.5}, {0.75}}, 5*steps, "op")
}

// BenchmarkElementwise times each elementwise op on a [64, 1024] operand
// (with a second [64, 1024] operand, or a [1, 1] one: "scalar", for the
// binary ops) under both numerics models: the per-element kernels.
func BenchmarkElementwise(b *testing.B) {
	const r, c = 64, 1024
	v := []int{r, c}
	rng := newRNG(35)
	x, y := make([]float32, r*c), make([]float32, r*c)
	for i := range x {
		x[i] = float32(fp16.Round64(0x1p-4 + 4*rng.Float64()))
		y[i] = float32(fp16.Round64(0x1p-4 + 4*rng.Float64()))
	}
	type bench struct {
		name string
		p    *lower.Program
		in   [][]float32
	}
	var cases []bench
	for _, op := range []string{"abs", "square", "sqrt", "exp", "log", "tanh", "sigmoid", "relu", "gelu"} {
		extra, args := "", []string{"x = x"}
		if op == "gelu" {
			extra, args = cStr("m", "EXACT"), append(args, "mode = m")
		}
		p := program([]port{in("x", v...)}, extra+stmt("z", v, op, args...), []port{in("z", v...)})
		cases = append(cases, bench{op, p, [][]float32{x}})
	}
	for _, op := range []string{"add", "sub", "mul", "real_div", "pow", "maximum", "minimum"} {
		p := program([]port{in("x", v...), in("y", v...)}, stmt("z", v, op, "x = x", "y = y"), []port{in("z", v...)})
		cases = append(cases, bench{op, p, [][]float32{x, y}})
		p = program([]port{in("x", v...), in("y", 1, 1)}, stmt("z", v, op, "x = x", "y = y"), []port{in("z", v...)})
		cases = append(cases, bench{op + "-scalar", p, [][]float32{x, {0.75}}})
	}
	for _, num := range []Numerics{Wide, Narrow} {
		for _, cs := range cases {
			b.Run(fmt.Sprintf("%v/%s", num, cs.name), func(b *testing.B) {
				exe, err := New(num).Compile(cs.p)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := exe.Run(cs.in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(r*c), "ns/element")
			})
		}
	}
}
