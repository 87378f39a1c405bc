package fft

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
)

// Compensated mode works on fixed-point digits (see the package
// documentation, "Compensated mode"). A tensor of values v is held as
// levels of integer digits, v = Σ_m d_m·2^(e − compBits·m), |d_m| ≤ 33, so
// that every product with a weight digit (|w| ≤ 32) is an integer of at most
// 1056 < 2¹¹: exact in fp16. Every sum of such products in one conv is an
// integer of fewer than 2²² units (at most 6 pairs × 128 terms × 1056 <
// 2^19.6 for 64-point blocks): exact in the wide (float32) accumulator,
// and exactly hi + lo with hi its fp16 rounding and lo the fp16 result of a
// second conv that appends −hi to the contraction (precision's lo pass).
//
// The digit grids are fixed per stage by the stage's worst-case bound 2¹³
// (a constant input puts all of it in one output), while an impulse spreads
// evenly and sits Π f below it after the stages so far (2⁻¹¹ after two
// stages of 65536 = 64·32·32): its significant digits start at level 2, so
// the limb sums s ≤ 3 need their lo pass, and the data carries 36 bits.
const (
	compBits   = 6 // digit width b
	compLevels = 5 // digit levels of the constants (DFT blocks, twiddles): 30 bits
	dataLevels = 6 // digit levels of the data: 36 bits
	compSmax   = 5 // pairs (p, m) of weight and data levels with p + m ≤ compSmax
	compLoMax  = 3 // limb sums s ≤ compLoMax get a lo pass
	// digitMax bounds every data digit, weightMax every weight digit.
	digitMax  = 33
	weightMax = 32
	// magic: for |t| < 512, (t + 1536) − 1536 is t rounded to an integer
	// (ties to even) in fp16 arithmetic: t + 1536 lies in [1024, 2048), where
	// fp16's spacing is 1, and the subtraction is exact.
	magic = 1536
	// dataExp is the level-0 exponent of a stage's input and output digits:
	// every stage output is below stageBound = 2¹³ = 32·2⁸.
	dataExp = 8
)

// piece is one fp16 tensor of a stage result: value = v·2^u, |v| ≤ bound.
type piece struct {
	v     dataflow.Value
	u     int
	bound float64
}

// digitVec is a tensor in digits: value = Σ_m d[m]·2^(e − compBits·m).
type digitVec struct {
	d []dataflow.Value
	e int
}

// compSchedule records what the host needs to read a Compensated program:
// the unit exponent of every output piece, in output order.
type compSchedule struct {
	units []int
}

// splitDigits splits each v (|v| ≤ 1) into compLevels balanced digits,
// v ≈ Σ_p w_p·2^(−(compBits−1) − compBits·p), |w_p| ≤ 32; the remainder is
// below 2^−31.
func splitDigits(vals []float64) [][]float64 {
	out := make([][]float64, compLevels)
	for p := range out {
		out[p] = make([]float64, len(vals))
	}
	for i, v := range vals {
		r := v
		for p := range compLevels {
			e := compBits - 1 + compBits*p
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
// (each in the conv layout [1, 2f, H, W], H·W = P·Q) and returns the result as pieces: for every limb sum
// s ≤ compSmax the fp16 rounding hi_s of S_s = Σ_(p+m=s) W_p·D_m, and for
// s ≤ compLoMax also lo_s = S_s − hi_s.
func stageConv(g *dataflow.Graph, dv digitVec, s stage, idx, sign int) []piece {
	c := 2 * s.f
	wd := splitDigits(dftBlock(s.f, sign))
	var out []piece
	for sum := 0; sum <= compSmax; sum++ {
		var stack []dataflow.Value
		var ps []int
		for p := 0; p <= sum && p < compLevels; p++ {
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
		k := len(stack) * c
		// |S| ≤ k·33·32; scale the weights so the conv output stays ≤ 2¹³.
		bound := float64(k * digitMax * weightMax)
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
		u := dv.e - (compBits - 1) - compBits*sum + sh - s.shift
		hb := math.Ldexp(bound, -sh)
		out = append(out, piece{hi, u, hb})
		if sum > compLoMax {
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
		out = append(out, piece{lo, u, hb * 0x1p-11})
	}
	return out
}

// digitize turns pieces into dataLevels digit levels with level-0 exponent
// dataExp (the pieces add up to a value below 2¹³ = 32·2⁸). Level by level
// from the top, each piece gives up its part on the level's grid,
// c = round(r·2^−a), and keeps the exact remainder r − c·2^a (r and c·2^a
// are fp16 multiples of the piece's grid 2^−sh, and the remainder is at most
// half a step: representable). A piece enters at the first level whose
// half step it reaches, so |r·2^−a| ≤ 32.5 after the first level and below
// 512 at it (the conv bound over the grid step): the rounding trick
// applies. The parts of a level, at most 10 of ≤ 33, add up exactly. What
// is left after the last level, under half a step per piece, is dropped:
// at most 10·2^(8−30−1) = 2^−19.7 against values up to 2¹³. Then carries
// move bottom-up so that every level but the top holds |d| ≤ 32.
func digitize(g *dataflow.Graph, pieces []piece) digitVec {
	rem := make([]dataflow.Value, len(pieces))
	bnd := make([]float64, len(pieces))
	for i, p := range pieces {
		rem[i], bnd[i] = p.v, p.bound
	}
	d := make([]dataflow.Value, dataLevels)
	for m := range dataLevels {
		gm := dataExp - compBits*m
		for i, p := range pieces {
			a := gm - p.u // the grid step in the piece's units is 2^a
			if bnd[i] < math.Ldexp(1, a-1) {
				continue // the part would round to 0
			}
			c := roundInt(g, scaleBy(g, rem[i], -a))
			rem[i] = g.Sub(rem[i], scaleBy(g, c, a))
			bnd[i] = math.Ldexp(1, a-1)
			addTo(g, &d[m], c)
		}
	}
	normalize(g, d)
	return digitVec{d: d, e: dataExp}
}

// normalize propagates carries from the lowest level up: every level but
// the top ends with |d| ≤ 32. A level no term reached is the zero Value
// (zero digits, never materialized: no program multiplies by zero).
func normalize(g *dataflow.Graph, d []dataflow.Value) {
	for m := len(d) - 1; m >= 1; m-- {
		if !d[m].Valid() {
			continue
		}
		carry := roundInt(g, scaleBy(g, d[m], -compBits))
		d[m] = g.Sub(d[m], scaleBy(g, carry, compBits))
		addTo(g, &d[m-1], carry)
	}
}

// twiddleDigits multiplies digits dv by the twiddles after stage s:
// Y = D·(c + iσs) = D⊙[c; c] + swap(D)⊙[−σs; σs]. Each digit product
// (≤ 33·32 = 1056) is exact; it is split into 64·ph + pl (|pl| ≤ 32,
// |ph| ≤ 17) and the parts go to their levels, where every sum stays an
// integer below 2¹¹ (exact). Products of level q = m + l ≤ compSmax are
// kept; the result has levels q = −1 … compSmax, returned as m = q + 1 with
// level-0 exponent dataExp + 1.
func twiddleDigits(g *dataflow.Graph, dv digitVec, s stage, idx, sign int) digitVec {
	re, im := twiddle(s, sign)
	cd, sd := splitDigits(re), splitDigits(im)
	f, q := s.f, s.q
	acc := make([]dataflow.Value, compSmax+2) // acc[q+1] is level q
	// One constant pair per twiddle level, shared by every data level.
	cs := make([][2]dataflow.Value, compLevels)
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
	for m := 0; m < len(dv.d) && m <= compSmax; m++ {
		if !dv.d[m].Valid() {
			continue
		}
		dm := g.Reshape(dv.d[m], dataflow.Shape{1, 2 * f, s.p, q})
		dr := g.Slice(dm, []int{0, 0, 0, 0}, []int{1, f, s.p, q})
		di := g.Slice(dm, []int{0, f, 0, 0}, []int{1, f, s.p, q})
		swap := g.Concat(1, di, dr)
		for l := 0; m+l <= compSmax && l < compLevels; l++ {
			lv := m + l
			tc := twConst(l)
			for _, prod := range []dataflow.Value{g.Mul(dm, tc[0]), g.Mul(swap, tc[1])} {
				ph := roundInt(g, scaleBy(g, prod, -compBits))
				pl := g.Sub(prod, scaleBy(g, ph, compBits))
				addTo(g, &acc[lv], ph) // level lv − 1
				addTo(g, &acc[lv+1], pl)
			}
		}
	}
	normalize(g, acc)
	return digitVec{d: acc, e: dataExp + 1}
}

// graph builds the Compensated program. The input holds compLevels digit
// planes of the scaled signals, each laid out as the FP16 program's input;
// the outputs are the last stage's pieces.
func (cs *compSchedule) graph(lay *layout, sign, limit int) *dataflow.Graph {
	g := dataflow.New()
	st := lay.stages
	plane := 2 * lay.batch * lay.total
	x := g.Input("x", rowShape(dataLevels*plane, limit))
	s0 := st[0]
	h0, w0 := spatial(s0.p*s0.q, limit)
	x5 := g.Reshape(x, dataflow.Shape{1, dataLevels * 2 * s0.f, h0, w0})
	dv := digitVec{e: dataExp}
	for m := range dataLevels {
		dv.d = append(dv.d, g.Slice(x5, []int{0, m * 2 * s0.f, 0, 0}, []int{1, 2 * s0.f, h0, w0}))
	}
	for i, s := range st {
		pieces := stageConv(g, dv, s, i, sign)
		if i == len(st)-1 {
			cs.units = nil
			for k, p := range pieces {
				g.Output(fmt.Sprintf("y%d", k), g.Reshape(p.v, rowShape(plane, limit)))
				cs.units = append(cs.units, p.u)
			}
			break
		}
		dv = digitize(g, pieces)
		if s.twiddled() {
			dv = twiddleDigits(g, dv, s, i, sign)
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

// putDigits writes the balanced digits of v (|v| < 2¹³ = 32·2^dataExp) on
// the grids 2^(dataExp − 6m) into the digit planes of buf; the remainder is
// below 2^(dataExp − 36) = 2⁻²⁸.
func putDigits(buf []float32, plane, at int, v float64) {
	for m := range dataLevels {
		ex := dataExp - compBits*m
		d := math.RoundToEven(math.Ldexp(v, -ex))
		buf[m*plane+at] = float32(d)
		v -= math.Ldexp(d, ex)
	}
}
