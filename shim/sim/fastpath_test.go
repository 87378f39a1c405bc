package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/stretchr/testify/require"
)

// The fast paths (matvec.go, convfast.go, the small matmul, shared buffers)
// must give the generic kernels' results bit for bit. These tests run the
// same programs on a device with the fast paths and on one without them
// (Device.reference) and compare every output bit and every error, on data
// that reaches every path: products that are subnormal, that overflow, Inf
// and NaN operands, zero weights, operands whose bounds allow the split.

// newReference returns a device that compiles without fast paths.
func newReference(n Numerics) *Device {
	d := New(n)
	d.reference = true
	return d
}

// sameBits reports whether a and b are the same float32s bit for bit.
func sameBits(a, b []float32) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i, false
		}
	}
	return 0, true
}

// requireSameAsReference runs p on both devices, under both numerics, and
// requires bit-identical outputs and identical errors. It returns how many
// output elements were not finite (to check that a case reaches them).
func requireSameAsReference(t *testing.T, p *lower.Program, inputs [][]float32) int {
	t.Helper()
	special := 0
	for _, num := range []Numerics{Wide, Narrow} {
		fast, err := New(num).Compile(p)
		require.NoError(t, err, "program:\n%s", p.MIL)
		ref, err := newReference(num).Compile(p)
		require.NoError(t, err)
		want, werr := ref.Run(inputs)
		for rep := range 2 { // a second run on reused buffers
			got, gerr := fast.Run(inputs)
			if werr == nil {
				require.NoError(t, gerr, "%v run %d", num, rep)
			} else {
				require.EqualError(t, gerr, werr.Error(), "%v run %d", num, rep)
			}
			require.Len(t, got, len(want))
			for o := range want {
				i, ok := sameBits(got[o], want[o])
				require.True(t, ok, "%v run %d output %d element %d: fast %g (%#x), reference %g (%#x)", num, rep, o, i,
					got[o][max(i, 0)], math.Float32bits(got[o][max(i, 0)]), want[o][max(i, 0)], math.Float32bits(want[o][max(i, 0)]))
			}
		}
		for _, o := range want {
			for _, v := range o {
				if !isHalfFinite(v) {
					special++
				}
			}
		}
	}
	return special
}

// dataKind selects the values of a test operand.
type dataKind int

const (
	dMixed    dataKind = iota // mixed(): zeros, subnormal and overflowing products
	dSpecial                  // mixed() with ±Inf and NaN, made inside the program
	dInts                     // small integers: every nonzero product is normal (split path)
	dTiny                     // magnitudes near 2⁻¹², most products subnormal
	dBand                     // magnitudes in [2⁻⁸, 2⁻⁶): products straddle 2⁻¹⁴
	dBig                      // magnitudes up to 400: products overflow, the bound is near
	dWideInts                 // integers up to 63: 12-bit products need rounding
	dFine                     // small integers times 2⁻¹³: products below fp16's grid
	dSpread                   // ±(1…3)·2^j, j in [−12, −2]: exact products, inexact sums
)

var allKinds = []dataKind{dMixed, dSpecial, dInts, dTiny, dBand, dBig, dWideInts, dFine, dSpread}

func (d dataKind) String() string {
	return [...]string{"mixed", "special", "ints", "tiny", "band", "big", "wideints", "fine", "spread"}[d]
}

// operandIn declares the program inputs and MIL lines that define variable
// name of the given shape with data of kind d, and returns the inputs'
// values. A dSpecial operand is computed in the program (inputs are
// finite): q = x·s overflows to ±Inf where s = 2¹⁵ and |x| ≥ 2, and adding
// (x·u − x·u) puts NaN where u = 2¹⁵ overflows.
func operandIn(name string, shape []int, d dataKind, seed uint64) ([]port, string, [][]float32) {
	n := numel(shape)
	rng := newRNG(seed)
	switch d {
	case dInts, dWideInts, dFine, dSpread:
		xs := make([]float32, n)
		for i := range xs {
			switch d {
			case dInts:
				xs[i] = float32(rng.IntN(33) - 16)
			case dWideInts:
				xs[i] = float32(rng.IntN(127) - 63)
			case dFine:
				xs[i] = float32(rng.IntN(33)-16) * 0x1p-13
			case dSpread:
				xs[i] = float32(rng.IntN(7)-3) * float32(math.Exp2(float64(rng.IntN(11)-12)))
			}
		}
		return []port{in(name, shape...)}, "", [][]float32{xs}
	case dTiny, dBand, dBig:
		xs := make([]float32, n)
		for i := range xs {
			var v float64
			switch d {
			case dTiny:
				v = rng.NormFloat64() * 0x1p-12
			case dBand:
				v = math.Exp2(-8 + 2*rng.Float64())
			case dBig:
				v = 400 * rng.Float64()
			}
			if rng.IntN(2) == 0 {
				v = -v
			}
			xs[i] = float32(fp16.Round64(v))
		}
		return []port{in(name, shape...)}, "", [][]float32{xs}
	case dSpecial:
		x := mixed(n, seed, false)
		s, u := filled(n, 1), filled(n, 1)
		for i := range s {
			switch rng.IntN(10) {
			case 0:
				s[i] = 0x1p15
			case 1:
				u[i] = 0x1p15
			}
		}
		body := stmt(name+"q", shape, "mul", "x = "+name+"0", "y = "+name+"s") +
			stmt(name+"r", shape, "mul", "x = "+name+"0", "y = "+name+"u") +
			stmt(name+"n", shape, "sub", "x = "+name+"r", "y = "+name+"r") +
			stmt(name, shape, "add", "x = "+name+"q", "y = "+name+"n")
		return []port{in(name+"0", shape...), in(name+"s", shape...), in(name+"u", shape...)}, body, [][]float32{x, s, u}
	}
	return []port{in(name, shape...)}, "", [][]float32{mixed(n, seed, false)}
}

// constWeight returns finite weight values of kind d (dSpecial gives
// mixed values: consts must be finite), with a share of zeros and, when
// eye is set, a −I block in the columns after the first cols/2, the shape
// of the compensated operator's weights.
func constWeight(shape []int, d dataKind, seed uint64, eye bool) []float32 {
	n := numel(shape)
	var w []float32
	switch d {
	case dInts, dWideInts, dFine, dSpread, dTiny, dBand, dBig:
		_, _, vals := operandIn("w", shape, d, seed)
		w = vals[0]
	default:
		w = mixed(n, seed, false)
	}
	// A const may not be subnormal (the engine's handling of subnormals is
	// unmeasured): the smallest weights become ±2⁻¹⁴, whose products with
	// small operands are still subnormal.
	for i, v := range w {
		if v != 0 && math.Abs(float64(v)) < fp16.MinNormal {
			w[i] = float32(math.Copysign(fp16.MinNormal, float64(v)))
		}
	}
	if eye {
		rows, cols := shape[0], n/shape[0]
		h := cols / 2
		for r := range rows {
			for c := h; c < cols; c++ {
				w[r*cols+c] = 0
			}
			if h+r < cols {
				w[r*cols+h+r] = -1
			}
		}
	}
	return w
}

type convCase struct {
	name      string
	xs, ws    []int
	stride    [2]int
	dil       [2]int
	pad       [4]int // custom: top, bottom, left, right
	groups    int
	bias      bool
	weightIn  bool // the weight is a program input (else a const)
	eye       bool
	wantFast  bool // the case must take a fast path
	outShapes []int
}

func convProgram(c convCase, d dataKind, seed uint64) (*lower.Program, [][]float32) {
	oh := (c.xs[2]+c.pad[0]+c.pad[1]-((c.ws[2]-1)*c.dil[0]+1))/c.stride[0] + 1
	ow := (c.xs[3]+c.pad[2]+c.pad[3]-((c.ws[3]-1)*c.dil[1]+1))/c.stride[1] + 1
	out := []int{c.xs[0], c.ws[0], oh, ow}
	ins, body, vals := operandIn("x", c.xs, d, seed)
	bw := mil.NewBlobWriter()
	body = cInts("st", c.stride[:]...) + cInts("dl", c.dil[:]...) + cStr("pt", "custom") +
		cInts("pd", c.pad[:]...) + cInt("gr", c.groups) + body
	args := []string{"dilations = dl", "groups = gr", "pad = pd", "pad_type = pt", "strides = st", "weight = w", "x = x"}
	if c.weightIn {
		wins, wbody, wvals := operandIn("w", c.ws, d, seed+1)
		ins, body, vals = append(ins, wins...), body+wbody, append(vals, wvals...)
	} else {
		body += blobConst(bw, "w", c.ws, constWeight(c.ws, d, seed+1, c.eye))
	}
	if c.bias {
		body += blobConst(bw, "b", []int{c.ws[0]}, mixed(c.ws[0], seed+2, false))
		args = append(args, "bias = b")
	}
	body += stmt("z", out, "conv", args...)
	p := program(ins, body, []port{in("z", out...)})
	if bw.Count() > 0 {
		p.Blob = bw.Bytes()
	}
	return p, vals
}

func TestFastConvMatchesReference(t *testing.T) {
	cases := []convCase{
		{name: "matvec", xs: []int{1, 37, 1, 1}, ws: []int{13, 37, 1, 1}, wantFast: true},
		{name: "matvec-eye-bias", xs: []int{1, 90, 1, 1}, ws: []int{22, 90, 1, 1}, bias: true, eye: true, wantFast: true},
		{name: "matvec-input-weight", xs: []int{1, 33, 1, 1}, ws: []int{9, 33, 1, 1}, weightIn: true, wantFast: true},
		{name: "matvec-groups-batch", xs: []int{2, 24, 1, 1}, ws: []int{10, 12, 1, 1}, groups: 2, wantFast: true},
		{name: "matvec-parallel", xs: []int{1, 1024, 1, 1}, ws: []int{70, 1024, 1, 1}, eye: true, wantFast: true},
		{name: "stencil", xs: []int{1, 1, 20, 23}, ws: []int{1, 1, 3, 3}, pad: [4]int{1, 1, 1, 1}, wantFast: true},
		{name: "stencil-parallel", xs: []int{1, 1, 128, 128}, ws: []int{1, 1, 3, 3}, pad: [4]int{1, 1, 1, 1}, wantFast: true},
		{name: "direct-strided", xs: []int{2, 3, 9, 11}, ws: []int{4, 3, 3, 3}, stride: [2]int{2, 3}, dil: [2]int{1, 2}, pad: [4]int{1, 2, 3, 0}, bias: true, wantFast: true},
		{name: "direct-groups-input-weight", xs: []int{1, 4, 8, 7}, ws: []int{6, 2, 2, 3}, groups: 2, pad: [4]int{0, 1, 2, 2}, weightIn: true, wantFast: true},
		{name: "generic-large-kernel", xs: []int{1, 8, 6, 6}, ws: []int{3, 8, 3, 3}, pad: [4]int{1, 1, 1, 1}},
		{name: "1x1-spatial", xs: []int{1, 5, 3, 4}, ws: []int{7, 5, 1, 1}, wantFast: true},
	}
	for ci, c := range cases {
		if c.groups == 0 {
			c.groups = 1
		}
		if c.stride == [2]int{} {
			c.stride = [2]int{1, 1}
		}
		if c.dil == [2]int{} {
			c.dil = [2]int{1, 1}
		}
		for _, d := range allKinds {
			t.Run(c.name+"_"+d.String(), func(t *testing.T) {
				p, vals := convProgram(c, d, uint64(100*ci+int(d)))
				special := requireSameAsReference(t, p, vals)
				if d == dSpecial {
					require.Positive(t, special, "the case must produce Inf or NaN outputs")
				}
			})
		}
	}
}

func TestFastConvTakesFastPaths(t *testing.T) {
	// The shapes the solvers run must not fall back to the generic kernel
	// on ordinary data: fastConv reports whether it ran.
	for _, c := range []struct {
		xs, ws []int
		pad    int
	}{
		{[]int{1, 512, 1, 1}, []int{512, 512, 1, 1}, 0},
		{[]int{1, 1, 128, 128}, []int{1, 1, 3, 3}, 1},
	} {
		g := &convGeom{n: c.xs[0], ci: c.xs[1], h: c.xs[2], w: c.xs[3], co: c.ws[0], kh: c.ws[2], kw: c.ws[3],
			sh: 1, sw: 1, dh: 1, dw: 1, pt: c.pad, pl: c.pad, groups: 1}
		g.oh, g.ow = c.xs[2]+2*c.pad-c.ws[2]+1, c.xs[3]+2*c.pad-c.ws[3]+1
		rng := newRNG(7)
		x, w := halfs(rng, numel(c.xs), 1), halfs(rng, numel(c.ws), 0.1)
		out := make([]float32, c.xs[0]*c.ws[0]*g.oh*g.ow)
		require.True(t, fastConv(g, x, w, nil, out, prepareConvWeights(g, w), false), "%v * %v", c.xs, c.ws)
	}
}

func TestSmallMatmulMatchesReference(t *testing.T) {
	cases := []struct {
		xs, ys []int
		tx, ty bool
	}{
		{[]int{2, 300}, []int{300, 1}, false, false}, // the CG dot products
		{[]int{2, 300}, []int{2, 300}, false, true},  // [2, 2] Gram matrix
		{[]int{1, 77}, []int{1, 77}, false, true},
		{[]int{77, 1}, []int{77, 1}, true, false},
		{[]int{9, 3}, []int{9, 5}, true, false},       // tx: packed A
		{[]int{4, 21}, []int{21, 9}, false, false},    // B packed by transposition
		{[]int{7, 21}, []int{3, 21}, false, true},     // n ≤ 4 < m: strided outputs
		{[]int{3, 2, 50}, []int{50, 1}, false, false}, // broadcast batch
		{[]int{2, 1, 4, 30}, []int{3, 30, 2}, false, false},
		{[]int{6, 5000}, []int{3, 5000}, false, true}, // parallel row groups
	}
	for ci, c := range cases {
		for _, d := range allKinds {
			t.Run(fmt.Sprintf("%v%v_%v%v_%v", c.xs, c.ys, c.tx, c.ty, d), func(t *testing.T) {
				rx, ry := len(c.xs), len(c.ys)
				m := c.xs[rx-2]
				if c.tx {
					m = c.xs[rx-1]
				}
				n := c.ys[ry-1]
				if c.ty {
					n = c.ys[ry-2]
				}
				batch, ok := broadcastShapes(c.xs[:rx-2], c.ys[:ry-2])
				require.True(t, ok)
				out := append(append([]int{}, batch...), m, n)
				xin, xbody, xv := operandIn("x", c.xs, d, uint64(10*ci))
				yin, ybody, yv := operandIn("y", c.ys, d, uint64(10*ci+1))
				body := xbody + ybody + cBool("tx", c.tx) + cBool("ty", c.ty) +
					stmt("z", out, "matmul", "transpose_x = tx", "transpose_y = ty", "x = x", "y = y")
				p := program(append(xin, yin...), body, []port{in("z", out...)})
				special := requireSameAsReference(t, p, append(xv, yv...))
				if d == dSpecial {
					require.Positive(t, special)
				}
			})
		}
	}
}

func TestMatvecKernelsMatchDotExact(t *testing.T) {
	// matvec on both kinds of rows (const with bounds and spans, checked),
	// both numerics, against dotExact row by row; rows in groups of four
	// and a tail, with zero blocks wide enough to be skipped.
	for seed := range uint64(12) {
		rng := newRNG(seed)
		n, k := 1+rng.IntN(11), 1+rng.IntN(150)
		scale := []float32{1, 0x1p-6, 64, 0x1p-10}[seed%4]
		w := mixed(n*k, seed, false)
		x := mixed(k, seed+100, false)
		for i := range x {
			x[i] = fp16.Round32(x[i] * scale)
		}
		for r := range n { // a zero block per row
			a := rng.IntN(k)
			for j := a; j < min(k, a+rng.IntN(40)); j++ {
				w[r*k+j] = 0
			}
		}
		if seed%3 == 0 && k > 2 {
			x[rng.IntN(k)] = float32(math.Inf(1 - 2*rng.IntN(2)))
		}
		if seed%5 == 0 {
			x[rng.IntN(k)] = float32(math.NaN())
		}
		xhi, xlo := hiLo(x)
		for _, narrow := range []bool{false, true} {
			var checked mvRows
			checked.useRows(w, n, k, k)
			for _, rows := range []*mvRows{constRows(w, n, k, k), &checked} {
				got := make([]float32, 2*n)
				matvec(rows, x, xhi, xlo, got, 2, narrow)
				for i := range n {
					want := dotExact(w[i*k:(i+1)*k], x, narrow)
					require.Equal(t, math.Float32bits(want), math.Float32bits(got[2*i]), "seed %d narrow %v row %d: got %g want %g", seed, narrow, i, got[2*i], want)
				}
			}
		}
	}
}

func TestRoundSumMatchesR16(t *testing.T) {
	// roundSum rounds every product of two fp16 values below overflowBound
	// as r16 does, except that a zero may come out +0 where r16 gives −0.
	rng := newRNG(17)
	n := 1 << 20
	if testing.Short() {
		n = 1 << 17
	}
	for range n {
		a := fp16.Bits(rng.IntN(0x7c00) | rng.IntN(2)<<15).Float32()
		b := fp16.Bits(rng.IntN(0x7c00) | rng.IntN(2)<<15).Float32()
		if rng.IntN(2) == 0 { // products near fp16's subnormal range
			b = fp16.Bits(rng.IntN(0x3c00) | rng.IntN(2)<<15).Float32()
		}
		p := a * b
		if math.Abs(float64(p)) >= overflowBound {
			continue
		}
		want, got := r16(p), roundSum(p)
		if want == 0 {
			require.Zero(t, got, "%g·%g", a, b)
			continue
		}
		require.Equal(t, math.Float32bits(want), math.Float32bits(got), "%g·%g = %g", a, b, p)
	}
}

func TestHiLo(t *testing.T) {
	for _, c := range []struct {
		xs     []float32
		hi, lo float64
	}{
		{[]float32{0, -3, 0.5, 2}, 3, 0.5},
		{[]float32{0, 0}, 0, math.Inf(1)},
		{nil, 0, math.Inf(1)},
		{[]float32{-0x1p-24, 7}, 7, 0x1p-24},
		{[]float32{1, float32(math.Inf(-1))}, math.Inf(1), 1},
		{[]float32{1, float32(math.NaN()), 2}, math.Inf(1), 1},
	} {
		hi, lo := hiLo(c.xs)
		require.Equal(t, c.hi, hi, "%v", c.xs)
		require.Equal(t, c.lo, lo, "%v", c.xs)
	}
}

func TestConstRowsSpans(t *testing.T) {
	// Spans cover every nonzero column of their group and skip zero runs of
	// at least spanGap columns.
	const k = 100
	w := make([]float32, 5*k)
	w[0*k+3], w[1*k+40], w[3*k+45], w[4*k+99] = 1, 2, 3, 4
	r := constRows(w, 5, k, k)
	require.Equal(t, [][]int32{{3, 4, 40, 46}, {99, 100}}, r.spans)
	z := constRows(make([]float32, 2*k), 2, k, k)
	require.Equal(t, [][]int32{nil}, z.spans)
}

func TestBuffersShareMemorySafely(t *testing.T) {
	// A chain of ops on long vectors with a value read again at the end:
	// slots share buffers only when their lifetimes do not overlap, never
	// with their own step's inputs, and the program needs far fewer
	// buffers than slots.
	const n, ops = 4096, 40
	var sb strings.Builder
	prev := "x"
	for i := range ops {
		name := fmt.Sprintf("v%d", i)
		sb.WriteString(stmt(name, []int{1, n}, "mul", "x = "+prev, "y = y"))
		prev = name
	}
	sb.WriteString(stmt("z", []int{1, n}, "add", "x = "+prev, "y = v3"))
	p := program([]port{in("x", 1, n), in("y", 1, n)}, sb.String(), []port{in("z", 1, n)})
	rng := newRNG(21)
	vals := [][]float32{halfs(rng, n, 1), halfs(rng, n, 1)}
	requireSameAsReference(t, p, vals)

	pl, err := compile(lower.TargetSim, p, false)
	require.NoError(t, err)
	b := pl.buffers()
	first := func(s int) *float32 { return &b[s][:1][0] }
	live := func(s int) (int, int) { // [def, last use] in step indices
		def, last := -1, -1
		for i, st := range pl.steps {
			if st.out == s && def < 0 {
				def = i
			}
			for _, in := range st.ins {
				if in == s {
					last = i
				}
			}
		}
		for _, o := range pl.outputs {
			if o == s {
				last = len(pl.steps)
			}
		}
		return def, max(last, def)
	}
	distinct := map[*float32]bool{}
	for s := range b {
		if len(b[s]) > 0 {
			distinct[first(s)] = true
		}
	}
	require.Less(t, len(distinct), len(b)/4, "buffers are shared")
	for _, st := range pl.steps {
		for _, in := range st.ins {
			require.True(t, first(st.out) != first(in), "a step's output never shares its input's buffer")
		}
	}
	for s1 := range b {
		for s2 := range s1 {
			if pl.consts[s1] != nil || pl.consts[s2] != nil || first(s1) != first(s2) {
				continue
			}
			d1, l1 := live(s1)
			d2, l2 := live(s2)
			require.True(t, l1 < d2 || l2 < d1, "slots %d [%d, %d] and %d [%d, %d] overlap in time and memory", s1, d1, l1, s2, d2, l2)
		}
	}
}

func TestR16BitsMatchRound32(t *testing.T) {
	// Bit for bit, NaNs and signed zeros included, on every float32
	// exponent with random significands and signs.
	rng := newRNG(23)
	n := 2000
	if testing.Short() {
		n = 300
	}
	for e := range uint32(256) {
		for range n {
			x := math.Float32frombits(e<<23 | rng.Uint32()&(1<<23-1) | rng.Uint32()&(1<<31))
			require.Equal(t, math.Float32bits(fp16.Round32(x)), math.Float32bits(r16(x)), "x = %g (%#x)", x, math.Float32bits(x))
		}
	}
}

func TestBinaryLayoutsMatchR16(t *testing.T) {
	// The written-out loops for full rows and scalars round as r16 does,
	// bit for bit, on every kind of operand (subnormal and overflowing
	// results, Inf, NaN).
	const n = 4000
	x, y := mixed(n, 41, true), mixed(n, 42, true)
	for i := range y {
		if i%3 == 0 { // results near the subnormal range
			y[i] = fp16.Round32(x[i] * 0x1p-10)
		}
	}
	ops := []struct {
		k string
		f func(a, b float32) float32
	}{
		{"add", func(a, b float32) float32 { return a + b }},
		{"sub", func(a, b float32) float32 { return a - b }},
		{"mul", func(a, b float32) float32 { return a * b }},
		{"real_div", func(a, b float32) float32 { return a / b }},
	}
	out := make([]float32, n)
	for _, op := range ops {
		for _, s := range []float32{0x1p-12, -3, 0, 300, float32(math.Inf(1))} {
			for layout, call := range []func(){
				func() { binaryOps[op.k].apply(out, x, 1, y, 1, false) },
				func() { binaryOps[op.k].apply(out, x, 1, []float32{s}, 0, false) },
				func() { binaryOps[op.k].apply(out, []float32{s}, 0, y, 1, false) },
			} {
				call()
				for i := range out {
					a, b := x[i], y[i]
					switch layout {
					case 1:
						b = s
					case 2:
						a = s
					}
					want := r16(op.f(a, b))
					require.Equal(t, math.Float32bits(want), math.Float32bits(out[i]), "op %s layout %d: %g, %g", op.k, layout, a, b)
				}
			}
		}
	}
}

func TestOverflowBoundaryProducts(t *testing.T) {
	// Products in [65504, 65536) straddle overflowBound = 65520: those at or
	// above it round to Inf. Every kernel must treat them exactly.
	var pairs [][2]float32
	for h := fp16.FromFloat64(256); h < fp16.FromFloat64(512); h += 7 {
		a := h.Float32()
		b := fp16.Round32(65528 / a)
		if p := float64(a) * float64(b); p >= 65504 && p < 65536 {
			pairs = append(pairs, [2]float32{a, b})
		}
	}
	require.Greater(t, len(pairs), 20)
	above := 0
	rng := newRNG(43)
	for trial := range 40 {
		const n, k = 5, 23
		w, x := halfs(rng, n*k, 0.5), halfs(rng, k, 0.5)
		q := pairs[trial%len(pairs)]
		if float64(q[0])*float64(q[1]) >= overflowBound {
			above++
		}
		r, j := rng.IntN(2), rng.IntN(k-1)
		x[j] = q[1]
		w[r*k+j] = q[0]
		if trial%2 == 0 { // a cancelling partner in the same row: Inf − Inf is NaN
			x[j+1] = q[1]
			w[r*k+j+1] = -q[0]
		}
		xhi, xlo := hiLo(x)
		for _, narrow := range []bool{false, true} {
			var checked mvRows
			checked.useRows(w, n, k, k)
			for _, rows := range []*mvRows{constRows(w, n, k, k), &checked} {
				got := make([]float32, n)
				matvec(rows, x, xhi, xlo, got, 1, narrow)
				for i := range n {
					want := dotExact(w[i*k:(i+1)*k], x, narrow)
					require.Equal(t, math.Float32bits(want), math.Float32bits(got[i]), "trial %d narrow %v row %d", trial, narrow, i)
				}
			}
		}
		var c [4]float32
		dot2x2Checked(w[:k], w[k:2*k], x, w[2*k:3*k], &c)
		for i, want := range []float32{dotExact(w[:k], x, false), dotExact(w[:k], w[2*k:3*k], false), dotExact(w[k:2*k], x, false), dotExact(w[k:2*k], w[2*k:3*k], false)} {
			require.Equal(t, math.Float32bits(want), math.Float32bits(c[i]), "trial %d 2×2 output %d", trial, i)
		}
	}
	require.Positive(t, above, "some products round to Inf")
}

func TestReduceRowsMatchReference(t *testing.T) {
	// Reductions over the last axis take a loop over consecutive elements.
	for _, op := range []string{"reduce_max", "reduce_sum", "reduce_mean"} {
		for _, d := range []dataKind{dMixed, dSpecial, dTiny, dBig} {
			t.Run(op+"_"+d.String(), func(t *testing.T) {
				shape := []int{3, 700}
				ins, body, vals := operandIn("x", shape, d, 51)
				body += cInts("ax", -1) + cBool("kd", true) + stmt("z", []int{3, 1}, op, "axes = ax", "keep_dims = kd", "x = x")
				special := requireSameAsReference(t, program(ins, body, []port{in("z", 3, 1)}), vals)
				if d == dSpecial {
					require.Positive(t, special)
				}
			})
		}
	}
}

func TestExactProducts(t *testing.T) {
	g := func(max float64, exp, width int) grid { return grid{max: max, exp: exp, width: width} }
	zero := grid{exp: math.MaxInt32}
	for _, c := range []struct {
		w, x grid
		want bool
	}{
		{g(16, 0, 4), g(32, 0, 5), true},     // digits: 15·31 has 9 bits
		{g(31, 0, 5), g(63, 0, 6), true},     // 11 bits
		{g(63, 0, 6), g(63, 0, 6), false},    // 63·63 = 3969 has 12 bits
		{g(1, 0, 1), g(316.5, -3, 11), true}, // ±1 times fp16 values
		{g(4, 2, 1), g(16376, 3, 11), true},  // 16376·4 = 65504, fp16's largest
		{g(1, 0, 1), g(65504, 5, 11), true},
		{g(2, 1, 1), g(65504, 5, 11), false},                // overflow
		{g(16*0x1p-12, -12, 4), g(0x1p-12, -12, 1), true},   // multiples of 2⁻²⁴
		{g(16*0x1p-12, -12, 4), g(0x1p-13, -13, 1), false},  // 2⁻²⁵ is below fp16's grid
		{g(0x1p-15, -15, 1), g(0x1.ffcp-1, -11, 11), false}, // subnormal with 11 bits: grid 2⁻²⁶
		{g(0x1p-10, -10, 1), g(0x1.ffcp-4, -14, 11), true},  // ≥ 2⁻²⁴ grid
		{zero, g(1e4, -30, 3), true},
		{g(3, 0, 2), zero, true},
	} {
		require.Equal(t, c.want, exactProducts(c.w, c.x), "%+v %+v", c.w, c.x)
	}
	require.Equal(t, g(48, 4, 2), gridOf([]float32{16, -48, 0, 32}))
	require.Equal(t, g(0x1p-24*3, -24, 2), gridOf([]float32{0x1p-23, -0x1p-24 * 3}))
	require.Equal(t, g(316.5, -1, 10), gridOf([]float32{316.5, 1}))
	require.Equal(t, zero, gridOf([]float32{0, 0}))
	require.True(t, math.IsInf(gridOf([]float32{1, float32(math.NaN())}).max, 1))
}

func TestExactProductsInexactSums(t *testing.T) {
	// Every product is an fp16 value, but the running sum rounds: 1 + 2⁻²⁴
	// is a tie that rounds to 1, so the order of the additions shows in
	// the result (the model's order loses every 2⁻²⁴ term here). Such rows
	// must not take the any-order sum.
	const n, k = 8, 64
	w, x := make([]float32, n*k), make([]float32, k)
	x[0], x[k-1] = 0.125, 0.125
	for j := 1; j < k-1; j++ {
		x[j] = 0x1p-24
	}
	for i := range n {
		row := w[i*k : (i+1)*k]
		row[0], row[k-1] = 8, -8
		for j := 1; j < k-1; j++ {
			row[j] = float32(1 + (i+j)%2)
		}
	}
	r := constRows(w, n, k, k)
	xhi, xlo := hiLo(x)
	got := make([]float32, n)
	matvec(r, x, xhi, xlo, got, 1, false)
	for i := range n {
		want := dotExact(w[i*k:(i+1)*k], x, false)
		require.Equal(t, math.Float32bits(want), math.Float32bits(got[i]), "row %d: got %g want %g", i, got[i], want)
	}
}
