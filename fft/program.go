package fft

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/parallel"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// program is one compiled transform: a layout, a direction and a mode.
type program struct {
	lay  *layout
	sign int // −1 forward, +1 inverse (unnormalized)
	mode precision.Mode
	// digits is the digit arithmetic (see schemeFor), nil for the one-pass
	// FP16 program; nil in Compensated mode means compWide.
	digits *digitScheme
	exe    shim.Executable
	comp   *compSchedule // digit programs only
	disp   *dispatcher   // runs exe on a session
}

// scheme is the program's digit arithmetic, nil for the one-pass program.
func (p *program) scheme() *digitScheme {
	if p.digits == nil && p.mode == precision.Compensated {
		return &compWide
	}
	return p.digits
}

// maxRow is the longest row a program's tensors use.
func maxRow(dev shim.Device) int {
	if s := dev.Info().Target.MaxSpatial; s > 0 {
		return min(s, engine.RowLimit)
	}
	return engine.RowLimit
}

// build lowers and compiles g, reporting whether it was compiled now; an
// error the target or device raises for a program it cannot run also
// wraps ErrUnsupported.
func build(dev shim.Device, g *dataflow.Graph, what string) (shim.Executable, shim.CompileReport, error) {
	exe, rep, err := shim.BuildReported(dev, g)
	if err == nil {
		return exe, rep, nil
	}
	if errors.Is(err, lower.ErrUnsupported) || errors.Is(err, shim.ErrUnsupported) {
		return nil, rep, fmt.Errorf("fft: %s: %w", what, errors.Join(ErrUnsupported, err))
	}
	return nil, rep, fmt.Errorf("fft: %s: %w", what, err)
}

// newProgram builds the program of lay in mode on dev.
func newProgram(dev shim.Device, lay *layout, sign int, mode precision.Mode, digits *digitScheme) (*program, error) {
	p := &program{lay: lay, sign: sign, mode: mode, digits: digits}
	g := p.graph(maxRow(dev))
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("fft: building the %v program for %v × %d: %w", mode, lay.dims, lay.batch, err)
	}
	what := fmt.Sprintf("%v transform of %v points × %d signals", mode, lay.dims, lay.batch)
	exe, rep, err := build(dev, g, what)
	if err != nil {
		return nil, err
	}
	p.exe = exe
	if p.disp, err = newDispatcher(exe, dev, rep); err != nil {
		return nil, fmt.Errorf("fft: %s: %w", what, err)
	}
	return p, nil
}

// graph builds the program's graph, with rows of at most limit elements.
func (p *program) graph(limit int) *dataflow.Graph {
	if sc := p.scheme(); sc != nil {
		p.comp = &compSchedule{sc: sc}
		return p.comp.graph(p.lay, p.sign, limit)
	}
	return fp16Graph(p.lay, p.sign, limit)
}

// fp16Graph builds the one-pass program: per stage a 1×1 conv with the
// scaled DFT block, then the twiddle multiply (four elementwise products
// and two sums on the real and imaginary halves) and the transpose that
// brings the next stage's index onto the channels.
func fp16Graph(lay *layout, sign int, limit int) *dataflow.Graph {
	g := dataflow.New()
	size := 2 * lay.batch * lay.total
	copies := 1 // copies of the input: three for the split dense stage
	if lay.split() {
		copies = splitCopies
	}
	st := lay.stages
	h0, w0 := spatial(st[0].p*st[0].q, limit)
	// The input and output are declared in the convs' own shapes where
	// their rows are long and aligned on every target (each reshape is a
	// pass over the data on the engine); elsewhere as rows (rowShape).
	in0 := dataflow.Shape{1, copies * 2 * st[0].f, h0, w0}
	var cur dataflow.Value
	if longRows(w0) {
		cur = g.Input("x", in0)
	} else {
		cur = g.Reshape(g.Input("x", rowShape(copies*size, limit)), in0)
	}
	for i, s := range st {
		c := 2 * s.f
		var wt dataflow.Value
		if i == 0 && copies > 1 {
			wt = g.Const("dft0", dataflow.Shape{c, copies * c, 1, 1}, splitBlock(s, sign))
		} else {
			blk := dftBlock(s.f, sign)
			for j, v := range blk {
				blk[j] = roundConst(math.Ldexp(v, -s.shift))
			}
			wt = g.Const(fmt.Sprintf("dft%d", i), dataflow.Shape{c, c, 1, 1}, blk)
		}
		y := g.Conv2D(cur, wt, dataflow.Conv2DOptions{})
		copies = 1
		if i == len(st)-1 {
			if sh := y.Shape(); longRows(sh[len(sh)-1]) {
				g.Output("y", y)
			} else {
				g.Output("y", g.Reshape(y, rowShape(size, limit)))
			}
			break
		}
		if s.twiddled() {
			y = g.Reshape(y, dataflow.Shape{1, c, s.p, s.q})
			re, im := twiddle(s, sign)
			for j := range re {
				re[j], im[j] = roundConst(re[j]), roundConst(im[j])
			}
			tr := g.Const(fmt.Sprintf("tw%d_re", i), dataflow.Shape{1, s.f, 1, s.q}, re)
			ti := g.Const(fmt.Sprintf("tw%d_im", i), dataflow.Shape{1, s.f, 1, s.q}, im)
			yr := g.Slice(y, []int{0, 0, 0, 0}, []int{1, s.f, s.p, s.q})
			yi := g.Slice(y, []int{0, s.f, 0, 0}, []int{1, s.f, s.p, s.q})
			zr := g.Sub(g.Mul(yr, tr), g.Mul(yi, ti))
			zi := g.Add(g.Mul(yr, ti), g.Mul(yi, tr))
			y = g.Concat(1, zr, zi)
		}
		cur = nextStage(g, y, s, st[i+1], limit)
	}
	return g
}

// longRows reports whether rows of w elements are long and aligned on
// every target (engine.Target's MinRow and RowAlign are at most 64).
func longRows(w int) bool { return w >= 64 && w%64 == 0 }

// nextStage moves the next stage's index digit from the front of Q onto the
// channels and the finished frequency digit to the back of P:
// [2, f, P, f', Q'] → [2, f', P, f, Q'], returned as the next conv's input
// [1, 2f', H, W] with H·W = P·f·Q' (spatial).
// Before the last stage Q' is 1 and the transpose is rank 4, so that no
// tensor has a last dimension of 1 (short rows have failed on some chips).
func nextStage(g *dataflow.Graph, y dataflow.Value, s, n stage, limit int) dataflow.Value {
	var t dataflow.Value
	if n.q == 1 {
		t = g.Transpose(g.Reshape(y, dataflow.Shape{2, s.f, s.p, n.f}), []int{0, 3, 2, 1})
	} else {
		t = g.Transpose(g.Reshape(y, dataflow.Shape{2, s.f, s.p, n.f, n.q}), []int{0, 3, 2, 1, 4})
	}
	h, w := spatial(n.p*n.q, limit)
	return g.Reshape(t, dataflow.Shape{1, 2 * n.f, h, w})
}

// inputScale returns the exponent e that puts the largest complex modulus
// of x·2^e in [2^inExp, 2^(inExp+1)), and checks x: NaN or ±Inf, or a
// transform times 2^post (the caller's unscaling, see program.run) that
// would overflow float64, is ErrRange, its message without the "fft: "
// prefix and the caller's name (pack adds them, and the signal's index in
// a batch). An all-zero x gives ok == false.
func (l *layout) inputScale(x []complex128, post int) (e int, ok bool, err error) {
	// The largest modulus is that of the element with the largest
	// re² + im², found without a square root per element. Where the
	// squares leave float64's range (or x holds NaN or ±Inf, which makes
	// their maximum NaN or +Inf) x is scanned again, element by element.
	// A long signal is scanned in parts, one per core.
	type best struct {
		m2 float64
		at int
	}
	bests := make([]best, parts(len(x), len(x)))
	parallel.Ranges(len(x), len(bests), func(k, lo, hi int) {
		m2, at := 0.0, lo
		for i, v := range x[lo:hi] {
			q := real(v)*real(v) + imag(v)*imag(v)
			if q > m2 || q != q {
				m2, at = q, lo+i
				if q != q {
					break
				}
			}
		}
		bests[k] = best{m2, at}
	})
	m2, at := bests[0].m2, bests[0].at
	for _, bt := range bests[1:] {
		if bt.m2 > m2 || bt.m2 != bt.m2 {
			m2, at = bt.m2, bt.at
		}
	}
	m := math.Hypot(real(x[at]), imag(x[at]))
	if !(m2 >= 0x1p-900 && m2 <= math.MaxFloat64) {
		m = 0
		for i, v := range x {
			re, im := real(v), imag(v)
			if math.IsNaN(re) || math.IsNaN(im) || math.IsInf(re, 0) || math.IsInf(im, 0) {
				return 0, false, fmt.Errorf("x[%d] = %v is not finite; remove NaN and ±Inf before transforming: %w", i, v, ErrRange)
			}
			m = max(m, math.Hypot(re, im))
		}
	}
	if m == 0 {
		return 0, false, nil
	}
	if m > math.MaxFloat64/math.Ldexp(float64(l.total), post) {
		return 0, false, fmt.Errorf("largest modulus %g times the length %d overflows float64, so no power-of-two scaling can return the transform; scale the input down: %w", m, l.total, ErrRange)
	}
	_, p := math.Frexp(m) // m ∈ [2^(p−1), 2^p)
	return l.inExp + 1 - p, true, nil
}

// put stores fp16(v·2^e) in float32, with fp16 subnormals flushed to zero
// (they lie 2²⁶ below the signal's largest modulus; the engine may flush
// them, so the program never depends on them).
func put(v float64, e int) float32 {
	r := fp16.Round64(math.Ldexp(v, e))
	if math.Abs(r) < fp16.MinNormal {
		return 0
	}
	return float32(r)
}

// flushSubnormals replaces every fp16 subnormal (and −0) in h by +0, as put
// does.
func flushSubnormals(h []uint16) {
	for i, v := range h {
		if v&0x7c00 == 0 {
			h[i] = 0
		}
	}
}

// run transforms the signals xs (each of length lay.total) in one
// dispatch, adding it to st, and to *dev the device's time and the time
// spent waiting for another call's dispatch (whose host work is that
// call's). Each result is
// the transform times 2^post (post ≤ 0: the inverse divides by the length
// on the way, so that a result no larger than its input never passes
// through the unnormalized transform's n-fold larger values), and goes
// into into[b] when into is not nil (it may be xs[b]: a transform in
// place).
func (p *program) run(what string, xs, into [][]complex128, post int, st *Stats, dev *time.Duration) ([][]complex128, error) {
	wait := time.Now()
	p.disp.mu.Lock()
	*dev += time.Since(wait)
	// An FP16 program's input is encoded straight into the device's
	// surface where its rows lie end to end there.
	var dst []uint16
	if p.comp == nil && !p.lay.split() {
		dst = p.disp.inputFlat()
	}
	buf, exps, live, err := p.pack(what, xs, dst, post)
	if err != nil {
		p.disp.mu.Unlock()
		return nil, err
	}
	// outExps[b]: the device's output of signal b times 2^(outShift −
	// outExps[b]) is its transform times 2^post.
	outExps := make([]int, len(exps))
	for b, e := range exps {
		outExps[b] = e - post
	}
	if dst != nil && len(dst) == len(buf) && &dst[0] == &buf[0] {
		buf = nil // written in place
	}
	// The check's sums of each input, taken while it is in the cache and
	// before a result in place overwrites it.
	refs := make([]checkSums, len(xs))
	for b, x := range xs {
		if live[b] {
			refs[b] = p.lay.sums(x, exps[b])
		}
	}
	// An FP16 program's one output is decoded straight from the device's
	// surface into the result (no float32 copy); any other is read first.
	half := p.comp == nil
	d, err := p.disp.runRead(buf, st, !half)
	*dev += d
	var ys [][]complex128
	var energy []float64 // Σ|y|² per signal, where unpackHalf summed it
	if err == nil && half {
		var rows shim.HalfRows
		var ok bool
		if rows, ok, err = p.disp.outputRows(p.lay.total / p.lay.stages[len(p.lay.stages)-1].f); err == nil && ok {
			ys, energy, err = p.unpackHalf(rows, into, outExps, live)
		} else if err == nil {
			err = p.disp.readAll()
			half = false
		}
	}
	if err == nil && !half {
		ys = p.unpack(p.disp.outs, into, outExps, live)
	}
	p.disp.mu.Unlock()
	if err != nil {
		return nil, deviceError(what, err)
	}
	for b, y := range ys {
		if !live[b] {
			continue
		}
		ey := math.NaN()
		if energy != nil {
			ey = energy[b]
		}
		if err := p.lay.verify(y, outExps[b], ey, refs[b]); err != nil {
			return nil, fmt.Errorf("fft: %s: signal %d: %w", what, b, err)
		}
	}
	return ys, nil
}

// pack scales every signal by its own power of two (exps) and lays the
// batch out as the program's input, in fp16 encodings: stage 0's
// [copies, 2, f, B, Q] tensor (part, index digit j_1, signal, remaining
// index). live is false for an all-zero signal.
func (p *program) pack(what string, xs [][]complex128, dst []uint16, post int) (buf []uint16, exps []int, live []bool, err error) {
	l := p.lay
	B, s0 := l.batch, l.stages[0]
	exps = make([]int, B)
	live = make([]bool, B)
	plane := 2 * B * l.total // one copy of the input
	copies := 1
	sc := p.scheme()
	switch {
	case sc != nil:
		copies = sc.dataLevels
	case l.split():
		copies = splitCopies
	}
	inPlace := len(dst) == copies*plane && copies == 1 && sc == nil
	if inPlace {
		buf = dst
	} else {
		buf = make([]uint16, copies*plane)
	}
	half := func(v float32) uint16 { return uint16(fp16.FromFloat32(v)) } // v is an fp16 value
	for b, x := range xs {
		e, ok, err := l.inputScale(x, post)
		if err != nil {
			if B > 1 { // say which signal
				return nil, nil, nil, fmt.Errorf("fft: %s: signal %d: %w", what, b, err)
			}
			return nil, nil, nil, fmt.Errorf("fft: %s: %w", what, err)
		}
		exps[b], live[b] = e, ok
		if !ok {
			// The surface holds the last call's values: cleared, so that
			// the device's input depends on this call alone.
			if inPlace {
				for j1 := range s0.f {
					re, im := (j1*B+b)*s0.q, ((s0.f+j1)*B+b)*s0.q
					clear(buf[re : re+s0.q])
					clear(buf[im : im+s0.q])
				}
			}
			continue
		}
		if copies == 1 && sc == nil {
			// One pass: scale, round and encode (a long signal on every
			// core); the scaling keeps every value below 2¹⁴, so none
			// overflows.
			parallel.Ranges(s0.f, parts(s0.f, len(x)), func(_, lo, hi int) {
				for j1 := lo; j1 < hi; j1++ {
					row := x[j1*s0.q : (j1+1)*s0.q]
					re, im := (j1*B+b)*s0.q, ((s0.f+j1)*B+b)*s0.q
					fp16.EncodeComplexScaled(buf[re:re+s0.q], buf[im:im+s0.q], row, e)
					flushSubnormals(buf[re : re+s0.q])
					flushSubnormals(buf[im : im+s0.q])
				}
			})
			continue
		}
		for j1 := range s0.f {
			row := x[j1*s0.q : (j1+1)*s0.q]
			re, im := (j1*B+b)*s0.q, ((s0.f+j1)*B+b)*s0.q
			for q, v := range row {
				for part, c := range [2]float64{real(v), imag(v)} {
					at := [2]int{re, im}[part] + q
					switch {
					case sc != nil:
						sc.putDigits(buf, plane, at, math.Ldexp(c, e))
					default:
						hi, lo := splitInput(math.Ldexp(c, e))
						buf[at] = half(lo)
						buf[plane+at] = half(put(float64(hi), -splitLoShift))
						buf[2*plane+at] = half(hi)
					}
				}
			}
		}
	}
	return buf, exps, live, nil
}

// eachOutput allocates the batch's results (or takes into's) and calls piece for every live
// signal b and last-stage digit k_m: y is signal b's result, sc the
// exponent that undoes its scaling, nats the natural positions of the
// device's outputs re0 … re0+len(nats)−1 (real parts) and im0 … (imaginary
// parts) of its output order (part, k_m, signal, k_1 … k_(m−1)). A long
// signal's r outputs per digit are split into one contiguous range per
// core (part is the core's index): the digits k_m interleave in y, so
// splitting by digit would make the cores share cache lines, while a
// range of k_1 … k_(m−1) is a block of y.
func (p *program) eachOutput(into [][]complex128, exps []int, live []bool, piece func(part int, y []complex128, b, km, sc, re0, im0 int, nats []int) error) ([][]complex128, error) {
	l := p.lay
	B, sm := l.batch, l.stages[len(l.stages)-1]
	r := l.total / sm.f
	res := make([][]complex128, B)
	errs := make([]error, parts(r, l.total))
	for b := range B {
		if into != nil {
			res[b] = into[b]
		} else {
			res[b] = make([]complex128, l.total)
		}
		if !live[b] {
			if into != nil {
				clear(res[b])
			}
			continue
		}
		parallel.Ranges(r, len(errs), func(part, lo, hi int) {
			for km := range sm.f {
				nats := l.natOf[km*r+lo : km*r+hi]
				if err := piece(part, res[b], b, km, l.outShift-exps[b], (km*B+b)*r+lo, ((sm.f+km)*B+b)*r+lo, nats); err != nil {
					errs[part] = err
					return
				}
			}
		})
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// parts is how many cores a pass over rows rows of a signal of n elements
// uses: one per core, at most one per binsPart elements.
func parts(rows, n int) int { return parallel.Parts(rows, n, binsPart) }

// unpack reads the device's outputs, as float32, into natural order and
// undoes the scaling; Compensated outputs are pieces, added smallest
// first in float64.
func (p *program) unpack(outs [][]float32, into [][]complex128, exps []int, live []bool) [][]complex128 {
	res, _ := p.eachOutput(into, exps, live, func(_ int, y []complex128, _, _, sc, re0, im0 int, nats []int) error {
		r := len(nats)
		if p.comp == nil {
			ore, oim := outs[0][re0:re0+r], outs[0][im0:im0+r]
			if sc > -1000 && sc < 1000 {
				f := math.Ldexp(1, sc) // exact: a normal power of two
				for rr, nat := range nats {
					y[nat] = complex(float64(ore[rr])*f, float64(oim[rr])*f)
				}
				return nil
			}
			for rr, nat := range nats {
				y[nat] = complex(math.Ldexp(float64(ore[rr]), sc), math.Ldexp(float64(oim[rr]), sc))
			}
			return nil
		}
		// The pieces are added in the program's units and the sum is
		// unscaled once: adding them after unscaling would round each
		// to float64's subnormal grid for a subnormal signal.
		for rr, nat := range nats {
			var re, im float64
			for k := len(outs) - 1; k >= 0; k-- {
				re += math.Ldexp(float64(outs[k][re0+rr]), p.comp.units[k])
				im += math.Ldexp(float64(outs[k][im0+rr]), p.comp.units[k])
			}
			y[nat] = complex(math.Ldexp(re, sc), math.Ldexp(im, sc))
		}
		return nil
	})
	return res
}

// unpackHalf is unpack for an FP16 program from its output's fp16 rows,
// whose length is a multiple of r (see outputRows). An encoding of ±Inf or
// NaN, an fp16 overflow on the device, is shim.ErrRange. energy[b] is
// Σ|y|² of signal b's result, summed on the way for the host's check,
// where its squares are safely inside float64's range (NaN elsewhere:
// the check sums them itself).
func (p *program) unpackHalf(rows shim.HalfRows, into [][]complex128, exps []int, live []bool) (ys [][]complex128, energy []float64, err error) {
	sums := make([][]float64, parts(p.lay.total/p.lay.stages[len(p.lay.stages)-1].f, p.lay.total))
	for k := range sums {
		sums[k] = make([]float64, len(exps))
	}
	ys, err = p.eachOutput(into, exps, live, func(part int, y []complex128, b, km, sc, re0, im0 int, nats []int) error {
		r := len(nats)
		ore, oim := chunk(rows, re0, r), chunk(rows, im0, r)
		if fp16.Finite(ore) >= 0 || fp16.Finite(oim) >= 0 {
			return fmt.Errorf("output row %d of signal %d holds ±Inf or NaN: %w", km, b, shim.ErrRange)
		}
		if sc >= -400 && sc <= 400 { // squares of |y| < 2^(16+sc) in range
			f := fp16.DecodeScale(math.Ldexp(1, sc))
			var sum float64
			for rr, nat := range nats {
				yr, yi := fp16.DecodeTimes(ore[rr], f), fp16.DecodeTimes(oim[rr], f)
				y[nat] = complex(yr, yi)
				sum += yr*yr + yi*yi
			}
			sums[part][b] += sum
			return nil
		}
		for rr, nat := range nats {
			y[nat] = complex(math.Ldexp(fp16.Bits(ore[rr]).Float64(), sc), math.Ldexp(fp16.Bits(oim[rr]).Float64(), sc))
		}
		return nil
	})
	energy = make([]float64, len(exps))
	for b := range energy {
		if sc := p.lay.outShift - exps[b]; sc < -400 || sc > 400 {
			energy[b] = math.NaN()
			continue
		}
		for _, s := range sums {
			energy[b] += s[b]
		}
	}
	return ys, energy, err
}

// chunk is logical elements [off, off+r) of rows, which lie in one row.
func chunk(rows shim.HalfRows, off, r int) []uint16 {
	c := off % rows.RowLen
	return rows.Row(off / rows.RowLen)[c : c+r]
}

// deviceError wraps a device failure; an fp16 overflow on the device (which
// the scaling rules out) is ErrRange as well.
func deviceError(what string, err error) error {
	if errors.Is(err, shim.ErrRange) {
		return fmt.Errorf("fft: %s: the device overflowed fp16: %w", what, errors.Join(ErrRange, err))
	}
	return fmt.Errorf("fft: %s: %w", what, err)
}
