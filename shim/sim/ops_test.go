package sim

import (
	"fmt"
	"math"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/stretchr/testify/require"
)

// index helpers for the float64 references.

func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		idx[d] = i % shape[d]
		i /= shape[d]
	}
	return idx
}

func ravel(idx, shape []int) int {
	o := 0
	for d := range shape {
		o = o*shape[d] + idx[d]
	}
	return o
}

// bcastIndex maps an output index to the flat index of an operand of shape
// s under numpy broadcasting.
func bcastIndex(idx, s []int) int {
	sub := make([]int, len(s))
	for d := range s {
		j := idx[len(idx)-len(s)+d]
		if s[d] == 1 {
			j = 0
		}
		sub[d] = j
	}
	return ravel(sub, s)
}

func TestBinaryOps(t *testing.T) {
	rng := newRNG(1)
	// Correctly rounded ops must equal the exact result rounded once to
	// fp16 (so |got − exact| ≤ u16·|exact| in the normal range); maximum and
	// minimum are exact; pow is a float32 result rounded to fp16, so it may
	// be off the exact by one more float32 rounding:
	// |got − exact| ≤ (u16 + u32)(1 + u32)·|exact|, plus half the smallest
	// subnormal spacing, 2⁻²⁵, in the subnormal range.
	type tc struct {
		op       string
		f        func(x, y float64) float64
		xs, ys   []int
		positive bool
		rounded  bool // correctly rounded: compare exactly with Round64(exact)
	}
	cases := []tc{
		{"add", func(x, y float64) float64 { return x + y }, []int{2, 3, 40}, []int{2, 3, 40}, false, true},
		{"add", func(x, y float64) float64 { return x + y }, []int{2, 3, 40}, []int{3, 1}, false, true},
		{"sub", func(x, y float64) float64 { return x - y }, []int{4, 1, 5}, []int{2, 1}, false, true},
		{"mul", func(x, y float64) float64 { return x * y }, []int{2, 1, 3, 5}, []int{4, 1, 5}, false, true},
		{"mul", func(x, y float64) float64 { return x * y }, []int{3, 33}, []int{1}, false, true},
		{"real_div", func(x, y float64) float64 { return x / y }, []int{6, 7}, []int{6, 7}, false, true},
		{"real_div", func(x, y float64) float64 { return x / y }, []int{1}, []int{5, 8}, false, true},
		{"pow", math.Pow, []int{5, 9}, []int{5, 9}, true, false},
		{"maximum", math.Max, []int{3, 8}, []int{8}, false, true},
		{"minimum", math.Min, []int{3, 8}, []int{3, 1}, false, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s%v%v", c.op, c.xs, c.ys), func(t *testing.T) {
			out, ok := broadcastShapes(c.xs, c.ys)
			require.True(t, ok)
			x, y := halfs(rng, numel(c.xs), 4), halfs(rng, numel(c.ys), 4)
			if c.positive {
				for i := range x {
					x[i] = float32(fp16.Round64(math.Abs(float64(x[i])) + 0.25))
				}
				y = halfs(rng, numel(c.ys), 1)
			}
			// Include exact ties and cancellation.
			x[0], y[0] = 1, 0x1p-11
			p := program([]port{in("x", c.xs...), in("y", c.ys...)},
				stmt("z", out, c.op, "x = x", "y = y"), []port{in("z", out...)})
			got := run(t, Wide, p, x, y)[0]
			for i := range got {
				idx := unravel(i, out)
				exact := c.f(float64(x[bcastIndex(idx, c.xs)]), float64(y[bcastIndex(idx, c.ys)]))
				if c.rounded {
					require.Equal(t, float32(fp16.Round64(exact)), got[i], "element %d: exact %g", i, exact)
					continue
				}
				tol := (u16+u32)*(1+u32)*math.Abs(exact) + 0x1p-25
				require.InDelta(t, exact, float64(got[i]), tol, "element %d", i)
			}
		})
	}
}

func TestUnaryOps(t *testing.T) {
	rng := newRNG(2)
	gelu := func(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }
	// Tolerances as for pow (a float32 result rounded to fp16), except the
	// correctly rounded ones (square, sqrt), compared exactly, and the exact
	// ones (abs, relu).
	cases := []struct {
		op       string
		extra    string // const declarations
		args     string // extra arguments
		f        func(float64) float64
		domain   func(float64) float64 // maps a random value into the domain
		rounded  bool
		exactNum bool
	}{
		{"abs", "", "", math.Abs, nil, false, true},
		{"relu", "", "", func(x float64) float64 { return math.Max(x, 0) }, nil, false, true},
		{"square", "", "", func(x float64) float64 { return x * x }, nil, true, false},
		{"sqrt", "", "", math.Sqrt, math.Abs, true, false},
		{"exp", "", "", math.Exp, nil, false, false},
		{"log", cHalf("eps", 0x1p-3), "epsilon = eps, ", func(x float64) float64 { return math.Log(x + 0x1p-3) }, math.Abs, false, false},
		{"log", "", "", math.Log, func(x float64) float64 { return math.Abs(x) + 0x1p-4 }, false, false},
		{"tanh", "", "", math.Tanh, nil, false, false},
		{"sigmoid", "", "", func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, nil, false, false},
		{"gelu", cStr("mode", "EXACT"), "mode = mode, ", gelu, nil, false, false},
		{"gelu", cStr("mode", "TANH_APPROXIMATION"), "mode = mode, ", func(x float64) float64 {
			return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
		}, nil, false, false},
		{"gelu", cStr("mode", "SIGMOID_APPROXIMATION"), "mode = mode, ", func(x float64) float64 { return x / (1 + math.Exp(-1.702*x)) }, nil, false, false},
	}
	shape := []int{3, 50}
	for _, c := range cases {
		t.Run(c.op+c.args, func(t *testing.T) {
			x := halfs(rng, numel(shape), 2)
			if c.domain != nil {
				for i := range x {
					x[i] = float32(fp16.Round64(c.domain(float64(x[i]))))
				}
			}
			body := c.extra + fmt.Sprintf("        %s z = %s(%sx = x)[name = string(\"z\")];\n", ft(shape), c.op, c.args)
			got := run(t, Wide, program([]port{in("x", shape...)}, body, []port{in("z", shape...)}), x)[0]
			for i, v := range got {
				exact := c.f(float64(x[i]))
				switch {
				case c.exactNum:
					require.Equal(t, float32(exact), v)
				case c.rounded:
					require.Equal(t, float32(fp16.Round64(exact)), v, "x = %g", x[i])
				default:
					tol := (u16+u32)*(1+u32)*math.Abs(exact) + 0x1p-25
					require.InDelta(t, exact, float64(v), tol, "x = %g", x[i])
				}
			}
		})
	}
}

// modelDot is the reference of the matmul/conv model, written
// independently of the kernels: products rounded to fp16 (via float64), a
// float32 running sum (or fp16 under Narrow), the sum rounded to fp16.
func modelDot(a, b []float64, narrow bool) float64 {
	var s float32
	for k := range a {
		p := fp16.Round64(a[k] * b[k])
		if narrow {
			s = float32(fp16.Round64(float64(s) + p))
		} else {
			s = float32(float64(s) + p)
		}
	}
	return fp16.Round64(float64(s))
}

// dotBound bounds |model − exact| for a K-term dot product whose absolute
// products sum to abs: each product rounds with relative error u16, the
// float32 sum adds at most (K−1)·u32 relative to the sum of the rounded
// magnitudes, the final rounding u16 (Wide); under Narrow every one of the
// K partial sums rounds with u16. 1.01 covers the second-order terms, and
// K·2⁻²⁵ the absolute error of products in the subnormal range.
func dotBound(k int, abs float64, narrow bool) float64 {
	if narrow {
		return 1.01*float64(k+1)*u16*abs + float64(k)*0x1p-25
	}
	return 1.01*(2*u16+float64(k)*u32)*abs + float64(k)*0x1p-25
}

func TestMatmul(t *testing.T) {
	rng := newRNG(3)
	cases := []struct {
		xs, ys []int
		tx, ty bool
	}{
		{[]int{5, 7}, []int{7, 3}, false, false},
		{[]int{37, 65}, []int{65, 33}, false, false}, // odd sizes, several tasks
		{[]int{2, 1, 6, 4}, []int{3, 5, 6}, true, true},
		{[]int{3, 4, 6}, []int{6, 5}, false, false}, // y shared by the batch
		{[]int{4, 6}, []int{2, 4, 5}, true, false},
		{[]int{2, 3, 9}, []int{2, 9, 2}, false, false},
		{[]int{64, 40}, []int{70, 40}, false, true},
	}
	for _, c := range cases {
		for _, num := range []Numerics{Wide, Narrow} {
			t.Run(fmt.Sprintf("%v%v_%v%v_%v", c.xs, c.ys, c.tx, c.ty, num), func(t *testing.T) {
				rx, ry := len(c.xs), len(c.ys)
				m, k := c.xs[rx-2], c.xs[rx-1]
				if c.tx {
					m, k = k, m
				}
				n := c.ys[ry-1]
				if c.ty {
					n = c.ys[ry-2]
				}
				batch, ok := broadcastShapes(c.xs[:rx-2], c.ys[:ry-2])
				require.True(t, ok)
				out := append(append([]int{}, batch...), m, n)
				x, y := halfs(rng, numel(c.xs), 1), halfs(rng, numel(c.ys), 1)
				body := cBool("tx", c.tx) + cBool("ty", c.ty) +
					stmt("z", out, "matmul", "transpose_x = tx", "transpose_y = ty", "x = x", "y = y")
				got := run(t, num, program([]port{in("x", c.xs...), in("y", c.ys...)}, body, []port{in("z", out...)}), x, y)[0]
				bx := append(append([]int{}, c.xs[:rx-2]...), 1, 1)
				by := append(append([]int{}, c.ys[:ry-2]...), 1, 1)
				for i := range got {
					idx := unravel(i, out)
					bi, bj := idx[len(idx)-2], idx[len(idx)-1]
					xo := bcastIndex(idx, bx) * m * k
					yo := bcastIndex(idx, by) * k * n
					a, b := make([]float64, k), make([]float64, k)
					exact, abs := 0.0, 0.0
					for kk := range k {
						if c.tx {
							a[kk] = float64(x[xo+kk*m+bi])
						} else {
							a[kk] = float64(x[xo+bi*k+kk])
						}
						if c.ty {
							b[kk] = float64(y[yo+bj*k+kk])
						} else {
							b[kk] = float64(y[yo+kk*n+bj])
						}
						exact += a[kk] * b[kk]
						abs += math.Abs(a[kk] * b[kk])
					}
					require.Equal(t, float32(modelDot(a, b, num == Narrow)), got[i], "element %v", idx)
					require.InDelta(t, exact, float64(got[i]), dotBound(k, abs, num == Narrow), "element %v", idx)
				}
			})
		}
	}
}

// modelConv is a direct 2-D conv under the model: for each output, the
// products over (ci, kh, kw) in that order, as modelDot sums them; then the
// bias as an fp16 add. Padding positions are skipped (they contribute zero).
func modelConv(x []float32, xs []int, w []float32, ws []int, bias []float32, stride, dil, pad [2]int, padEnd [2]int, groups int, narrow bool) ([]float64, []float64, []float64, []int) {
	n, ci, h, wd := xs[0], xs[1], xs[2], xs[3]
	co, cig, kh, kw := ws[0], ws[1], ws[2], ws[3]
	oh := (h+pad[0]+padEnd[0]-((kh-1)*dil[0]+1))/stride[0] + 1
	ow := (wd+pad[1]+padEnd[1]-((kw-1)*dil[1]+1))/stride[1] + 1
	cog := co / groups
	out := []int{n, co, oh, ow}
	model, exact, abs := make([]float64, numel(out)), make([]float64, numel(out)), make([]float64, numel(out))
	for img := range n {
		for o := range co {
			g := o / cog
			for y := range oh {
				for xq := range ow {
					var a, b []float64
					for c := range cig {
						for r := range kh {
							for s := range kw {
								iy, ix := y*stride[0]+r*dil[0]-pad[0], xq*stride[1]+s*dil[1]-pad[1]
								if iy < 0 || iy >= h || ix < 0 || ix >= wd {
									continue
								}
								a = append(a, float64(x[((img*ci+g*cig+c)*h+iy)*wd+ix]))
								b = append(b, float64(w[((o*cig+c)*kh+r)*kw+s]))
							}
						}
					}
					i := ((img*co+o)*oh+y)*ow + xq
					model[i] = modelDot(a, b, narrow)
					for j := range a {
						exact[i] += a[j] * b[j]
						abs[i] += math.Abs(a[j] * b[j])
					}
					if bias != nil {
						model[i] = fp16.Round64(model[i] + float64(bias[o]))
						exact[i] += float64(bias[o])
						abs[i] += math.Abs(float64(bias[o]))
					}
				}
			}
		}
	}
	return model, exact, abs, out
}

// blobConst declares an fp16 const stored in the weight blob.
func blobConst(w *mil.BlobWriter, name string, shape []int, vals []float32) string {
	f := make([]float64, len(vals))
	for i, v := range vals {
		f[i] = float64(v)
	}
	off := w.Add(mil.BlobFP16, mil.FP16Data(f))
	return fmt.Sprintf("        %s %s = const()[name = string(%q), val = %s(BLOBFILE(path = string(%q), offset = uint64(%d)))];\n",
		ft(shape), name, name, ft(shape), lower.WeightPath, off)
}

func TestConv(t *testing.T) {
	rng := newRNG(4)
	cases := []struct {
		name          string
		xs, ws        []int
		stride, dil   [2]int
		padType       string
		pad           [4]int // top, bottom, left, right (custom)
		groups        int
		bias          bool
		weightIsInput bool
	}{
		{"valid", []int{1, 3, 9, 11}, []int{4, 3, 3, 3}, [2]int{1, 1}, [2]int{1, 1}, "valid", [4]int{}, 1, false, false},
		{"stride-pad", []int{2, 4, 10, 9}, []int{6, 4, 3, 2}, [2]int{2, 3}, [2]int{1, 1}, "custom", [4]int{1, 2, 0, 1}, 1, true, false},
		{"dilation", []int{1, 2, 12, 12}, []int{3, 2, 3, 3}, [2]int{1, 1}, [2]int{2, 3}, "custom", [4]int{2, 2, 3, 3}, 1, false, false},
		{"groups", []int{1, 6, 8, 8}, []int{4, 3, 3, 3}, [2]int{1, 1}, [2]int{1, 1}, "same", [4]int{}, 2, true, false},
		{"depthwise-same-stride", []int{1, 4, 7, 8}, []int{4, 1, 4, 3}, [2]int{2, 2}, [2]int{1, 1}, "same", [4]int{}, 4, false, false},
		{"1x1-linear", []int{1, 70, 1, 40}, []int{67, 70, 1, 1}, [2]int{1, 1}, [2]int{1, 1}, "valid", [4]int{}, 1, true, false},
		{"weight-input", []int{1, 3, 6, 7}, []int{5, 3, 2, 2}, [2]int{1, 2}, [2]int{1, 1}, "custom", [4]int{1, 0, 1, 1}, 1, false, true},
	}
	for _, c := range cases {
		for _, num := range []Numerics{Wide, Narrow} {
			t.Run(c.name+"_"+num.String(), func(t *testing.T) {
				x, w := halfs(rng, numel(c.xs), 1), halfs(rng, numel(c.ws), 1)
				var bias []float32
				pad, padEnd := [2]int{c.pad[0], c.pad[2]}, [2]int{c.pad[1], c.pad[3]}
				if c.padType == "same" {
					for d := range 2 {
						in, s := c.xs[2+d], c.stride[d]
						ek := (c.ws[2+d]-1)*c.dil[d] + 1
						tot := max(0, s*((in+s-1)/s)-in+ek-s)
						pad[d], padEnd[d] = tot/2, tot-tot/2
					}
				}
				bw := mil.NewBlobWriter()
				body := cInts("st", c.stride[:]...) + cInts("dl", c.dil[:]...) + cStr("pt", c.padType) +
					cInts("pd", c.pad[:]...) + cInt("gr", c.groups)
				args := []string{"dilations = dl", "groups = gr", "pad = pd", "pad_type = pt", "strides = st", "weight = w", "x = x"}
				ins := []port{in("x", c.xs...)}
				if c.weightIsInput {
					ins = append(ins, in("w", c.ws...))
				} else {
					body += blobConst(bw, "w", c.ws, w)
				}
				if c.bias {
					bias = halfs(rng, c.ws[0], 1)
					body += blobConst(bw, "b", []int{c.ws[0]}, bias)
					args = append(args, "bias = b")
				}
				model, exact, abs, out := modelConv(x, c.xs, w, c.ws, bias, c.stride, c.dil, pad, padEnd, c.groups, num == Narrow)
				body += stmt("z", out, "conv", args...)
				p := program(ins, body, []port{in("z", out...)})
				if bw.Count() > 0 {
					p.Blob = bw.Bytes()
				}
				inputs := [][]float32{x}
				if c.weightIsInput {
					inputs = append(inputs, w)
				}
				got := run(t, num, p, inputs...)[0]
				k := c.ws[1] * c.ws[2] * c.ws[3]
				for i := range got {
					require.Equal(t, float32(model[i]), got[i], "element %v", unravel(i, out))
					bound := dotBound(k, abs[i], num == Narrow)
					if c.bias {
						bound += u16 * abs[i] // the bias add rounds once more
					}
					require.InDelta(t, exact[i], float64(got[i]), bound, "element %v", unravel(i, out))
				}
			})
		}
	}
}

func TestReductions(t *testing.T) {
	rng := newRNG(5)
	shape := []int{3, 4, 5}
	cases := []struct {
		op   string
		axes []int // nil: all
		keep bool
	}{
		{"reduce_sum", []int{0, 2}, false},
		{"reduce_sum", []int{-1}, true},
		{"reduce_sum", nil, true},
		{"reduce_mean", []int{1}, false},
		{"reduce_mean", []int{2, 0}, true},
		{"reduce_max", []int{0, 1}, false},
		{"reduce_max", []int{-1}, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s%v%v", c.op, c.axes, c.keep), func(t *testing.T) {
			x := halfs(rng, numel(shape), 8)
			red := map[int]bool{}
			for _, a := range c.axes {
				red[(a+3)%3] = true
			}
			if c.axes == nil {
				red = map[int]bool{0: true, 1: true, 2: true}
			}
			var out, kept []int
			for d, n := range shape {
				switch {
				case !red[d]:
					out, kept = append(out, n), append(kept, n)
				case c.keep:
					out = append(out, 1)
				}
			}
			body := cBool("kd", c.keep)
			args := []string{"keep_dims = kd", "x = x"}
			if c.axes != nil {
				body += cInts("ax", c.axes...)
				args = append(args, "axes = ax")
			}
			body += stmt("z", out, c.op, args...)
			got := run(t, Wide, program([]port{in("x", shape...)}, body, []port{in("z", out...)}), x)[0]
			// Reference: visit x in row-major order; each element goes to
			// its output position, so each output sees its reduced elements
			// in row-major order of the reduced dims.
			n := numel(shape) / max(1, numel(kept))
			sum, mx, exact, abs := make([]float64, len(got)), make([]float64, len(got)), make([]float64, len(got)), make([]float64, len(got))
			for i := range mx {
				mx[i] = math.Inf(-1)
			}
			for i, v := range x {
				idx := unravel(i, shape)
				var kidx []int
				for d := range shape {
					if !red[d] {
						kidx = append(kidx, idx[d])
					}
				}
				o := ravel(kidx, kept)
				sum[o] = fp16.Round64(sum[o] + float64(v))
				mx[o] = math.Max(mx[o], float64(v))
				exact[o] += float64(v)
				abs[o] += math.Abs(float64(v))
			}
			for o := range got {
				switch c.op {
				case "reduce_sum":
					require.Equal(t, float32(sum[o]), got[o])
					// n fp16 partial-sum roundings: ≤ n·u16·Σ|x|.
					require.InDelta(t, exact[o], float64(got[o]), float64(n)*u16*abs[o])
				case "reduce_mean":
					require.Equal(t, float32(fp16.Round64(sum[o]/float64(n))), got[o])
					require.InDelta(t, exact[o]/float64(n), float64(got[o]), float64(n+1)*u16*abs[o]/float64(n))
				case "reduce_max":
					require.Equal(t, float32(mx[o]), got[o])
				}
			}
		})
	}
}

func TestSoftmax(t *testing.T) {
	rng := newRNG(6)
	shape := []int{2, 5, 33}
	for _, axis := range []int{1, -1, 0} {
		t.Run(fmt.Sprint(axis), func(t *testing.T) {
			x := halfs(rng, numel(shape), 3)
			body := cInt("ax", axis) + stmt("z", shape, "softmax", "axis = ax", "x = x")
			got := run(t, Wide, program([]port{in("x", shape...)}, body, []port{in("z", shape...)}), x)[0]
			ax := (axis + 3) % 3
			for i := range got {
				idx := unravel(i, shape)
				den := 0.0
				for j := range shape[ax] {
					jdx := append([]int{}, idx...)
					jdx[ax] = j
					den += math.Exp(float64(x[ravel(jdx, shape)]))
				}
				exact := math.Exp(float64(x[i])) / den
				// Rounded once to fp16 (u16) after a float32 computation
				// whose error is a few u32 per term: 64·u32 ≪ u16 covers
				// it; 2⁻²⁵ covers results in the subnormal range.
				tol := (u16+64*u32)*exact + 0x1p-25
				require.InDelta(t, exact, float64(got[i]), tol, "element %v", idx)
			}
		})
	}
}

func TestLayerNorm(t *testing.T) {
	rng := newRNG(7)
	shape := []int{3, 4, 6}
	cases := []struct {
		axes       []int
		gamma, eps bool
	}{
		{[]int{-1}, true, false},
		{[]int{1, 2}, true, true},
		{nil, false, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.axes, c.gamma), func(t *testing.T) {
			x := halfs(rng, numel(shape), 2)
			axes := c.axes
			if axes == nil {
				axes = []int{0, 1, 2}
			}
			norm := map[int]bool{}
			var pshape []int
			for _, a := range axes {
				norm[(a+3)%3] = true
			}
			for d := range shape {
				if norm[d] {
					pshape = append(pshape, shape[d])
				}
			}
			gamma, beta := filled(numel(pshape), 1), make([]float32, numel(pshape))
			eps := fp16.Round64(1e-5)
			body := ""
			args := []string{"x = x"}
			if c.axes != nil {
				body += cInts("ax", c.axes...)
				args = append(args, "axes = ax")
			}
			if c.gamma {
				gamma, beta = halfs(rng, len(gamma), 1), halfs(rng, len(beta), 1)
				gf, bf := make([]float64, len(gamma)), make([]float64, len(beta))
				for i := range gamma {
					gf[i], bf[i] = float64(gamma[i]), float64(beta[i])
				}
				body += cHalfs("g", pshape, gf) + cHalfs("b", pshape, bf)
				args = append(args, "gamma = g", "beta = b")
			}
			if c.eps {
				eps = 0.25
				body += cHalf("e", eps)
				args = append(args, "epsilon = e")
			}
			body += stmt("z", shape, "layer_norm", args...)
			got := run(t, Wide, program([]port{in("x", shape...)}, body, []port{in("z", shape...)}), x)[0]
			for i := range got {
				idx := unravel(i, shape)
				var lane []float64
				for j := range x {
					jdx := unravel(j, shape)
					same := true
					for d := range shape {
						if !norm[d] && jdx[d] != idx[d] {
							same = false
						}
					}
					if same {
						lane = append(lane, float64(x[j]))
					}
				}
				mean, sq := 0.0, 0.0
				for _, v := range lane {
					mean += v
				}
				mean /= float64(len(lane))
				for _, v := range lane {
					sq += (v - mean) * (v - mean)
				}
				rstd := 1 / math.Sqrt(sq/float64(len(lane))+eps)
				var pidx []int
				for d := range shape {
					if norm[d] {
						pidx = append(pidx, idx[d])
					}
				}
				pi := ravel(pidx, pshape)
				scaled := (float64(x[i]) - mean) * rstd * float64(gamma[pi])
				exact := scaled + float64(beta[pi])
				// One fp16 rounding of the result (u16·|exact|) after float32
				// work on a lane of ≤ 72 values: the mean and variance carry
				// ≲ 72·u32 relative error, well under 2⁻¹⁴ of the scale
				// |scaled| + |β| + |γ| (the last for the mean's error scaled
				// by rstd ≤ 1/√ε).
				tol := u16*math.Abs(exact) + 0x1p-14*(math.Abs(scaled)+math.Abs(float64(beta[pi]))+math.Abs(float64(gamma[pi])))
				require.InDelta(t, exact, float64(got[i]), tol, "element %v", idx)
			}
		})
	}
}

func TestLayoutOps(t *testing.T) {
	rng := newRNG(8)
	x := halfs(rng, 2*3*4, 1)
	y := halfs(rng, 2*5*4, 1)
	xs := []int{2, 3, 4}
	ref := func(shape []int, f func(idx []int) float32) []float32 {
		out := make([]float32, numel(shape))
		for i := range out {
			out[i] = f(unravel(i, shape))
		}
		return out
	}
	cases := []struct {
		name string
		body string
		out  []int
		want []float32
	}{
		{"reshape-1", cInts("s", 4, -1, 2) + stmt("z", []int{4, 3, 2}, "reshape", "shape = s", "x = x"), []int{4, 3, 2}, x},
		{"reshape-0", cInts("s", 6, 0) + stmt("z", []int{6, 4}, "reshape", "shape = s", "x = x"), []int{6, 4}, x},
		{"transpose", cInts("p", 2, 0, 1) + stmt("z", []int{4, 2, 3}, "transpose", "perm = p", "x = x"), []int{4, 2, 3},
			ref([]int{4, 2, 3}, func(i []int) float32 { return x[ravel([]int{i[1], i[2], i[0]}, xs)] })},
		{"transpose-neg", cInts("p", 0, -1, 1) + stmt("z", []int{2, 4, 3}, "transpose", "perm = p", "x = x"), []int{2, 4, 3},
			ref([]int{2, 4, 3}, func(i []int) float32 { return x[ravel([]int{i[0], i[2], i[1]}, xs)] })},
		{"concat", cInt("ax", 1) + cBool("il", false) + stmt("z", []int{2, 8, 4}, "concat", "axis = ax", "interleave = il", "values = (x, y)"), []int{2, 8, 4},
			ref([]int{2, 8, 4}, func(i []int) float32 {
				if i[1] < 3 {
					return x[ravel(i, xs)]
				}
				return y[ravel([]int{i[0], i[1] - 3, i[2]}, []int{2, 5, 4})]
			})},
		{"concat-interleave", cInt("ax", -1) + cBool("il", true) + stmt("z", []int{2, 3, 8}, "concat", "axis = ax", "interleave = il", "values = (x, x2)"), []int{2, 3, 8},
			ref([]int{2, 3, 8}, func(i []int) float32 {
				v := x[ravel([]int{i[0], i[1], i[2] / 2}, xs)]
				if i[2]%2 == 1 {
					return float32(fp16.Round64(2 * float64(v)))
				}
				return v
			})},
		{"slice", cInts("b", 1, 0, 1) + cInts("s", 1, -1, 2) + stmt("z", []int{1, 3, 2}, "slice_by_size", "begin = b", "size = s", "x = x"), []int{1, 3, 2},
			ref([]int{1, 3, 2}, func(i []int) float32 { return x[ravel([]int{1 + i[0], i[1], 1 + i[2]}, xs)] })},
		{"pad", cInts("p", 1, 0, 2, 3) + cHalf("cv", -1.5) + stmt("z", []int{2, 4, 9}, "pad", "constant_val = cv", "pad = p", "x = x"), []int{2, 4, 9},
			ref([]int{2, 4, 9}, func(i []int) float32 {
				r, c := i[1]-1, i[2]-2
				if r < 0 || c < 0 || c >= 4 {
					return -1.5
				}
				return x[ravel([]int{i[0], r, c}, xs)]
			})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := cHalf("two", 2) + stmt("x2", xs, "mul", "x = x", "y = two") + c.body
			p := program([]port{in("x", xs...), in("y", 2, 5, 4)}, body, []port{in("z", c.out...)})
			got := run(t, Wide, p, x, y)[0]
			require.Equal(t, c.want, got)
		})
	}
}
