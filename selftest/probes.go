package selftest

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/ane"
)

// values v with ones, with true outputs K·v from 32000 to 33000.
func (e *env) saturation(conv bool) Probe {
	p := Probe{Name: "matmul-saturation", What: "K-term dot of v with ones (matmul of two inputs), true outputs around 32000..33000: where does Inf start?"}
	ks := []int{32}
	if !e.short {
		ks = []int{1, 32, 256, 2048}
	}
	if conv {
		p.Name, p.What = "conv-saturation", "the same with a constant weight, lowered to a 1×1 conv"
		ks = []int{32}
	}
	targets := []float64{32000, 32512, 32704, 32736, engine.Cliff, 32768, 32800, 33000}
	n := e.t.RowLength(1)
	p.Params = map[string]any{"K": ks, "true_outputs": targets, "output_columns": n}
	var exp, meas []string
	for _, k := range ks {
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, k})
		var y dataflow.Value
		if conv {
			ones := make([]float64, k*n)
			for i := range ones {
				ones[i] = 1
			}
			y = g.Const("w", dataflow.Shape{k, n}, ones)
		} else {
			y = g.Input("y", dataflow.Shape{k, n})
		}
		g.Output("z", g.MatMul(x, y, false, false))
		prog, err := lower.Lower(g, e.t)
		if err != nil {
			return fail(p, err)
		}
		op := "matmul("
		if conv {
			op = "conv("
		}
		if !strings.Contains(string(prog.MIL), op) {
			return fail(p, fmt.Errorf("selftest: the lowering emitted no %s for this probe", strings.TrimSuffix(op, "(")))
		}
		c := e.compile(prog)
		if c.err != nil {
			return fail(p, c.err)
		}
		got, want := newEdges(), newEdges()
		for _, tgt := range targets {
			v := fp16.Round64(tgt / float64(k))
			truth := v * float64(k)
			w := e.modelDot(v, k)
			in := [][]float32{fill(k, v)}
			if !conv {
				in = append(in, fill(k*n, 1))
			}
			pt := Point{Label: fmt.Sprintf("K=%d v=%g", k, v), In: Num(truth), Want: Num(w)}
			out, err := c.run(in, n)
			if err != nil {
				pt.Error = err.Error()
				pt.Got = Num(math.NaN())
			} else {
				g := float64(out[0][0])
				if i := disagrees(out[0]); i >= 0 { // every column holds the same dot
					pt.Error = fmt.Sprintf("columns disagree: %g and %g", g, out[0][i])
				}
				pt.Got, pt.OK = Num(g), same(w, g) && pt.Error == ""
				got.add(truth, g)
			}
			want.add(truth, w)
			p.Points = append(p.Points, pt)
		}
		c.close()
		exp = append(exp, want.String())
		meas = append(meas, got.String())
		if p.Values == nil {
			p.Values = map[string]any{}
		}
		p.Values[fmt.Sprintf("K%d_last_finite", k)] = Num(got.lastFinite)
		p.Values[fmt.Sprintf("K%d_first_inf", k)] = Num(got.firstInf)
		p.Values[fmt.Sprintf("K%d_first_zero", k)] = Num(got.firstZero)
	}
	p.Expected, p.Measured, p.Verdict = perK(ks, exp), perK(ks, meas), verdict(p.Points)
	return p
}

// edges are where a sweep of true outputs (nonzero, increasing) stops
// being returned finite: the last finite nonzero result, the first ±Inf
// and the first zero (a sum reaching 2¹⁵ on PartialSumZero targets); NaN
// where there is none.
type edges struct{ lastFinite, firstInf, firstZero float64 }

func newEdges() *edges { return &edges{math.NaN(), math.NaN(), math.NaN()} }

func (d *edges) add(truth, got float64) {
	switch {
	case math.IsInf(got, 0):
		if math.IsNaN(d.firstInf) {
			d.firstInf = truth
		}
	case got == 0:
		if math.IsNaN(d.firstZero) {
			d.firstZero = truth
		}
	default:
		d.lastFinite = truth
	}
}

func (d *edges) String() string {
	s := fmt.Sprintf("finite to %g, Inf from %g", d.lastFinite, d.firstInf)
	if !math.IsNaN(d.firstZero) {
		s = fmt.Sprintf("finite to %g, zero from %g", d.lastFinite, d.firstZero)
		if !math.IsNaN(d.firstInf) {
			s += fmt.Sprintf(", Inf from %g", d.firstInf)
		}
	}
	return s
}

// perK joins one description per K, once if they are all the same.
func perK(ks []int, descs []string) string {
	all := true
	for _, d := range descs {
		all = all && d == descs[0]
	}
	if all {
		return fmt.Sprintf("%s (K = %s)", descs[0], strings.Trim(fmt.Sprint(ks), "[]"))
	}
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("K=%d %s", k, descs[i])
	}
	return strings.Join(parts, "; ")
}

// aligned row length, 32 on M1–M4) and feeds it values around 4094.
func (e *env) sliceClamp() Probe {
	p := Probe{Name: "width-slice-clamp", What: "slice_by_size of a row at last-axis offset 0 vs W: does |x| > 4094 become Inf?"}
	w := e.t.RowLength(1)
	ch := e.channels(w, 1) // every channel the same row: the output surface meets MinSurfaceBytes
	values := []float64{2048, 4092, engine.SliceClamp, 4096, 4100, 8192, 30000, -engine.SliceClamp, -4096}
	p.Params = map[string]any{"offsets": []int{0, w}, "width": w, "channels": ch, "values": values, "clamp_modeled": e.t.WidthSliceClamp}
	var exp, meas []string
	p.Values = map[string]any{}
	for _, off := range []int{0, w} {
		b := newMIL(e.t.Opset)
		x := b.input("x", 1, ch, 1, 2*w)
		y := b.op("y", "slice_by_size", []int{1, ch, 1, w}, "begin", b.ints(0, 0, 0, off), "size", b.ints(1, ch, 1, w), "x", ref(x))
		c := e.compile(b.program(e.t, y, []int{1, ch, 1, w}))
		if c.err != nil {
			return fail(p, c.err)
		}
		firstInf, wantInf := math.NaN(), math.NaN()
		for _, v := range values {
			want := v
			if off > 0 && e.t.WidthSliceClamp && math.Abs(v) > widthClamp {
				want = math.Copysign(math.Inf(1), v)
			}
			pt := Point{Label: fmt.Sprintf("offset %d, x=%g", off, v), In: Num(v), Want: Num(want)}
			out, err := c.run([][]float32{fill(ch*2*w, v)}, ch*w)
			if err != nil {
				pt.Error, pt.Got = err.Error(), Num(math.NaN())
			} else {
				got := float64(out[0][0])
				pt.Got, pt.OK = Num(got), same(want, got)
				if i := disagrees(out[0]); i >= 0 {
					pt.Error, pt.OK = fmt.Sprintf("elements disagree: element %d is %g, element 0 %g", i, out[0][i], got), false
				}
				if math.IsInf(got, 0) && (math.IsNaN(firstInf) || math.Abs(v) < firstInf) {
					firstInf = math.Abs(v)
				}
			}
			if math.IsInf(want, 0) && (math.IsNaN(wantInf) || math.Abs(v) < wantInf) {
				wantInf = math.Abs(v)
			}
			p.Points = append(p.Points, pt)
		}
		c.close()
		desc := func(inf float64) string {
			if math.IsNaN(inf) {
				return fmt.Sprintf("offset %d exact", off)
			}
			return fmt.Sprintf("offset %d Inf from |x|=%g", off, inf)
		}
		exp, meas = append(exp, desc(wantInf)), append(meas, desc(firstInf))
		p.Values[fmt.Sprintf("offset%d_first_inf", off)] = Num(firstInf)
	}
	p.Expected, p.Measured, p.Verdict = strings.Join(exp, "; "), strings.Join(meas, "; "), verdict(p.Points)
	return p
}

// disagrees is the index of the first element of xs that is not the same
// as xs[0] (a padded surface computes the same value everywhere), or -1.
func disagrees(xs []float32) int {
	for i, x := range xs {
		if !same(float64(xs[0]), float64(x)) {
			return i
		}
	}
	return -1
}

// reduceSum sums n ones (then zeros) with a native reduce_sum over the last
// axis, which the model gives an fp16 running sum.
func (e *env) reduceSum() Probe {
	p := Probe{Name: "reduce-sum-integers", What: "reduce_sum of n ones over the last axis: where does exactness end?"}
	const s = 4096
	ch := e.channels(s, 1) // every channel the same row: both surfaces meet MinSurfaceBytes
	counts := []int{1024, 2047, 2048, 2049, 2050, 2052, 3000, 4096}
	p.Params = map[string]any{"row": s, "channels": ch, "counts": counts}
	b := newMIL(e.t.Opset)
	x := b.input("x", 1, ch, 1, s)
	r := b.op("", "reduce_sum", []int{1, ch, 1, 1}, "axes", b.ints(3), "keep_dims", b.bool1(true), "x", ref(x))
	y := b.op("y", "pad", []int{1, ch, 1, s}, "constant_val", b.half(0), "mode", b.str("constant"), "pad", b.ints(0, 0, 0, 0, 0, 0, 0, s-1), "x", ref(r))
	c := e.compile(b.program(e.t, y, []int{1, ch, 1, s}))
	if c.err != nil {
		return fail(p, c.err)
	}
	defer c.close()
	lastExact, wantExact := 0, 0
	var got4096, want4096 float64
	for _, n := range counts {
		var want float64
		for range n {
			want = fp16.Round64(want + 1) // the model's fp16 running sum
		}
		pt, got := c.onesPoint(s, ch, n, want, &lastExact, &wantExact, ch*s)
		if n == s {
			want4096 = want
			if !math.IsNaN(got) { // a failed run reports 0
				got4096 = got
			}
		}
		p.Points = append(p.Points, pt)
	}
	p.Values = map[string]any{"last_exact": lastExact, "sum_of_4096": Num(got4096)}
	p.Expected = fmt.Sprintf("exact to n=%d; 4096 ones sum to %g", wantExact, want4096)
	p.Measured = fmt.Sprintf("exact to n=%d; 4096 ones sum to %g", lastExact, got4096)
	p.Verdict = verdict(p.Points)
	return p
}

// onesPoint runs c on ch rows of s values each, n ones then zeros, and
// scores its first output against want, the model's sum; with several
// rows, each row's sum (output element j·len/ch) must be the first's. It
// raises *lastExact to n when the device's sum is exactly n and *wantExact
// when the model's is, and returns the point with the device's sum (NaN
// if the run failed). sizes are the output sizes c.run takes.
func (c compiled) onesPoint(s, ch, n int, want float64, lastExact, wantExact *int, sizes ...int) (Point, float64) {
	in := make([]float32, ch*s)
	for r := range ch {
		for i := range n {
			in[r*s+i] = 1
		}
	}
	pt := Point{Label: fmt.Sprintf("n=%d", n), In: Num(n), Want: Num(want)}
	got := math.NaN()
	if out, err := c.run([][]float32{in}, sizes...); err != nil {
		pt.Error, pt.Got = err.Error(), Num(got)
	} else {
		got = float64(out[0][0])
		pt.Got, pt.OK = Num(got), same(want, got)
		for r, step := 1, len(out[0])/ch; r < ch; r++ {
			if v := float64(out[0][r*step]); !same(got, v) {
				pt.Error, pt.OK = fmt.Sprintf("rows disagree: row %d sums to %g, row 0 to %g", r, v, got), false
				break
			}
		}
		if got == float64(n) {
			*lastExact = max(*lastExact, n)
		}
	}
	if want == float64(n) {
		*wantExact = max(*wantExact, n)
	}
	return pt, got
}

// onesDot sums n ones the way the lowering does (a last-axis ReduceSum
// becomes a matmul with ones, wide-accumulated).
func (e *env) onesDot() Probe {
	p := Probe{Name: "ones-dot", What: "sum of n ones as the lowering emits it (a matmul with ones): exact where reduce_sum is not?"}
	s := engine.RowLimit
	counts := []int{1024, 2048, 2049, 4096, engine.RowLimit}
	if e.short {
		s, counts = 4096, []int{2048, 2049, 4096}
	}
	s = min(s, e.t.MaxSpatial)
	p.Params = map[string]any{"row": s, "counts": counts}
	g := dataflow.New()
	g.Output("s", g.ReduceSum(g.Input("x", dataflow.Shape{1, s}), []int{-1}, true))
	c := e.build(g)
	if c.err != nil {
		return fail(p, c.err)
	}
	defer c.close()
	lastExact, wantExact := 0, 0
	for _, n := range counts {
		if n > s {
			continue
		}
		// Wide: ones summed in float32 (exact), rounded to fp16 by the
		// target's Rounding; narrow: an fp16 running sum.
		pt, _ := c.onesPoint(s, 1, n, e.modelDot(1, n), &lastExact, &wantExact, 1)
		p.Points = append(p.Points, pt)
	}
	p.Values = map[string]any{"last_exact": lastExact}
	p.Expected = fmt.Sprintf("exact to n=%d", wantExact)
	p.Measured = fmt.Sprintf("exact to n=%d", lastExact)
	p.Verdict = verdict(p.Points)
	return p
}

// subnormals checks whether fp16 subnormals (below 2⁻¹⁴) survive an add
// and a mul, as operands and as results.
func (e *env) subnormals() Probe {
	p := Probe{Name: "subnormal-flush", What: "do fp16 subnormals (2^-20) survive add and mul, as operands and results?"}
	type tc struct {
		label string
		op    string
		a, b  float64
	}
	cases := []tc{
		{"2^-20 + 2^-20", "add", 0x1p-20, 0x1p-20},
		{"1.5*2^-14 - 2^-14", "add", 0x1.8p-14, -0x1p-14}, // normal operands, subnormal result
		{"2^-20 * 1", "mul", 0x1p-20, 1},
		{"2^-10 * 2^-10", "mul", 0x1p-10, 0x1p-10},
	}
	w := e.t.RowLength(1)
	g := dataflow.New()
	a := g.Input("a", dataflow.Shape{1, w})
	bv := g.Input("b", dataflow.Shape{1, w})
	g.Output("sum", g.Add(a, bv))
	g.Output("product", g.Mul(a, bv))
	c := e.build(g)
	if c.err != nil {
		return fail(p, c.err)
	}
	defer c.close()
	ins := [][]float32{make([]float32, w), make([]float32, w)}
	for i, k := range cases {
		ins[0][i], ins[1][i] = float32(k.a), float32(k.b)
	}
	out, err := c.run(ins, w, w)
	if err != nil {
		return fail(p, err)
	}
	kept, flushed := 0, 0
	for i, k := range cases {
		exact := k.a + k.b
		o := out[0]
		if k.op == "mul" {
			exact, o = k.a*k.b, out[1]
		}
		want := exact
		if e.t.FlushSubnormals {
			want = 0 // the pessimistic model flushes subnormal operands and results
		}
		got := float64(o[i])
		pt := Point{Label: k.label, In: Num(exact), Want: Num(want), Got: Num(got), OK: same(want, got)}
		switch got {
		case exact:
			kept++
		case 0:
			flushed++
		}
		p.Points = append(p.Points, pt)
	}
	p.Values = map[string]any{"kept": kept, "flushed": flushed}
	if e.t.FlushSubnormals {
		p.Expected = fmt.Sprintf("all %d flushed to 0", len(cases))
	} else {
		p.Expected = fmt.Sprintf("all %d kept", len(cases))
	}
	p.Measured = fmt.Sprintf("%d kept, %d flushed, %d other", kept, flushed, len(cases)-kept-flushed)
	p.Verdict = verdict(p.Points)
	return p
}

// transcendentals measures the relative error of sqrt, exp, pow and gelu
// against float64 at the fp16 inputs, over a grid.
func (e *env) transcendentals() []Probe {
	n := 1024
	if e.short {
		n = 256
	}
	// The model: a float32 result rounded to fp16, relative error at most
	// u(1+2⁻¹²) for normal results; a target with a TableError (the
	// pessimistic model: 2⁻¹⁰) adds it first.
	bound := fp16.UnitRoundoff * (1 + 0x1p-12)
	if e.t.TableError > 0 {
		bound = (1+e.t.TableError)*(1+bound) - 1
	}
	grid := func(lo, hi float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = fp16.Round64(lo + (hi-lo)*float64(i)/float64(n-1))
		}
		return xs
	}
	type fn struct {
		name   string
		x, y   []float64
		build  func(g *dataflow.Graph, x, y dataflow.Value) dataflow.Value
		f      func(x, y float64) float64
		milOp  string
		domain string
	}
	ys := grid(-2, 2)
	fns := []fn{
		{"sqrt", grid(0x1p-6, 256), nil, func(g *dataflow.Graph, x, _ dataflow.Value) dataflow.Value { return g.Sqrt(x) },
			func(x, _ float64) float64 { return math.Sqrt(x) }, "sqrt(", "x in [2^-6, 256]"},
		{"exp", grid(-8, 8), nil, func(g *dataflow.Graph, x, _ dataflow.Value) dataflow.Value { return g.Exp(x) },
			func(x, _ float64) float64 { return math.Exp(x) }, "exp(", "x in [-8, 8]"},
		{"pow", grid(0.25, 4), ys, func(g *dataflow.Graph, x, y dataflow.Value) dataflow.Value { return g.Pow(x, y) },
			math.Pow, "pow(", "x in [0.25, 4], y in [-2, 2]"},
		{"gelu", grid(-4, 4), nil, func(g *dataflow.Graph, x, _ dataflow.Value) dataflow.Value { return g.Gelu(x, dataflow.GeluExact) },
			func(x, _ float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }, "gelu(", "x in [-4, 4], exact (erf) mode"},
	}
	var out []Probe
	for _, f := range fns {
		p := Probe{Name: f.name + "-accuracy", What: fmt.Sprintf("max relative error of %s against float64 at the fp16 inputs, over points with |f| >= 2^-10", f.name)}
		p.Params = map[string]any{"points": n, "domain": f.domain, "model_bound": bound}
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, n})
		var y dataflow.Value
		if f.y != nil {
			y = g.Input("y", dataflow.Shape{1, n})
		}
		g.Output("f", f.build(g, x, y))
		prog, err := lower.Lower(g, e.t)
		if err != nil {
			out = append(out, fail(p, err))
			continue
		}
		if !strings.Contains(string(prog.MIL), f.milOp) {
			out = append(out, fail(p, fmt.Errorf("selftest: the lowering emitted no %s", strings.TrimSuffix(f.milOp, "("))))
			continue
		}
		c := e.compile(prog)
		if c.err != nil {
			p.Expected = fmt.Sprintf("compiles; rel. err <= %.2e (%.2fu)", bound, bound/fp16.UnitRoundoff)
			p.Measured, p.Verdict, p.Error = refusal(c.err), VerdictDiffers, c.err.Error()
			out = append(out, p)
			continue
		}
		ins := [][]float32{fill(n, 0)}
		for i, v := range f.x {
			ins[0][i] = float32(v)
		}
		if f.y != nil {
			ins = append(ins, fill(n, 0))
			for i, v := range f.y {
				ins[1][i] = float32(v)
			}
		}
		res, err := c.run(ins, n)
		c.close()
		if err != nil {
			out = append(out, fail(p, err))
			continue
		}
		worst, worstAt := 0.0, 0
		for i := range n {
			var yy float64
			if f.y != nil {
				yy = f.y[i]
			}
			want := f.f(f.x[i], yy)
			if math.Abs(want) < 0x1p-10 {
				continue
			}
			got := float64(res[0][i])
			rel := math.Abs(got-want) / math.Abs(want)
			if math.IsNaN(got) {
				rel = math.Inf(1)
			}
			if rel > worst {
				worst, worstAt = rel, i
			}
		}
		p.Values = map[string]any{"max_rel_err": Num(worst), "in_units_of_u": Num(worst / fp16.UnitRoundoff), "worst_x": Num(f.x[worstAt])}
		p.Expected = fmt.Sprintf("rel. err <= %.2e (%.2fu)", bound, bound/fp16.UnitRoundoff)
		p.Measured = fmt.Sprintf("max rel. err %.2e (%.2fu) at x=%g", worst, worst/fp16.UnitRoundoff, f.x[worstAt])
		p.Verdict = VerdictModeled
		if worst > bound {
			p.Verdict = VerdictDiffers
		}
		out = append(out, p)
	}
	return out
}

// concatArity concatenates 2, 3 and 16 rows of the input in reverse order
// with one concat op.
func (e *env) concatArity() Probe {
	p := Probe{Name: "concat-arity", What: "one concat of 2, 3 and 16 inputs along the channel axis: does it compile, is it right?"}
	// Rows wide enough that the smallest output, two of them, meets the
	// target's MinSurfaceBytes (one aligned row where there is none).
	w := e.t.RowLength(max((e.t.MinSurfaceBytes+3)/4, 1))
	counts := []int{2, 3, 16}
	p.Params = map[string]any{"inputs": counts, "width": w}
	var exp, meas []string
	p.Values = map[string]any{}
	for _, k := range counts {
		b := newMIL(e.t.Opset)
		x := b.input("x", 1, 16, 1, w)
		var parts []mil.Expr
		for i := k - 1; i >= 0; i-- {
			parts = append(parts, ref(b.op("", "slice_by_size", []int{1, 1, 1, w}, "begin", b.ints(0, i, 0, 0), "size", b.ints(1, 1, 1, w), "x", ref(x))))
		}
		y := b.op("y", "concat", []int{1, k, 1, w}, "axis", b.int1(1), "interleave", b.bool1(false), "values", &mil.Tuple{Elems: parts})
		want := "compiles, correct"
		if k > 2 {
			want = "refused"
		}
		exp = append(exp, fmt.Sprintf("%d: %s", k, want))
		c := e.compile(b.program(e.t, y, []int{1, k, 1, w}))
		var got string
		if c.err != nil {
			got = "refused"
			if !errors.Is(c.err, shim.ErrUnsupported) {
				got = "error"
			}
			p.Values[fmt.Sprintf("concat%d_error", k)] = c.err.Error()
		} else {
			in := make([]float32, 16*w)
			for i := range in {
				in[i] = float32(i/w + 1) // row r holds r+1
			}
			out, err := c.run([][]float32{in}, k*w)
			c.close()
			switch {
			case err != nil:
				got = "runs with error"
				p.Values[fmt.Sprintf("concat%d_error", k)] = err.Error()
			default:
				got = "compiles, correct"
				for j, v := range out[0] {
					if v != float32(k-j/w) {
						got = fmt.Sprintf("compiles, wrong (element %d is %g, want %d)", j, v, k-j/w)
						break
					}
				}
			}
		}
		p.Points = append(p.Points, Point{Label: fmt.Sprintf("%d inputs: %s", k, got), In: Num(k), Want: Num(boolNum(want == "refused")), Got: Num(boolNum(got == "refused")), OK: got == want})
		meas = append(meas, fmt.Sprintf("%d: %s", k, got))
		p.Values[fmt.Sprintf("concat%d", k)] = got
	}
	p.Expected, p.Measured, p.Verdict = strings.Join(exp, "; "), strings.Join(meas, "; "), verdict(p.Points)
	return p
}

func boolNum(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// surfaces lowers one two-input, two-output graph for the device's target
// (inputs packed into one surface) and for a copy of it with PackedIO off
// (a surface per tensor), and runs both.
func (e *env) surfaces() Probe {
	p := Probe{Name: "io-surfaces", What: "the same 2-input graph with one packed input surface vs a surface per input"}
	w := e.t.RowLength(1)
	// Rows enough that each tensor alone meets the target's
	// MinSurfaceBytes, so that both layouts are the same rows with no
	// padding between them.
	rows := e.channels(w, 4)
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{rows, w})
	y := g.Input("y", dataflow.Shape{rows, w})
	g.Output("s", g.Add(x, y))
	g.Output("d", g.Sub(x, y))
	xs, ys := make([]float32, rows*w), make([]float32, rows*w)
	for i := range xs {
		xs[i], ys[i] = float32(i%64), float32(3*(i%17)) // small integers: exact sums
	}
	separate := e.t
	separate.PackedIO = false
	try := func(t lower.Target) (string, int, error) {
		prog, err := lower.Lower(g, t)
		if err != nil {
			return "lowering failed", 0, err
		}
		c := e.compile(prog)
		if c.err != nil {
			if errors.Is(c.err, shim.ErrUnsupported) {
				return "refused", len(prog.InputSurfaces), c.err
			}
			return "error", len(prog.InputSurfaces), c.err
		}
		defer c.close()
		out, err := c.run([][]float32{xs, ys}, rows*w, rows*w)
		if err != nil {
			return "runs with error", len(prog.InputSurfaces), err
		}
		for i := range xs {
			if out[0][i] != xs[i]+ys[i] || out[1][i] != xs[i]-ys[i] {
				return "runs, wrong", len(prog.InputSurfaces), fmt.Errorf("element %d: got %g, %g; want %g, %g", i, out[0][i], out[1][i], xs[i]+ys[i], xs[i]-ys[i])
			}
		}
		return "runs, correct", len(prog.InputSurfaces), nil
	}
	packed, np, perr := try(e.t)
	sep, ns, serr := try(separate)
	p.Params = map[string]any{"packed_surfaces": np, "separate_surfaces": ns, "rows": rows, "width": w}
	p.Values = map[string]any{"packed": packed, "separate": sep}
	if perr != nil {
		p.Values["packed_error"] = perr.Error()
	}
	if serr != nil {
		p.Values["separate_error"] = serr.Error()
	}
	wantSep := "refused"
	if !e.t.PackedIO {
		wantSep = "runs, correct"
	}
	p.Expected = "packed: runs, correct; separate: " + wantSep
	p.Measured = "packed: " + packed + "; separate: " + sep
	p.Points = []Point{
		{Label: "packed: " + packed, In: Num(np), OK: packed == "runs, correct"},
		{Label: "separate: " + sep, In: Num(ns), OK: sep == wantSep},
	}
	p.Verdict = verdict(p.Points)
	return p
}

// budgetBound caps the compile-budget count: past the ~119 that public
// reports give, a bounded overshoot shows whether the limit exists.
const budgetBound = 160

// compileBudget compiles distinct programs, keeping each loaded, until one
// fails or budgetBound is reached.
//
// On hardware it counts the engine's own limit: it lifts the process
// budget (ane.ProcessBudget, the target's CompileBudget) by budgetBound
// for the count, and it runs only in a full run, last: the process may be
// unable to compile afterwards. On the simulator, whose device refuses the
// compile past its target's CompileBudget, it counts that budget, in a
// short run too (a hundred tiny compiles are cheap), and gives the
// compiles it took back afterwards by raising the device's limit by as
// many, so that the device compiles after Run as it did before.
func (e *env) compileBudget() Probe {
	p := Probe{Name: "compile-budget", What: "how many distinct programs compile (kept loaded) before a failure, bounded"}
	p.Params = map[string]any{"bound": budgetBound, "budget_modeled": e.t.CompileBudget}
	dev := e.dev
	if c, ok := dev.(interface{ Backend() shim.Device }); ok {
		dev = c.Backend() // past the cache, which would evict and close
	}
	hw := e.dev.Info().Hardware
	var budget *shim.Budget
	if hw {
		p.Expected = fmt.Sprintf("about 119 per process (public reports); anemone stops at %d (Target.CompileBudget)", e.t.CompileBudget)
		if e.short {
			p.Measured, p.Verdict = "-short", VerdictSkipped
			return p
		}
		budget = ane.ProcessBudget()
	} else {
		p.Expected = fmt.Sprintf("%d per device (Target.CompileBudget), then refused (shim.ErrBudget)", e.t.CompileBudget)
		b, ok := dev.(interface{ Budget() *shim.Budget })
		if !ok {
			p.Measured, p.Verdict = "simulator without a compile budget", VerdictNA
			return p
		}
		budget = b.Budget()
	}
	before, limit := budget.Used(), budget.Limit()
	if hw {
		budget.SetLimit(before + budgetBound)
		defer budget.SetLimit(limit)
	}
	w := e.t.RowLength(1)
	ch := e.channels(w, 1)
	var exes []shim.Executable
	defer func() {
		for _, x := range exes {
			_ = x.Close()
		}
	}()
	var ferr error
	for i := range budgetBound {
		b := newMIL(e.t.Opset)
		x := b.input("x", 1, ch, 1, w)
		y := b.op("y", "add", []int{1, ch, 1, w}, "x", ref(x), "y", b.half(float64(i+1)))
		exe, err := dev.Compile(b.program(e.t, y, []int{1, ch, 1, w}))
		if err != nil {
			ferr = err
			break
		}
		exes = append(exes, exe)
	}
	if !hw {
		budget.SetLimit(budget.Limit() + len(exes)) // the probe's compiles given back
	}
	p.Values = map[string]any{"compiled": len(exes), "compiles_before_probe": before}
	if ferr != nil {
		p.Values["error"] = ferr.Error()
		p.Measured = fmt.Sprintf("%d compiled (after %d earlier compiles), then: %s", len(exes), before, firstLine(ferr.Error()))
	} else {
		p.Measured = fmt.Sprintf("all %d compiled (after %d earlier compiles)", len(exes), before)
	}
	p.Verdict = VerdictMeasured
	if !hw {
		total := before + len(exes)
		p.Values["total"] = total
		then := "no refusal"
		switch {
		case errors.Is(ferr, shim.ErrBudget):
			then = "refused (shim.ErrBudget)"
		case ferr != nil:
			then = firstLine(ferr.Error())
		}
		p.Measured = fmt.Sprintf("%d per device (%d earlier, %d by the probe), then %s", total, before, len(exes), then)
		p.Verdict = VerdictModeled
		if total != e.t.CompileBudget || !errors.Is(ferr, shim.ErrBudget) {
			p.Verdict = VerdictDiffers
		}
	}
	return p
}
