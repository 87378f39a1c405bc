package selftest

import (
	"fmt"
	"math"
	"strings"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
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

// modelDotVec is the simulator's model of Σ x[i]·y[i] on the engine: each
// product rounded to fp16, summed in float32 (narrow: an fp16 running
// sum), the sum rounded to fp16 — ±Inf past the output cliff; the narrow
// model flushes a subnormal result (not the products or partial sums
// inside the op). y nil means ones.
func modelDotVec(x, y []float64, narrow bool) float64 {
	var s32 float32
	var s16 float64
	for i, xi := range x {
		yi := 1.0
		if y != nil {
			yi = y[i]
		}
		p := fp16.Round64(xi * yi)
		if narrow {
			s16 = fp16.Round64(s16 + p)
		} else {
			s32 += float32(p)
		}
	}
	sum := float64(s32)
	if narrow {
		sum = s16
	}
	if math.Abs(sum) > cliff {
		return math.Copysign(math.Inf(1), sum)
	}
	r := fp16.Round64(sum)
	if narrow && math.Abs(r) < 0x1p-14 {
		r = 0
	}
	return r
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
		m := modelDotVec(c.x, c.y, e.narrow)
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
// is reported to return zeros (maderix/ANE). The lowering pads every
// contraction to 32, so this program is hand-built: K ones from the input
// row times a constant [K, n] of ones, for K = 32, 40, 48 and 64.
func (e *env) innerDim() Probe {
	p := Probe{Name: "matmul-inner-dim-32", What: "hand-built matmul of K ones by a constant ones [K, n]: zeros when K is not a multiple of 32?"}
	ks := []int{32, 40, 48, 64}
	n := e.t.RowLength(1)
	p.Params = map[string]any{"K": ks, "columns": n}
	var labels, want, got []string
	for _, k := range ks {
		label := fmt.Sprintf("K=%d", k)
		w := e.t.RowLength(k)
		b := newMIL(e.t.Opset)
		x := b.input("x", 1, 1, 1, w)
		row := b.op("", "slice_by_size", []int{1, 1, 1, k}, "begin", b.ints(0, 0, 0, 0), "size", b.ints(1, 1, 1, k), "x", ref(x))
		lhs := b.op("", "reshape", []int{1, k}, "shape", b.ints(1, k), "x", ref(row))
		ones := make([]byte, 2*k*n)
		for i := 0; i < len(ones); i += 2 {
			ones[i+1] = 0x3c // fp16 1.0, little-endian 0x3c00
		}
		off := b.blob.Add(mil.BlobFP16, ones)
		rhs := b.konst(&mil.Literal{Type: mil.TensorType("fp16", k, n), Blob: &mil.BlobRef{Path: lower.WeightPath, Offset: off}})
		prod := b.op("", "matmul", []int{1, n}, "x", ref(lhs), "y", ref(rhs))
		y := b.op("y", "reshape", []int{1, 1, 1, n}, "shape", b.ints(1, 1, 1, n), "x", ref(prod))
		c := e.compile(b.program(e.t, y, []int{1, 1, 1, n}))
		res := "refused"
		pt := Point{Label: label, In: Num(k), Want: Num(k)}
		if c.err != nil {
			pt.Error = c.err.Error()
		} else {
			out, err := c.run([][]float32{fill(w, 1)}, n)
			c.close()
			switch {
			case err != nil:
				res, pt.Error = "runs with error", err.Error()
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
		pt.OK = res == "correct"
		p.Points = append(p.Points, pt)
		labels, want, got = append(labels, label), append(want, "correct"), append(got, res)
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
	behaviour := "other"
	switch {
	case got[0] == "to even" && got[1] == "to even":
		behaviour = "ties to even"
	case got[0] == "up" && got[1] == "up" && got[2] == "away from zero":
		behaviour = "ties away from zero"
	case got[0] == "up" && got[1] == "up":
		behaviour = "ties up (toward +Inf)"
	}
	p.Values["behaviour"] = behaviour
	p.Measured = behaviour + " (" + p.Measured + ")"
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
// such widths to the engine, and the model has no such cliff.
func (e *env) surfaceWidth() Probe {
	p := Probe{Name: "surface-width-16", What: "x + 1 on one surface of width 16, 24, 40, 64, 96: corrupt when not a multiple of 16?"}
	widths := []int{16, 24, 40, 64, 96}
	p.Params = map[string]any{"widths": widths, "row_align": e.t.RowAlign, "min_row": e.t.MinRow}
	var labels, want, got []string
	for _, w := range widths {
		res, err := e.addOne(1, w)
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

// surfaceSize: surfaces below about 49 KB are reported to fail (Orion).
// x + 1 on surfaces of 16, 32, 48 and 64 KB.
func (e *env) surfaceSize() Probe {
	p := Probe{Name: "surface-minimum-size", What: "x + 1 on one surface of 16, 32, 48, 49 and 64 KB: do the small ones fail?"}
	w := e.t.RowLength(1)
	var sizes []int
	for _, kb := range []int{16, 32, 48, 49, 64} {
		sizes = append(sizes, (kb*1024+2*w-1)/(2*w)) // channels
	}
	p.Params = map[string]any{"width": w, "channels": sizes}
	var labels, want, got []string
	for _, c := range sizes {
		res, err := e.addOne(c, w)
		label := fmt.Sprintf("%d B", 2*c*w)
		pt := Point{Label: label + ": " + res, In: Num(2 * c * w), OK: res == "correct"}
		if err != nil {
			pt.Error = err.Error()
		}
		p.Points = append(p.Points, pt)
		labels, want, got = append(labels, label), append(want, "correct"), append(got, res)
	}
	summarize(&p, labels, want, got)
	return p
}
