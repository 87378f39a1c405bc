package selftest

import (
	"fmt"
	"math"
	"strings"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
)

// The probes of the datapath and surface behaviours reported per chip
// (docs/ENGINE.md §9): each runs a small program whose result tells which
// behaviour the engine has, and names it. On the simulator each shows the
// simulator's own model.

// dot is a compiled x [1, K] · y [K, n] of two runtime operands (a MIL
// matmul), n one aligned row.
type dot struct {
	compiled
	k, n int
}

func (e *env) dot(k int) (dot, error) {
	n := e.t.RowLength(1)
	g := dataflow.New()
	g.Output("z", g.MatMul(g.Input("x", dataflow.Shape{1, k}), g.Input("y", dataflow.Shape{k, n}), false, false))
	c := e.build(g)
	return dot{compiled: c, k: k, n: n}, c.err
}

// value runs Σ_i x[i]·y[i] (y repeated in every column) and returns the
// first column; NaN with the error when the run fails.
func (d dot) value(x, y []float64) (float64, error) {
	xs := make([]float32, d.k)
	ys := make([]float32, d.k*d.n)
	for i := range d.k {
		if i < len(x) {
			xs[i] = float32(x[i])
		}
		yi := 1.0
		if y != nil {
			yi = 0
			if i < len(y) {
				yi = y[i]
			}
		}
		for j := range d.n {
			ys[i*d.n+j] = float32(yi)
		}
	}
	out, err := d.run([][]float32{xs, ys}, d.n)
	if err != nil {
		return math.NaN(), err
	}
	return float64(out[0][0]), nil
}

// dotCase is one input of a dot probe and the behaviour each result names.
type dotCase struct {
	label string
	x, y  []float64
	named map[float64]string // result → behaviour
}

// runDots compiles a K-term dot, runs every case and scores it against the
// model; it returns the behaviours the results name ("other" for a result
// no behaviour explains).
func (e *env) runDots(p *Probe, k int, cases []dotCase) (got, want []string, ok bool) {
	d, err := e.dot(k)
	if err != nil {
		*p = fail(*p, err)
		return nil, nil, false
	}
	defer d.close()
	name := func(c dotCase, v float64) string {
		if math.IsNaN(v) {
			return "error"
		}
		if b, ok := c.named[v]; ok {
			return b
		}
		return fmt.Sprintf("other (%g)", v)
	}
	for _, c := range cases {
		m := e.modelDotVec(c.x, c.y)
		v, err := d.value(c.x, c.y)
		pt := Point{Label: c.label, Want: Num(m), Got: Num(v), OK: same(m, v)}
		if err != nil {
			pt.Error = err.Error()
		}
		p.Points = append(p.Points, pt)
		got, want = append(got, name(c, v)), append(want, name(c, m))
	}
	return got, want, true
}

// summarize fills the probe's expected, measured and verdict from the
// behaviours of its cases, one per label.
func summarize(p *Probe, labels, want, got []string) {
	if p.Values == nil {
		p.Values = map[string]any{}
	}
	var exp, meas []string
	for i, l := range labels {
		exp, meas = append(exp, l+": "+want[i]), append(meas, l+": "+got[i])
		p.Values[l] = got[i]
	}
	p.Expected, p.Measured, p.Verdict = strings.Join(exp, "; "), strings.Join(meas, "; "), verdict(p.Points)
}

// repeat is n copies of v.
func repeat(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// innerDim: on M1 a matmul whose inner dimension is not a multiple of 32
// is reported to return zeros (maderix/ANE): the target's InnerMultiple.
// The lowering pads every contraction to it, so this program is
// hand-built: m rows of K ones from the input times a constant [K, n] of
// ones, for K = 32, 40, 48 and 64. The rows (each the same dot) are there
// so that the surfaces meet the target's MinSurfaceBytes.
func (e *env) innerDim() Probe {
	p := Probe{Name: "matmul-inner-dim-32", What: "hand-built matmul of K ones by a constant ones [K, n]: zeros when K is not a multiple of 32?"}
	ks := []int{32, 40, 48, 64}
	n := e.t.RowLength(1)
	m := e.channels(n, 1)
	for _, k := range ks {
		m = max(m, e.channels(e.t.RowLength(k), 1))
	}
	p.Params = map[string]any{"K": ks, "columns": n, "rows": m, "inner_multiple_modeled": e.t.InnerMultiple}
	var labels, want, got []string
	for _, k := range ks {
		label := fmt.Sprintf("K=%d", k)
		w := e.t.RowLength(k)
		b := newMIL(e.t.Opset)
		x := b.input("x", 1, m, 1, w)
		row := b.op("", "slice_by_size", []int{1, m, 1, k}, "begin", b.ints(0, 0, 0, 0), "size", b.ints(1, m, 1, k), "x", ref(x))
		lhs := b.op("", "reshape", []int{m, k}, "shape", b.ints(m, k), "x", ref(row))
		ones := make([]byte, 2*k*n)
		for i := 0; i < len(ones); i += 2 {
			ones[i+1] = 0x3c // fp16 1.0, little-endian 0x3c00
		}
		off := b.blob.Add(mil.BlobFP16, ones)
		rhs := b.konst(&mil.Literal{Type: mil.TensorType("fp16", k, n), Blob: &mil.BlobRef{Path: lower.WeightPath, Offset: off}})
		prod := b.op("", "matmul", []int{m, n}, "x", ref(lhs), "y", ref(rhs))
		y := b.op("y", "reshape", []int{1, m, 1, n}, "shape", b.ints(1, m, 1, n), "x", ref(prod))
		c := e.compile(b.program(e.t, y, []int{1, m, 1, n}))
		exp, wantV := "correct", float64(k)
		if e.innerZeros(k) {
			exp, wantV = "zeros", 0
		}
		res := "refused"
		pt := Point{Label: label, In: Num(k), Want: Num(wantV)}
		if c.err != nil {
			pt.Error = c.err.Error()
		} else {
			out, err := c.run([][]float32{fill(m*w, 1)}, m*n)
			c.close()
			mixed := -1
			if err == nil {
				mixed = disagrees(out[0])
			}
			switch {
			case err != nil:
				res, pt.Error = "runs with error", err.Error()
			case mixed >= 0:
				res = fmt.Sprintf("mixed (element %d is %g, element 0 %g)", mixed, out[0][mixed], out[0][0])
			case out[0][0] == float32(k):
				res = "correct"
			case out[0][0] == 0:
				res = "zeros"
			default:
				res = fmt.Sprintf("other (%g)", out[0][0])
			}
			if err == nil {
				pt.Got = Num(out[0][0])
			}
		}
		pt.OK = res == exp
		p.Points = append(p.Points, pt)
		labels, want, got = append(labels, label), append(want, exp), append(got, res)
	}
	summarize(&p, labels, want, got)
	return p
}

// partialSum: on the M3 family (h15g) a partial sum reaching 2¹⁵ is
// reported to return zero, where other chips give ±Inf only for a true
// output near 32752. 32 terms of +v, 32 of −v and a 1: the running sum
// peaks at 32·v, the result is 1.
func (e *env) partialSum() Probe {
	p := Probe{Name: "partial-sum-2^15", What: "dot whose running sum peaks at 2^14 or 2^15 and ends at 1: is the result 1, 0 or Inf?"}
	const k = 96
	var cases []dotCase
	for _, peak := range []float64{1 << 14, 1 << 15} {
		v := peak / 32
		x := append(append(repeat(32, v), repeat(32, -v)...), 1)
		cases = append(cases, dotCase{label: fmt.Sprintf("peak 2^%d", int(math.Log2(peak))), x: x,
			named: map[float64]string{1: "exact", 0: "zero", math.Inf(1): "Inf", math.Inf(-1): "Inf"}})
	}
	p.Params = map[string]any{"K": k, "terms": "32×v, 32×(−v), 1"}
	got, want, ok := e.runDots(&p, k, cases)
	if !ok {
		return p
	}
	summarize(&p, []string{cases[0].label, cases[1].label}, want, got)
	return p
}

// productRounding: each product is reported rounded to fp16 inside the
// MAC, and a subnormal product flushed (a numeric fingerprint of M3
// Ultra). 512 pairs (1+2⁻¹⁰)·(1+3·2⁻¹⁰) − 1·1 sum to 2 with rounded
// products and to 2 + 3·2⁻¹¹ (2 + 2⁻⁹ in fp16) with exact ones; 1024
// products 2⁻⁸·2⁻⁸ = 2⁻¹⁶ (subnormal) sum to 2⁻⁶ kept, 0 flushed.
func (e *env) productRounding() Probe {
	p := Probe{Name: "product-rounding", What: "inside the matmul: are products rounded to fp16, and subnormal products flushed?"}
	const k = 1024
	a, b := 1+0x1p-10, 1+3*0x1p-10
	var x, y []float64
	for range k / 2 {
		x, y = append(x, a, -1), append(y, b, 1)
	}
	cases := []dotCase{
		{label: "rounding", x: x, y: y, named: map[float64]string{2: "products rounded to fp16", 2 + 0x1p-9: "products exact"}},
		{label: "subnormal", x: repeat(k, 0x1p-8), y: repeat(k, 0x1p-8), named: map[float64]string{0x1p-6: "subnormal products kept", 0: "subnormal products flushed"}},
	}
	p.Params = map[string]any{"K": k}
	got, want, ok := e.runDots(&p, k, cases)
	if !ok {
		return p
	}
	summarize(&p, []string{"rounding", "subnormal"}, want, got)
	return p
}

// tieRounding: the wide sum's rounding to fp16 is reported to break ties
// upward on M3 and M5 and to even on M1. 2048 + 1, 2048 + 5 and −2048 − 1
// fall halfway between fp16 neighbours (spacing 2).
func (e *env) tieRounding() Probe {
	p := Probe{Name: "tie-rounding", What: "a dot's exact result halfway between two fp16 values: to even, up, or away from zero?"}
	const k = 32
	cases := []dotCase{
		{label: "2049", x: []float64{2048, 1}, named: map[float64]string{2048: "to even", 2050: "up"}},
		{label: "2053", x: []float64{2048, 5}, named: map[float64]string{2052: "to even", 2054: "up"}},
		{label: "-2049", x: []float64{-2048, -1}, named: map[float64]string{-2048: "to even or toward +Inf", -2050: "away from zero"}},
	}
	p.Params = map[string]any{"K": k}
	got, want, ok := e.runDots(&p, k, cases)
	if !ok {
		return p
	}
	summarize(&p, []string{"2049", "2053", "-2049"}, want, got)
	behaviour := func(named []string) string {
		switch {
		case named[0] == "to even" && named[1] == "to even":
			return "ties to even"
		case named[0] == "up" && named[1] == "up" && named[2] == "away from zero":
			return "ties away from zero"
		case named[0] == "up" && named[1] == "up":
			return "ties up (toward +Inf)"
		}
		return "other"
	}
	p.Params["rounding_modeled"] = e.t.Rounding.String()
	p.Values["behaviour"] = behaviour(got)
	p.Expected = behaviour(want) + " (" + p.Expected + ")"
	p.Measured = behaviour(got) + " (" + p.Measured + ")"
	return p
}

// addOne compiles y = x + 1 on one [1, c, 1, w] surface, hand-built (no
// padding by the lowering), runs it on distinct values and names the
// outcome: refused, error, correct or corrupt.
func (e *env) addOne(c, w int) (string, error) {
	b := newMIL(e.t.Opset)
	x := b.input("x", 1, c, 1, w)
	y := b.op("y", "add", []int{1, c, 1, w}, "x", ref(x), "y", b.half(1))
	prog := b.program(e.t, y, []int{1, c, 1, w})
	cp := e.compile(prog)
	if cp.err != nil {
		return "refused", cp.err
	}
	defer cp.close()
	in := make([]float32, c*w)
	for i := range in {
		in[i] = float32(i % 1024) // exact in fp16, and so is i + 1
	}
	out, err := cp.run([][]float32{in}, c*w)
	if err != nil {
		return "runs with error", err
	}
	for i, v := range out[0] {
		if v != in[i]+1 {
			return fmt.Sprintf("corrupt (element %d is %g, want %g)", i, v, in[i]+1), nil
		}
	}
	return "correct", nil
}

// surfaceWidth: a surface whose width is not a multiple of 16 is reported
// to corrupt data on some chips (rustane). The lowering never emits one
// (it pads rows to the target's alignment); this hand-built program hands
// such widths to the engine, with channels enough to meet the target's
// MinSurfaceBytes, and the model has no such cliff.
func (e *env) surfaceWidth() Probe {
	p := Probe{Name: "surface-width-16", What: "x + 1 on one surface of width 16, 24, 40, 64, 96: corrupt when not a multiple of 16?"}
	widths := []int{16, 24, 40, 64, 96}
	var chans []int
	for _, w := range widths {
		chans = append(chans, e.channels(w, 1))
	}
	p.Params = map[string]any{"widths": widths, "channels": chans, "row_align": e.t.RowAlign, "min_row": e.t.MinRow}
	var labels, want, got []string
	for i, w := range widths {
		res, err := e.addOne(chans[i], w)
		exp := "correct"
		pt := Point{Label: fmt.Sprintf("width %d: %s", w, res), In: Num(w), OK: res == exp}
		if err != nil {
			pt.Error = err.Error()
		}
		p.Points = append(p.Points, pt)
		labels, want, got = append(labels, fmt.Sprintf("w=%d", w)), append(want, exp), append(got, res)
	}
	summarize(&p, labels, want, got)
	return p
}

// surfaceSize: surfaces below about 49 KB are reported to fail (Orion):
// the target's MinSurfaceBytes. x + 1 on surfaces of 16, 32, 48, 49 and
// 64 KB; the model refuses those below the minimum.
func (e *env) surfaceSize() Probe {
	p := Probe{Name: "surface-minimum-size", What: "x + 1 on one surface of 16, 32, 48, 49 and 64 KB: do the small ones fail?"}
	w := e.t.RowLength(1)
	var sizes []int
	for _, kb := range []int{16, 32, 48, 49, 64} {
		sizes = append(sizes, (kb*1024+2*w-1)/(2*w)) // channels
	}
	p.Params = map[string]any{"width": w, "channels": sizes, "min_bytes_modeled": e.t.MinSurfaceBytes}
	var labels, want, got []string
	for _, c := range sizes {
		res, err := e.addOne(c, w)
		label := fmt.Sprintf("%d B", 2*c*w)
		exp := "correct"
		if e.surfaceRefused(2 * c * w) {
			exp = "refused"
		}
		pt := Point{Label: label + ": " + res, In: Num(2 * c * w), Want: Num(boolNum(exp == "refused")), Got: Num(boolNum(res == "refused")), OK: res == exp}
		if err != nil {
			pt.Error = err.Error()
		}
		p.Points = append(p.Points, pt)
		labels, want, got = append(labels, label), append(want, exp), append(got, res)
	}
	summarize(&p, labels, want, got)
	return p
}
