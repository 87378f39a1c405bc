package dataflow

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// tol64 bounds the difference between Eval and a hand-computed or
// independently computed value. Eval works in float64 (unit roundoff
// u64 = 2⁻⁵³); every expected value here is either exact or the result of at
// most ~50 float64 operations on values of magnitude ≤ ~100, so the rounding
// error is ≤ 50·u64·100·(small constant) ≈ 1e-12 < 2⁻³⁶ ≈ 1.5e-11. (The
// fp16 unit roundoff u16 = 2⁻¹¹ plays no part: nothing here is rounded to
// fp16.) A wrong formula misses by far more than that.
const tol64 = 0x1p-36

// seq returns [start, start+1, …] of length n.
func seq(n int, start float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = start + float64(i)
	}
	return s
}

// randData returns n values uniform in [−1, 1) from r.
func randData(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 2*r.Float64() - 1
	}
	return s
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// evalOut builds the graph with build, outputs its result as "out", checks
// the result shape, and returns Eval's value of "out".
func evalOut(t *testing.T, build func(g *Graph) Value, inputs map[string][]float64, wantShape Shape) []float64 {
	t.Helper()
	g := New()
	v := build(g)
	require.NoError(t, g.Err())
	require.True(t, v.Valid())
	require.Equal(t, cloneShape(wantShape), v.Shape(), "result shape")
	g.Output("out", v)
	require.NoError(t, Verify(g))
	res, err := Eval(g, inputs)
	require.NoError(t, err)
	require.Len(t, res["out"], wantShape.Size())
	return res["out"]
}

func requireClose(t *testing.T, want, got []float64, tol float64, msgs ...any) {
	t.Helper()
	require.Len(t, got, len(want), msgs...)
	for i := range want {
		require.False(t, math.IsNaN(got[i]), "element %d is NaN %v", i, msgs)
		require.InDelta(t, want[i], got[i], tol, "element %d %v", i, msgs)
	}
}

type evalCase struct {
	name   string
	build  func(g *Graph) Value
	inputs map[string][]float64
	shape  Shape
	want   []float64
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := evalOut(t, c.build, c.inputs, c.shape)
			requireClose(t, c.want, got, tol64)
		})
	}
}

func TestEvalElementwiseBinary(t *testing.T) {
	x23 := seq(6, 1) // [[1 2 3] [4 5 6]]
	runEvalCases(t, []evalCase{
		{"add_row_broadcast", func(g *Graph) Value {
			return g.Add(g.Input("x", Shape{2, 3}), g.Const("y", Shape{3}, []float64{10, 20, 30}))
		}, map[string][]float64{"x": x23}, Shape{2, 3}, []float64{11, 22, 33, 14, 25, 36}},
		{"sub_column_broadcast", func(g *Graph) Value {
			return g.Sub(g.Input("x", Shape{2, 3}), g.Const("y", Shape{2, 1}, []float64{1, 2}))
		}, map[string][]float64{"x": x23}, Shape{2, 3}, []float64{0, 1, 2, 2, 3, 4}},
		{"mul_scalar", func(g *Graph) Value {
			return g.Mul(g.Scalar(2), g.Input("x", Shape{2, 3}))
		}, map[string][]float64{"x": x23}, Shape{2, 3}, []float64{2, 4, 6, 8, 10, 12}},
		{"div_outer_broadcast", func(g *Graph) Value {
			return g.Div(g.Input("x", Shape{2, 1}), g.Input("y", Shape{1, 3}))
		}, map[string][]float64{"x": {1, 2}, "y": {1, 2, 4}}, Shape{2, 3}, []float64{1, 0.5, 0.25, 2, 1, 0.5}},
		{"pow", func(g *Graph) Value {
			return g.Pow(g.Input("x", Shape{4}), g.Const("p", Shape{4}, []float64{2, 0.5, -1, 3}))
		}, map[string][]float64{"x": {3, 9, 4, -2}}, Shape{4}, []float64{9, 3, 0.25, -8}},
		{"maximum", func(g *Graph) Value {
			return g.Maximum(g.Input("x", Shape{3}), g.Scalar(3))
		}, map[string][]float64{"x": {1, 5, -2}}, Shape{3}, []float64{3, 5, 3}},
		{"minimum", func(g *Graph) Value {
			return g.Minimum(g.Input("x", Shape{3}), g.Scalar(3))
		}, map[string][]float64{"x": {1, 5, -2}}, Shape{3}, []float64{1, 3, -2}},
		{"scalar_scalar", func(g *Graph) Value {
			return g.Sub(g.Input("x", Shape{}), g.Scalar(0.5))
		}, map[string][]float64{"x": {2}}, Shape{}, []float64{1.5}},
		{"rank3_both_broadcast", func(g *Graph) Value {
			// x [2 1 3] + y [4 1] → [2 4 3]; out[i,j,k] = x[i,0,k] + y[j,0].
			return g.Add(g.Input("x", Shape{2, 1, 3}), g.Input("y", Shape{4, 1}))
		}, map[string][]float64{"x": {0, 1, 2, 10, 11, 12}, "y": {100, 200, 300, 400}}, Shape{2, 4, 3},
			[]float64{
				100, 101, 102, 200, 201, 202, 300, 301, 302, 400, 401, 402,
				110, 111, 112, 210, 211, 212, 310, 311, 312, 410, 411, 412,
			}},
	})
}

func TestEvalUnary(t *testing.T) {
	u := func(f func(g *Graph, x Value) Value) func(g *Graph) Value {
		return func(g *Graph) Value { return f(g, g.Input("x", Shape{1, 3})) }
	}
	in := func(v ...float64) map[string][]float64 { return map[string][]float64{"x": v} }
	s := Shape{1, 3}
	runEvalCases(t, []evalCase{
		{"neg", u((*Graph).Neg), in(1, -2, 0), s, []float64{-1, 2, 0}},
		{"abs", u((*Graph).Abs), in(1, -2, -0.5), s, []float64{1, 2, 0.5}},
		{"square", u((*Graph).Square), in(3, -4, 0.5), s, []float64{9, 16, 0.25}},
		{"sqrt", u((*Graph).Sqrt), in(4, 9, 0.25), s, []float64{2, 3, 0.5}},
		{"rsqrt", u((*Graph).Rsqrt), in(4, 16, 0.25), s, []float64{0.5, 0.25, 2}},
		{"exp", u((*Graph).Exp), in(0, 1, -1), s, []float64{1, math.E, 1 / math.E}},
		{"log", u((*Graph).Log), in(1, math.E, 0.5), s, []float64{0, 1, -math.Ln2}},
		{"tanh", u((*Graph).Tanh), in(0, 0.5, -0.5), s, []float64{0, 0.46211715726000974, -0.46211715726000974}},
		{"sigmoid", u((*Graph).Sigmoid), in(0, math.Log(3), -math.Log(3)), s, []float64{0.5, 0.75, 0.25}},
		{"relu", u((*Graph).Relu), in(-1, 0, 2), s, []float64{0, 0, 2}},
		{"gelu_default_exact", u(func(g *Graph, x Value) Value { return g.Gelu(x, "") }), in(0, 1, -1), s,
			// 0.5·x·(1+erf(x/√2)) at 1 and −1 (Φ(1) = 0.8413447460685429).
			[]float64{0, 0.8413447460685429, -0.15865525393145707}},
		{"gelu_tanh", u(func(g *Graph, x Value) Value { return g.Gelu(x, GeluTanh) }), in(0, 1, 0), s,
			[]float64{0, 0.8411919906082768, 0}},
		{"gelu_sigmoid", u(func(g *Graph, x Value) Value { return g.Gelu(x, GeluSigmoid) }), in(0, 1, 2), s,
			// x/(1+e^(−1.702x)).
			[]float64{0, 0.8457957659328212, 1.9356586231442083}},
	})
}

func TestEvalMatMulHand(t *testing.T) {
	// [[1 2 3] [4 5 6]] · [[1 0] [0 1] [1 1]] = [[4 5] [10 11]].
	a := seq(6, 1)
	b := []float64{1, 0, 0, 1, 1, 1}
	runEvalCases(t, []evalCase{
		{"plain", func(g *Graph) Value {
			return g.MatMul(g.Input("a", Shape{2, 3}), g.Const("b", Shape{3, 2}, b), false, false)
		}, map[string][]float64{"a": a}, Shape{2, 2}, []float64{4, 5, 10, 11}},
		{"transpose_x", func(g *Graph) Value {
			// aᵀ stored as [3 2]: [[1 4] [2 5] [3 6]].
			return g.MatMul(g.Input("at", Shape{3, 2}), g.Const("b", Shape{3, 2}, b), true, false)
		}, map[string][]float64{"at": {1, 4, 2, 5, 3, 6}}, Shape{2, 2}, []float64{4, 5, 10, 11}},
		{"transpose_y", func(g *Graph) Value {
			// bᵀ stored as [2 3]: [[1 0 1] [0 1 1]].
			return g.MatMul(g.Input("a", Shape{2, 3}), g.Const("bt", Shape{2, 3}, []float64{1, 0, 1, 0, 1, 1}), false, true)
		}, map[string][]float64{"a": a}, Shape{2, 2}, []float64{4, 5, 10, 11}},
	})
}

// TestEvalMatMulBatched checks batched matmul with every transpose
// combination and broadcast batch dims against gonum's per-matrix products.
func TestEvalMatMulBatched(t *testing.T) {
	r := newRand(1)
	const m, k, n = 3, 4, 5
	// x batch [2 1], y batch [3] → out batch [2 3].
	for _, tx := range []bool{false, true} {
		for _, ty := range []bool{false, true} {
			xs := Shape{2, 1, m, k}
			if tx {
				xs = Shape{2, 1, k, m}
			}
			ys := Shape{3, k, n}
			if ty {
				ys = Shape{3, n, k}
			}
			xd, yd := randData(r, xs.Size()), randData(r, ys.Size())
			got := evalOut(t, func(g *Graph) Value {
				return g.MatMul(g.Input("x", xs), g.Input("y", ys), tx, ty)
			}, map[string][]float64{"x": xd, "y": yd}, Shape{2, 3, m, n})
			for b0 := range 2 {
				for b1 := range 3 {
					xm := mat.NewDense(xs[2], xs[3], xd[b0*m*k:(b0+1)*m*k])
					ym := mat.NewDense(ys[1], ys[2], yd[b1*k*n:(b1+1)*k*n])
					var xa, ya mat.Matrix = xm, ym
					if tx {
						xa = xm.T()
					}
					if ty {
						ya = ym.T()
					}
					var want mat.Dense
					want.Mul(xa, ya)
					off := (b0*3 + b1) * m * n
					requireClose(t, want.RawMatrix().Data, got[off:off+m*n], tol64, "tx", tx, "ty", ty, "batch", b0, b1)
				}
			}
		}
	}
}

func TestEvalConv2DHand(t *testing.T) {
	x := seq(9, 1) // [[1 2 3] [4 5 6] [7 8 9]]
	w := []float64{1, 0, 0, 1}
	runEvalCases(t, []evalCase{
		{"valid", func(g *Graph) Value {
			return g.Conv2D(g.Input("x", Shape{1, 1, 3, 3}), g.Const("w", Shape{1, 1, 2, 2}, w), Conv2DOptions{})
		}, map[string][]float64{"x": x}, Shape{1, 1, 2, 2}, []float64{1 + 5, 2 + 6, 4 + 8, 5 + 9}},
		{"pad1_stride2", func(g *Graph) Value {
			// Padded 5×5, windows at rows/cols {−1, 1}: w00 hits padding
			// except at (1,1) where it reads x[1,1] = 5.
			return g.Conv2D(g.Input("x", Shape{1, 1, 3, 3}), g.Const("w", Shape{1, 1, 2, 2}, w),
				Conv2DOptions{Strides: [2]int{2, 2}, Pads: [4]int{1, 1, 1, 1}})
		}, map[string][]float64{"x": x}, Shape{1, 1, 2, 2}, []float64{1, 3, 7, 5 + 9}},
		{"dilation2", func(g *Graph) Value {
			// Dilated 2×2 kernel spans 3×3: x[0,0] + x[2,2].
			return g.Conv2D(g.Input("x", Shape{1, 1, 3, 3}), g.Const("w", Shape{1, 1, 2, 2}, w),
				Conv2DOptions{Dilations: [2]int{2, 2}})
		}, map[string][]float64{"x": x}, Shape{1, 1, 1, 1}, []float64{1 + 9}},
		{"asymmetric_pad", func(g *Graph) Value {
			// Only a bottom and a right row of zeros: 4×4 padded, out 3×3.
			return g.Conv2D(g.Input("x", Shape{1, 1, 3, 3}), g.Const("w", Shape{1, 1, 2, 2}, w),
				Conv2DOptions{Pads: [4]int{0, 1, 0, 1}})
		}, map[string][]float64{"x": x}, Shape{1, 1, 3, 3}, []float64{6, 8, 3, 12, 14, 6, 7, 8, 9}},
		{"groups2", func(g *Graph) Value {
			// Two channels, two groups, 1×1 kernels: channel c scaled by w[c].
			return g.Conv2D(g.Input("x", Shape{1, 2, 1, 2}), g.Const("w", Shape{2, 1, 1, 1}, []float64{10, -1}),
				Conv2DOptions{Groups: 2})
		}, map[string][]float64{"x": {1, 2, 3, 4}}, Shape{1, 2, 1, 2}, []float64{10, 20, -3, -4}},
	})
}

// naiveConv2D is an independent reference: it materializes the zero-padded
// input, then for each output channel loops over its group's input channels.
func naiveConv2D(x []float64, xs Shape, w []float64, ws Shape, o Conv2DOptions) ([]float64, Shape) {
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	CO, CG, KH, KW := ws[0], ws[1], ws[2], ws[3]
	PH, PW := H+o.Pads[0]+o.Pads[1], W+o.Pads[2]+o.Pads[3]
	padded := make([][][][]float64, N)
	for n := range N {
		padded[n] = make([][][]float64, C)
		for c := range C {
			padded[n][c] = make([][]float64, PH)
			for i := range PH {
				padded[n][c][i] = make([]float64, PW)
				for j := range PW {
					si, sj := i-o.Pads[0], j-o.Pads[2]
					if si >= 0 && si < H && sj >= 0 && sj < W {
						padded[n][c][i][j] = x[n*C*H*W+c*H*W+si*W+sj]
					}
				}
			}
		}
	}
	OH := (PH-(KH-1)*o.Dilations[0]-1)/o.Strides[0] + 1
	OW := (PW-(KW-1)*o.Dilations[1]-1)/o.Strides[1] + 1
	outPerGroup := CO / o.Groups
	var out []float64
	for n := range N {
		for co := range CO {
			firstIn := (co / outPerGroup) * CG
			for i := range OH {
				for j := range OW {
					s := 0.0
					for c := range CG {
						for a := range KH {
							for b := range KW {
								s += w[co*CG*KH*KW+c*KH*KW+a*KW+b] *
									padded[n][firstIn+c][i*o.Strides[0]+a*o.Dilations[0]][j*o.Strides[1]+b*o.Dilations[1]]
							}
						}
					}
					out = append(out, s)
				}
			}
		}
	}
	return out, Shape{N, CO, OH, OW}
}

func TestEvalConv2DAgainstNaive(t *testing.T) {
	r := newRand(2)
	cases := []struct {
		x, w Shape
		o    Conv2DOptions
	}{
		{Shape{1, 3, 7, 6}, Shape{4, 3, 3, 3}, Conv2DOptions{}},
		{Shape{2, 3, 7, 6}, Shape{4, 3, 3, 2}, Conv2DOptions{Strides: [2]int{2, 3}, Pads: [4]int{1, 2, 0, 1}}},
		{Shape{1, 2, 9, 9}, Shape{2, 2, 3, 3}, Conv2DOptions{Dilations: [2]int{2, 3}, Pads: [4]int{2, 2, 3, 3}}},
		{Shape{1, 4, 5, 5}, Shape{6, 2, 3, 3}, Conv2DOptions{Groups: 2, Strides: [2]int{2, 2}, Pads: [4]int{1, 1, 1, 1}}},
		{Shape{2, 4, 6, 5}, Shape{4, 1, 2, 2}, Conv2DOptions{Groups: 4, Dilations: [2]int{2, 1}, Strides: [2]int{1, 2}, Pads: [4]int{0, 1, 1, 0}}},
	}
	for i, c := range cases {
		xd, wd := randData(r, c.x.Size()), randData(r, c.w.Size())
		full := c.o
		for k := range 2 {
			full.Strides[k] = max(full.Strides[k], 1)
			full.Dilations[k] = max(full.Dilations[k], 1)
		}
		full.Groups = max(full.Groups, 1)
		want, ws := naiveConv2D(xd, c.x, wd, c.w, full)
		got := evalOut(t, func(g *Graph) Value {
			v := g.Conv2D(g.Input("x", c.x), g.Const("w", c.w, wd), c.o)
			require.Equal(t, full, g.Node(v).Attrs.Conv, "defaults filled in")
			return v
		}, map[string][]float64{"x": xd}, ws)
		requireClose(t, want, got, tol64, "case", i)
	}
}

func TestEvalReductions(t *testing.T) {
	x23 := map[string][]float64{"x": seq(6, 1)} // [[1 2 3] [4 5 6]]
	in := func(g *Graph) Value { return g.Input("x", Shape{2, 3}) }
	runEvalCases(t, []evalCase{
		{"sum_axis1_keep", func(g *Graph) Value { return g.ReduceSum(in(g), []int{1}, true) }, x23, Shape{2, 1}, []float64{6, 15}},
		{"sum_axis0", func(g *Graph) Value { return g.ReduceSum(in(g), []int{0}, false) }, x23, Shape{3}, []float64{5, 7, 9}},
		{"sum_all_nil", func(g *Graph) Value { return g.ReduceSum(in(g), nil, false) }, x23, Shape{}, []float64{21}},
		{"sum_all_keep", func(g *Graph) Value { return g.ReduceSum(in(g), []int{}, true) }, x23, Shape{1, 1}, []float64{21}},
		{"mean_neg_axis", func(g *Graph) Value { return g.ReduceMean(in(g), []int{-1}, false) }, x23, Shape{2}, []float64{2, 5}},
		{"mean_all", func(g *Graph) Value { return g.ReduceMean(in(g), []int{1, 0}, false) }, x23, Shape{}, []float64{3.5}},
		{"max_axis0_keep", func(g *Graph) Value { return g.ReduceMax(in(g), []int{0}, true) }, x23, Shape{1, 3}, []float64{4, 5, 6}},
		{"max_negative_values", func(g *Graph) Value {
			return g.ReduceMax(g.Input("x", Shape{3}), nil, false)
		}, map[string][]float64{"x": {-5, -2, -7}}, Shape{}, []float64{-2}},
		{"sum_outer_axes_rank3", func(g *Graph) Value {
			// [2 2 2] of 1..8, summed over axes 0 and 2: j=0: 1+2+5+6, j=1: 3+4+7+8.
			return g.ReduceSum(g.Input("x", Shape{2, 2, 2}), []int{2, 0}, false)
		}, map[string][]float64{"x": seq(8, 1)}, Shape{2}, []float64{14, 22}},
		{"mean_middle_axis_keep", func(g *Graph) Value {
			// [2 3 2] of 1..12: mean over j of x[i,j,k] = x[i,1,k].
			return g.ReduceMean(g.Input("x", Shape{2, 3, 2}), []int{1}, true)
		}, map[string][]float64{"x": seq(12, 1)}, Shape{2, 1, 2}, []float64{3, 4, 9, 10}},
	})
}

func TestReduceAttrsNormalized(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{2, 3, 4})
	v := g.ReduceSum(x, []int{-1, 0}, true)
	require.NoError(t, g.Err())
	require.Equal(t, []int{0, 2}, g.Node(v).Attrs.Axes)
	require.True(t, g.Node(v).Attrs.KeepDims)
	all := g.ReduceMax(x, nil, false)
	require.Equal(t, []int{0, 1, 2}, g.Node(all).Attrs.Axes)
	require.Equal(t, Shape{}, all.Shape())
}

func TestEvalSoftmax(t *testing.T) {
	runEvalCases(t, []evalCase{
		{"last_axis", func(g *Graph) Value { return g.Softmax(g.Input("x", Shape{1, 2}), -1) },
			map[string][]float64{"x": {0, math.Log(3)}}, Shape{1, 2}, []float64{0.25, 0.75}},
		{"axis0", func(g *Graph) Value { return g.Softmax(g.Input("x", Shape{2, 2}), 0) },
			// Columns [1 3]/4 and [2 1]/3 after exp.
			map[string][]float64{"x": {0, math.Log(2), math.Log(3), 0}}, Shape{2, 2}, []float64{0.25, 2.0 / 3, 0.75, 1.0 / 3}},
		{"large_values_stable", func(g *Graph) Value { return g.Softmax(g.Input("x", Shape{2}), 0) },
			map[string][]float64{"x": {1000, 1000}}, Shape{2}, []float64{0.5, 0.5}},
	})

	// Random rows of a [3 4 5] tensor along the middle axis sum to 1 and
	// keep the order of their inputs.
	r := newRand(3)
	xd := randData(r, 60)
	for i := range xd {
		xd[i] *= 10
	}
	got := evalOut(t, func(g *Graph) Value { return g.Softmax(g.Input("x", Shape{3, 4, 5}), -2) },
		map[string][]float64{"x": xd}, Shape{3, 4, 5})
	for i := range 3 {
		for k := range 5 {
			sum := 0.0
			for j := range 4 {
				p := got[(i*4+j)*5+k]
				require.Greater(t, p, 0.0)
				sum += p
				for j2 := range 4 {
					if xd[(i*4+j)*5+k] < xd[(i*4+j2)*5+k] {
						require.Less(t, p, got[(i*4+j2)*5+k])
					}
				}
			}
			require.InDelta(t, 1, sum, tol64)
		}
	}
}

func TestEvalLayerNorm(t *testing.T) {
	// Rows [1 2 3 4] and [2 4 6 8]: means 2.5 and 5, biased variances 1.25
	// and 5. With ε = 0, row 1 normalizes to (x−2.5)/√1.25 = ±a, ±b with
	// a = 1.5/√1.25 = 1.3416407864998738, b = 0.5/√1.25 = 0.4472135954999579,
	// and row 2 (= 2·row 1) to the same values.
	const a, b = 1.3416407864998738, 0.4472135954999579
	x := map[string][]float64{"x": {1, 2, 3, 4, 2, 4, 6, 8}}
	in := func(g *Graph) Value { return g.Input("x", Shape{2, 4}) }
	norm := []float64{-a, -b, b, a, -a, -b, b, a}
	runEvalCases(t, []evalCase{
		{"no_affine", func(g *Graph) Value { return g.LayerNorm(in(g), []int{-1}, Value{}, Value{}, 0) },
			x, Shape{2, 4}, norm},
		{"gamma_beta", func(g *Graph) Value {
			return g.LayerNorm(in(g), []int{1},
				g.Const("gamma", Shape{4}, []float64{1, 2, 1, 2}), g.Const("beta", Shape{4}, []float64{0, 0, 1, 1}), 0)
		}, x, Shape{2, 4}, []float64{-a, -2 * b, b + 1, 2*a + 1, -a, -2 * b, b + 1, 2*a + 1}},
		{"beta_only", func(g *Graph) Value {
			return g.LayerNorm(in(g), []int{1}, Value{}, g.Const("beta", Shape{4}, []float64{1, 1, 1, 1}), 0)
		}, x, Shape{2, 4}, []float64{1 - a, 1 - b, 1 + b, 1 + a, 1 - a, 1 - b, 1 + b, 1 + a}},
		{"epsilon", func(g *Graph) Value {
			// Row 1 with ε = 0.75: √(1.25+0.75) = √2.
			return g.LayerNorm(g.Input("x", Shape{4}), nil, Value{}, Value{}, 0.75)
		}, map[string][]float64{"x": {1, 2, 3, 4}}, Shape{4},
			[]float64{-1.5 / math.Sqrt2, -0.5 / math.Sqrt2, 0.5 / math.Sqrt2, 1.5 / math.Sqrt2}},
		{"axis0_columns", func(g *Graph) Value {
			// Columns of [[1 3] [3 7]]: means 2 and 5, deviations ±1 and ±2,
			// variances 1 and 4: every entry normalizes to ±1; gamma [2] per row.
			return g.LayerNorm(g.Input("x", Shape{2, 2}), []int{0}, g.Const("gamma", Shape{2}, []float64{1, 3}), Value{}, 0)
		}, map[string][]float64{"x": {1, 3, 3, 7}}, Shape{2, 2}, []float64{-1, -1, 3, 3}},
	})

	g := New()
	v := g.LayerNorm(g.Input("x", Shape{2, 3, 4}), []int{-1, -2}, Value{}, g.Const("beta", Shape{3, 4}, make([]float64, 12)), 1e-5)
	require.NoError(t, g.Err())
	n := g.Node(v)
	require.Equal(t, []int{1, 2}, n.Attrs.Axes)
	require.False(t, n.Attrs.HasGamma)
	require.True(t, n.Attrs.HasBeta)
	require.Len(t, n.Inputs, 2)
	require.Equal(t, 1e-5, n.Attrs.Epsilon)
}

func TestEvalShapeOps(t *testing.T) {
	x23 := map[string][]float64{"x": seq(6, 1)} // [[1 2 3] [4 5 6]]
	in := func(g *Graph) Value { return g.Input("x", Shape{2, 3}) }
	runEvalCases(t, []evalCase{
		{"reshape_infer", func(g *Graph) Value { return g.Reshape(in(g), Shape{3, -1}) }, x23, Shape{3, 2}, seq(6, 1)},
		{"reshape_scalar", func(g *Graph) Value { return g.Reshape(g.Input("x", Shape{1, 1}), Shape{}) },
			map[string][]float64{"x": {7}}, Shape{}, []float64{7}},
		{"transpose_2d", func(g *Graph) Value { return g.Transpose(in(g), []int{1, 0}) }, x23, Shape{3, 2}, []float64{1, 4, 2, 5, 3, 6}},
		{"transpose_3d", func(g *Graph) Value {
			// x [2 2 3] of 0..11; out[c, a, b] = x[a, b, c] with perm [2 0 1].
			return g.Transpose(g.Input("x", Shape{2, 2, 3}), []int{-1, 0, 1})
		}, map[string][]float64{"x": seq(12, 0)}, Shape{3, 2, 2}, []float64{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}},
		{"concat_axis0", func(g *Graph) Value {
			return g.Concat(0, g.Input("a", Shape{1, 2}), g.Input("b", Shape{2, 2}))
		}, map[string][]float64{"a": {1, 2}, "b": {3, 4, 5, 6}}, Shape{3, 2}, []float64{1, 2, 3, 4, 5, 6}},
		{"concat_last_axis_three", func(g *Graph) Value {
			return g.Concat(-1, g.Input("a", Shape{2, 1}), g.Input("b", Shape{2, 2}), g.Input("c", Shape{2, 1}))
		}, map[string][]float64{"a": {1, 2}, "b": {10, 11, 20, 21}, "c": {-1, -2}}, Shape{2, 4},
			[]float64{1, 10, 11, -1, 2, 20, 21, -2}},
		{"concat_one", func(g *Graph) Value { return g.Concat(0, in(g)) }, x23, Shape{2, 3}, seq(6, 1)},
		{"slice", func(g *Graph) Value {
			// x [3 4] of 0..11, rows 1–2, columns 1 to the end.
			return g.Slice(g.Input("x", Shape{3, 4}), []int{1, 1}, []int{2, -1})
		}, map[string][]float64{"x": seq(12, 0)}, Shape{2, 3}, []float64{5, 6, 7, 9, 10, 11}},
		{"slice_single", func(g *Graph) Value { return g.Slice(in(g), []int{1, 2}, []int{1, 1}) }, x23, Shape{1, 1}, []float64{6}},
		{"pad", func(g *Graph) Value {
			// One row before axis 0, one column after axis 1, filled with 9.
			return g.Pad(g.Input("x", Shape{2, 2}), []int{1, 0, 0, 1}, 9)
		}, map[string][]float64{"x": {1, 2, 3, 4}}, Shape{3, 3}, []float64{9, 9, 9, 1, 2, 9, 3, 4, 9}},
		{"pad_rank1_both", func(g *Graph) Value { return g.Pad(g.Input("x", Shape{2}), []int{2, 1}, -1) },
			map[string][]float64{"x": {5, 6}}, Shape{5}, []float64{-1, -1, 5, 6, -1}},
	})

	g := New()
	x := g.Input("x", Shape{4, 6})
	r := g.Reshape(x, Shape{-1, 3, 2})
	s := g.Slice(x, []int{1, 2}, []int{-1, -1})
	tp := g.Transpose(x, []int{-1, -2})
	c := g.Concat(-2, x, x)
	require.NoError(t, g.Err())
	require.Equal(t, Shape{4, 3, 2}, g.Node(r).Attrs.Shape)
	require.Equal(t, []int{1, 2}, g.Node(s).Attrs.Begin)
	require.Equal(t, []int{3, 4}, g.Node(s).Attrs.Size)
	require.Equal(t, []int{1, 0}, g.Node(tp).Attrs.Perm)
	require.Equal(t, 0, g.Node(c).Attrs.Axis)
	require.Equal(t, Shape{8, 6}, c.Shape())
}

// TestEvalComposite checks a small chain against values computed by hand:
// sum(relu(x − 2)²) over [1 … 5] = 0 + 0 + 1 + 4 + 9.
func TestEvalComposite(t *testing.T) {
	got := evalOut(t, func(g *Graph) Value {
		x := g.Input("x", Shape{5})
		return g.ReduceSum(g.Square(g.Relu(g.Sub(x, g.Scalar(2)))), nil, false)
	}, map[string][]float64{"x": seq(5, 1)}, Shape{})
	require.Equal(t, []float64{14}, got)
}

func TestEvalFreshSlices(t *testing.T) {
	g := New()
	x := g.Input("x", Shape{3})
	w := g.Const("w", Shape{3}, []float64{1, 2, 3})
	g.Output("same", x)
	g.Output("again", x)
	g.Output("weights", w)
	in := []float64{4, 5, 6}
	res, err := Eval(g, map[string][]float64{"x": in})
	require.NoError(t, err)
	res["same"][0] = -100
	res["weights"][0] = -100
	require.Equal(t, []float64{4, 5, 6}, in, "input unchanged")
	require.Equal(t, []float64{4, 5, 6}, res["again"], "outputs do not share storage")
	require.Equal(t, []float64{1, 2, 3}, g.Node(w).Data, "const unchanged")

	// Const copies its data.
	data := []float64{1, 2}
	g2 := New()
	c := g2.Const("c", Shape{2}, data)
	data[0] = 99
	require.Equal(t, []float64{1, 2}, g2.Node(c).Data)
}

func TestEvalOnlyLiveNodes(t *testing.T) {
	// A dead branch that would divide by zero does not matter, and every
	// input must still be given.
	g := New()
	x := g.Input("x", Shape{2})
	unused := g.Input("unused", Shape{1})
	g.Log(g.Mul(unused, g.Scalar(0)))
	g.Output("y", g.Neg(x))
	_, err := Eval(g, map[string][]float64{"x": {1, 2}})
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, `missing input "unused"`)
	res, err := Eval(g, map[string][]float64{"x": {1, 2}, "unused": {3}})
	require.NoError(t, err)
	require.Equal(t, []float64{-1, -2}, res["y"])
}
