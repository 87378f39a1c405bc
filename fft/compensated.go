package fft

import (
	"fmt"
	"github.com/anemone-go/anemone/fp16"
	"math"

	"github.com/anemone-go/anemone/dataflow"
)

// A digit program works on fixed-point digits (see the package
// documentation, "Compensated"). A tensor of values v is held as levels of
// balanced integer digits, v = Σ_m d_m·2^(e − b·m), |d_m| ≤ 2^(b−1) + 1, and
// every constant (DFT blocks, twiddles) as levels of digits
// w_p·2^(−(b−1) − b·p), |w_p| ≤ 2^(b−1), so that every digit product is an
// integer of at most (2^(b−1) + 1)·2^(b−1): exact in fp16. How the convs
// then add the products depends on the accumulator (digitScheme.exact).
//
// The digit grids are fixed per stage by the stage's worst-case bound 2¹³
// (a constant input puts all of it in one output), while an impulse spreads
// evenly and sits Π f below it after the stages so far: its significant
// digits start levels further down, so the data carries more bits than
// the result needs.

// digitScheme fixes the arithmetic of a digit program.
type digitScheme struct {
	bits        int // digit width b
	dataLevels  int // digit levels of the data
	constLevels int // digit levels of the constants
	smax        int // pairs (p, m) of weight and data levels with p + m ≤ smax are formed
	// loMax: on the wide accumulator, one conv per limb sum s adds all its
	// pairs exactly in float32 (integers below 2²²); its fp16 rounding hi_s
	// and, for s ≤ loMax, lo_s = S_s − hi_s from a second conv that appends
	// −hi_s to the contraction hold S_s exactly.
	loMax int
	// exact: for an fp16 running sum (sim-narrow) the pairs of a limb sum
	// are grouped into convs whose every partial sum is an integer of at
	// most exactSum, exact in fp16 whatever the order; no lo pass.
	exact bool
	block int // largest block length
	// minLevels, baseLevels and pairGap set dataLevels and smax per layout
	// on an fp16 running sum (forLayout).
	minLevels, baseLevels, pairGap int
}

// exactSum is the magnitude up to which every integer is an fp16 number
// (2¹¹: fp16 has 11 significant bits, and 2¹¹ + 1 is the first integer it
// lacks).
const exactSum = 1 << 11

var (
	// compWide is Compensated on the wide accumulator: 6-bit digits, 6 data
	// levels (36 bits), 5 constant levels (30 bits), 64-point blocks. A
	// limb sum of a 64-point block is at most 6 pairs × 128 terms × 33·32 <
	// 2^19.6: exact in float32.
	compWide = digitScheme{bits: 6, dataLevels: 6, constLevels: 5, smax: 5, loMax: 3, block: MaxCompensatedBlock}
	// compNarrow is Compensated on an fp16 running sum: 3-bit digits, 10
	// constant levels (30 bits), 32-point blocks, and the data levels of
	// forLayout: one pair of a 32-point block adds 64 products of at most
	// 5·4 = 20, so every group holds at least one pair under exactSum (in
	// practice two or three: the bound uses each row's own weight digits).
	compNarrow = digitScheme{bits: 3, constLevels: 10, loMax: -1, exact: true, block: narrowBlock, minLevels: 11, baseLevels: 8, pairGap: 1}
	// fp16Narrow is FP16 on an fp16 running sum: the same exact digit
	// arithmetic with 5 constant levels and fewer data levels, enough for
	// an fp16-class result.
	fp16Narrow = digitScheme{bits: 3, constLevels: 5, loMax: -1, exact: true, block: narrowBlock, minLevels: 7, baseLevels: 6, pairGap: 2}
)

// narrowBlock is the largest block on an fp16 running sum (see compNarrow).
const narrowBlock = 32

// forLayout returns the narrow scheme sc with its data levels set for lay.
// The digit grids are fixed by the bound 2¹³, while the data that needs
// the most levels is an impulse: after stages of Π f points it is Π f
// nonzero values of Π f below the bound. The last digitize, before the
// last stage, sees it D = log₂ Π f bits down (all blocks but the last), so
// the data carries ⌈D/3⌉ levels more than 6 (FP16) or 8 (Compensated),
// and at least 7 (21 bits; FP16) or 11 (33 bits; Compensated) for the
// input's own digits; the pairs reach one level (FP16: two) short of the
// last data level.
func (sc digitScheme) forLayout(lay *layout) *digitScheme {
	d := 0.0
	for _, s := range lay.stages[:len(lay.stages)-1] {
		d += math.Log2(float64(s.f))
	}
	more := int(math.Ceil(d/float64(sc.bits) - 1e-9))
	sc.dataLevels = max(sc.minLevels, sc.baseLevels+more)
	sc.smax = sc.dataLevels - sc.pairGap
	return &sc
}

func (sc *digitScheme) digitMax() int  { return 1<<(sc.bits-1) + 1 }
func (sc *digitScheme) weightMax() int { return 1 << (sc.bits - 1) }

// dataExp is the level-0 exponent of a stage's input and output digits:
// every stage output is below stageBound = 2¹³ = 2^(b−1)·2^dataExp.
func (sc *digitScheme) dataExp() int { return stageBoundExp + 1 - sc.bits }

// magic: for |t| < 512, (t + 1536) − 1536 is t rounded to an integer (ties
// to even) in fp16 arithmetic: t + 1536 lies in [1024, 2048), where fp16's
// spacing is 1, and the subtraction is exact.
const magic = 1536

// piece is one fp16 tensor of a stage result: value = v·2^u, |v| ≤ bound,
// v a multiple of 2^grid.
type piece struct {
	v     dataflow.Value
	u     int
	bound float64
	grid  int
}

// digitVec is a tensor in digits: value = Σ_m d[m]·2^(e − b·m).
type digitVec struct {
	d []dataflow.Value
	e int
}

// compSchedule records what the host needs to read a digit program: the
// scheme and the unit exponent of every output piece, in output order.
type compSchedule struct {
	sc    *digitScheme
	units []int
}

// splitDigits splits each v (|v| ≤ 1) into constLevels balanced digits,
// v ≈ Σ_p w_p·2^(−(b−1) − b·p), |w_p| ≤ 2^(b−1); the remainder is below
// 2^(−b·constLevels).
func (sc *digitScheme) splitDigits(vals []float64) [][]float64 {
	out := make([][]float64, sc.constLevels)
	for p := range out {
		out[p] = make([]float64, len(vals))
	}
	for i, v := range vals {
		r := v
		for p := range sc.constLevels {
			e := sc.bits - 1 + sc.bits*p
			d := math.RoundToEven(math.Ldexp(r, e))
			out[p][i] = d
			r -= math.Ldexp(d, -e)
		}
	}
	return out
}

// scaleBy multiplies x by 2^a, in steps whose constants are fp16 normals.
func scaleBy(g *dataflow.Graph, x dataflow.Value, a int) dataflow.Value {
	for a != 0 {
		step := max(-14, min(15, a))
		x = g.Mul(x, g.Scalar(math.Ldexp(1, step)))
		a -= step
	}
	return x
}

// roundInt rounds t (|t| < 512) to an integer.
func roundInt(g *dataflow.Graph, t dataflow.Value) dataflow.Value {
	return g.Sub(g.Add(t, g.Scalar(magic)), g.Scalar(magic))
}

// addTo adds v into *acc (starting it if unset).
func addTo(g *dataflow.Graph, acc *dataflow.Value, v dataflow.Value) {
	if acc.Valid() {
		*acc = g.Add(*acc, v)
	} else {
		*acc = v
	}
}

// stageConv applies the stage's DFT block (times 2^−shift) to digits dv
// (each in the conv layout [1, 2f, H, W], H·W = P·Q) and returns the
// result as pieces whose sum is Σ_(p+m ≤ smax) W_p·D_m exactly.
func (sc *digitScheme) stageConv(g *dataflow.Graph, dv digitVec, s stage, idx, sign int) []piece {
	c := 2 * s.f
	wd := sc.splitDigits(dftBlock(s.f, sign))
	var out []piece
	for sum := 0; sum <= sc.smax; sum++ {
		var stack []dataflow.Value
		var ps []int
		for p := 0; p <= sum && p < sc.constLevels; p++ {
			m := sum - p
			if m >= len(dv.d) || !dv.d[m].Valid() {
				continue
			}
			stack = append(stack, dv.d[m])
			ps = append(ps, p)
		}
		if len(stack) == 0 {
			continue
		}
		u := dv.e - (sc.bits - 1) - sc.bits*sum - s.shift
		if sc.exact {
			out = append(out, sc.exactConvs(g, wd, stack, ps, c, u, fmt.Sprintf("st%d_s%d", idx, sum))...)
			continue
		}
		k := len(stack) * c
		// |S| ≤ k·digitMax·weightMax; scale the weights so the conv output
		// stays ≤ 2¹³.
		bound := float64(k * sc.digitMax() * sc.weightMax())
		_, be := math.Frexp(bound) // bound < 2^be
		sh := max(0, be-13)
		wt := make([]float64, c*k)
		for o := range c {
			for r, p := range ps {
				for i := range c {
					wt[o*k+r*c+i] = math.Ldexp(wd[p][o*c+i], -sh)
				}
			}
		}
		x4 := g.Concat(1, stack...) // [1, k, H, W]
		wv := g.Const(fmt.Sprintf("st%d_s%d", idx, sum), dataflow.Shape{c, k, 1, 1}, wt)
		hi := g.Conv2D(x4, wv, dataflow.Conv2DOptions{})
		hb := math.Ldexp(bound, -sh)
		out = append(out, piece{hi, u + sh, hb, -sh})
		if sum > sc.loMax {
			continue
		}
		wl := make([]float64, c*(k+c))
		for o := range c {
			copy(wl[o*(k+c):o*(k+c)+k], wt[o*k:(o+1)*k])
			wl[o*(k+c)+k+o] = -1
		}
		lv := g.Const(fmt.Sprintf("st%d_s%d_lo", idx, sum), dataflow.Shape{c, k + c, 1, 1}, wl)
		xl := g.Concat(1, x4, hi)
		lo := g.Conv2D(xl, lv, dataflow.Conv2DOptions{})
		out = append(out, piece{lo, u + sh, hb * 0x1p-11, -sh})
	}
	return out
}

// exactConvs adds the pairs of one limb sum (data digits stack, weight
// levels ps) on an fp16 running sum: the pairs are grouped, in order, so
// that for every output row Σ_i |w_i|·digitMax over the group's terms stays
// at most exactSum. Every product is then an integer, every partial sum in
// any order an integer of magnitude ≤ exactSum, and the conv's result is
// exact. Each group is one conv and one piece (unit 2^u, integers).
func (sc *digitScheme) exactConvs(g *dataflow.Graph, wd [][]float64, stack []dataflow.Value, ps []int, c, u int, name string) []piece {
	dm := float64(sc.digitMax())
	rowSum := func(p, o int) float64 {
		s := 0.0
		for i := range c {
			s += math.Abs(wd[p][o*c+i])
		}
		return s * dm
	}
	var out []piece
	for start := 0; start < len(ps); {
		acc := make([]float64, c)
		end := start
		for ; end < len(ps); end++ {
			ok := true
			for o := range c {
				if acc[o]+rowSum(ps[end], o) > exactSum {
					ok = false
					break
				}
			}
			if !ok && end > start {
				break
			}
			for o := range c {
				acc[o] += rowSum(ps[end], o)
			}
		}
		bound := 0.0
		for _, a := range acc {
			bound = max(bound, a)
		}
		k := (end - start) * c
		wt := make([]float64, c*k)
		for o := range c {
			for r, p := range ps[start:end] {
				copy(wt[o*k+r*c:o*k+(r+1)*c], wd[p][o*c:(o+1)*c])
			}
		}
		x := stack[start]
		if end-start > 1 {
			x = g.Concat(1, stack[start:end]...)
		}
		wv := g.Const(fmt.Sprintf("%s_g%d", name, len(out)), dataflow.Shape{c, k, 1, 1}, wt)
		out = append(out, piece{g.Conv2D(x, wv, dataflow.Conv2DOptions{}), u, bound, 0})
		start = end
	}
	return out
}

// digitize turns pieces into dataLevels digit levels with level-0 exponent
// dataExp (the pieces add up to a value below 2¹³). Level by level from
// the top, each piece gives up its part on the level's grid,
// c = round(r·2^−a), and keeps the exact remainder r − c·2^a (r and c·2^a
// are fp16 multiples of the piece's grid, and the remainder is at most
// half a step: representable). A piece enters at the first level whose
// half step it reaches, so |r·2^−a| ≤ 2^(b−1) after the first level and
// below 512 at it (the conv bound over the grid step): the rounding trick
// applies. Once the level's grid is no coarser than the piece's own, the
// part is the whole remainder, exactly, and the piece is done. The parts
// of a level, at most a few dozen of ≤ 2^(b−1) + 1, add up exactly. What
// is left after the last level, under half a step per piece, is dropped.
// Then carries move bottom-up so that every level but the top holds
// |d| ≤ 2^(b−1).
func (sc *digitScheme) digitize(g *dataflow.Graph, pieces []piece) digitVec {
	rem := make([]dataflow.Value, len(pieces))
	bnd := make([]float64, len(pieces))
	done := make([]bool, len(pieces))
	for i, p := range pieces {
		rem[i], bnd[i] = p.v, p.bound
	}
	d := make([]dataflow.Value, sc.dataLevels)
	for m := range sc.dataLevels {
		gm := sc.dataExp() - sc.bits*m
		for i, p := range pieces {
			if done[i] {
				continue
			}
			a := gm - p.u // the grid step in the piece's units is 2^a
			if a <= p.grid {
				done[i] = true
				if bnd[i] >= math.Ldexp(1, p.grid) {
					addTo(g, &d[m], scaleBy(g, rem[i], -a))
				}
				continue
			}
			if bnd[i] < math.Ldexp(1, a-1) {
				continue // the part would round to 0
			}
			c := roundInt(g, scaleBy(g, rem[i], -a))
			rem[i] = g.Sub(rem[i], scaleBy(g, c, a))
			bnd[i] = math.Ldexp(1, a-1)
			addTo(g, &d[m], c)
		}
	}
	sc.normalize(g, d)
	return digitVec{d: d, e: sc.dataExp()}
}

// normalize propagates carries from the lowest level up: every level but
// the top ends with |d| ≤ 2^(b−1). A level no term reached is the zero
// Value (zero digits, never materialized: no program multiplies by zero).
func (sc *digitScheme) normalize(g *dataflow.Graph, d []dataflow.Value) {
	for m := len(d) - 1; m >= 1; m-- {
		if !d[m].Valid() {
			continue
		}
		carry := roundInt(g, scaleBy(g, d[m], -sc.bits))
		d[m] = g.Sub(d[m], scaleBy(g, carry, sc.bits))
		addTo(g, &d[m-1], carry)
	}
}

// twiddleDigits multiplies digits dv by the twiddles after stage s:
// Y = D·(c + iσs) = D⊙[c; c] + swap(D)⊙[−σs; σs]. Each digit product
// (≤ (2^(b−1) + 1)·2^(b−1)) is exact; small products (3-bit digits) are
// added on their level as they are, larger ones (6-bit digits) split
// into 2^b·ph + pl (|pl| ≤ 2^(b−1)) whose parts go to their levels, so
// that every sum stays an integer below 2¹¹ (exact). Products of level q = m + l ≤ smax are
// kept; the result has levels q = −1 … smax, returned as m = q + 1 with
// level-0 exponent dataExp + 1.
func (sc *digitScheme) twiddleDigits(g *dataflow.Graph, dv digitVec, s stage, idx, sign int) digitVec {
	re, im := twiddle(s, sign)
	cd, sd := sc.splitDigits(re), sc.splitDigits(im)
	f, q := s.f, s.q
	acc := make([]dataflow.Value, sc.smax+2) // acc[q+1] is level q
	// With small digits the products of a level add up exactly as they
	// are: at most 2·constLevels of them, and the carries normalize brings
	// from the level below (less than an eighth of that), stay integers
	// under exactSum (3-bit digits: 2·10·20 + 50 < 2¹¹).
	prod := sc.digitMax() * sc.weightMax()
	direct := 2*sc.constLevels*prod+2*sc.constLevels*prod>>sc.bits+1 <= exactSum
	// One constant pair per twiddle level, shared by every data level.
	cs := make([][2]dataflow.Value, sc.constLevels)
	twConst := func(l int) [2]dataflow.Value {
		if cs[l][0].Valid() {
			return cs[l]
		}
		c2 := make([]float64, 2*f*q)
		s2 := make([]float64, 2*f*q)
		copy(c2, cd[l])
		copy(c2[f*q:], cd[l])
		for j := range f * q {
			s2[j] = -sd[l][j]
			s2[f*q+j] = sd[l][j]
		}
		cs[l] = [2]dataflow.Value{
			g.Const(fmt.Sprintf("tw%d_c%d", idx, l), dataflow.Shape{1, 2 * f, 1, q}, c2),
			g.Const(fmt.Sprintf("tw%d_s%d", idx, l), dataflow.Shape{1, 2 * f, 1, q}, s2),
		}
		return cs[l]
	}
	for m := 0; m < len(dv.d) && m <= sc.smax; m++ {
		if !dv.d[m].Valid() {
			continue
		}
		dm := g.Reshape(dv.d[m], dataflow.Shape{1, 2 * f, s.p, q})
		dr := g.Slice(dm, []int{0, 0, 0, 0}, []int{1, f, s.p, q})
		di := g.Slice(dm, []int{0, f, 0, 0}, []int{1, f, s.p, q})
		swap := g.Concat(1, di, dr)
		for l := 0; m+l <= sc.smax && l < sc.constLevels; l++ {
			lv := m + l
			tc := twConst(l)
			for _, prod := range []dataflow.Value{g.Mul(dm, tc[0]), g.Mul(swap, tc[1])} {
				if direct {
					addTo(g, &acc[lv+1], prod)
					continue
				}
				ph := roundInt(g, scaleBy(g, prod, -sc.bits))
				pl := g.Sub(prod, scaleBy(g, ph, sc.bits))
				addTo(g, &acc[lv], ph) // level lv − 1
				addTo(g, &acc[lv+1], pl)
			}
		}
	}
	sc.normalize(g, acc)
	return digitVec{d: acc, e: sc.dataExp() + 1}
}

// graph builds the digit program. The input holds dataLevels digit planes
// of the scaled signals, each laid out as the FP16 program's input; the
// outputs are the last stage's pieces.
func (cs *compSchedule) graph(lay *layout, sign, limit int) *dataflow.Graph {
	sc := cs.sc
	g := dataflow.New()
	st := lay.stages
	plane := 2 * lay.batch * lay.total
	x := g.Input("x", rowShape(sc.dataLevels*plane, limit))
	s0 := st[0]
	h0, w0 := spatial(s0.p*s0.q, limit)
	x5 := g.Reshape(x, dataflow.Shape{1, sc.dataLevels * 2 * s0.f, h0, w0})
	dv := digitVec{e: sc.dataExp()}
	for m := range sc.dataLevels {
		dv.d = append(dv.d, g.Slice(x5, []int{0, m * 2 * s0.f, 0, 0}, []int{1, 2 * s0.f, h0, w0}))
	}
	for i, s := range st {
		pieces := sc.stageConv(g, dv, s, i, sign)
		if i == len(st)-1 {
			cs.units = nil
			for k, p := range pieces {
				g.Output(fmt.Sprintf("y%d", k), g.Reshape(p.v, rowShape(plane, limit)))
				cs.units = append(cs.units, p.u)
			}
			break
		}
		dv = sc.digitize(g, pieces)
		if s.twiddled() {
			dv = sc.twiddleDigits(g, dv, s, i, sign)
		}
		next := st[i+1]
		for m := range dv.d {
			if dv.d[m].Valid() {
				dv.d[m] = nextStage(g, dv.d[m], s, next, limit)
			}
		}
	}
	return g
}

// putDigits writes the balanced digits of v (|v| < 2¹³ = 2^(b−1)·2^dataExp)
// on the grids 2^(dataExp − b·m) into the digit planes of buf; the
// remainder is below 2^(dataExp − b·dataLevels).
func (sc *digitScheme) putDigits(buf []uint16, plane, at int, v float64) {
	for m := range sc.dataLevels {
		ex := sc.dataExp() - sc.bits*m
		d := math.RoundToEven(math.Ldexp(v, -ex))
		buf[m*plane+at] = uint16(fp16.FromFloat64(d)) // a small integer, exact
		v -= math.Ldexp(d, ex)
	}
}
