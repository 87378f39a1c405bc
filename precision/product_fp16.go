package precision

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/dense"
	"github.com/anemone-go/anemone/internal/parallel"
	"github.com/anemone-go/anemone/shim"
	"gonum.org/v1/gonum/mat"
)

// The FP16 product's host passes, written for speed: they encode straight
// from the operands into the session's surfaces and decode straight into
// the result, transposing by tiles, every core taking a range. They give
// the same bits as the general passes (setA and apply), which remain for
// the compensated modes and produce every error message.

// hostPartMin is the least work, in elements, worth a core.
const hostPartMin = 1 << 15

// tile is the side of the transposes' square tiles.
const tile = 64

// setAFP16 is setA in FP16 mode: every row of A scaled into [1, 2) by its
// power of two (Pow2Scale) and encoded into each contraction chunk's input.
func (p *product) setAFP16(fn string, a mat.Matrix) error {
	m, k := p.m, p.k
	rows := dense.Rows(a)
	exps := make([]int, m)
	k1 := parallel.Parts(m, m*k, hostPartMin)
	errs := make([]error, k1)
	parallel.Ranges(m, k1, func(part, lo, hi int) {
		for i := lo; i < hi; i++ {
			e, err := Pow2Scale(rows[i])
			if err != nil {
				errs[part] = fmt.Errorf("precision: %s: row %d of A: %w", fn, i, err)
				return
			}
			exps[i] = e
		}
	})
	if err := firstError(errs); err != nil {
		return err
	}
	for c, ks := range p.kch {
		h, err := p.ses.InputRows(fmt.Sprintf("a_k%d", c))
		if err != nil {
			return fmt.Errorf("precision: %s: A: %w", fn, err)
		}
		parallel.Ranges(m, k1, func(part, lo, hi int) {
			for i := lo; i < hi; i++ {
				if j := fp16.EncodeScaled(h.Row(i), rows[i][ks.off:ks.off+ks.len], exps[i]); j >= 0 && errs[part] == nil {
					errs[part] = fmt.Errorf("precision: %s: A[%d][%d]·2^%d is beyond fp16's range: %w", fn, i, ks.off+j, exps[i], ErrRange)
				}
			}
		})
		if err := firstError(errs); err != nil {
			return err
		}
	}
	p.rowExp = exps
	p.aSet = true
	return nil
}

// columnExps returns the Pow2Scale exponent of every column of x (k×n,
// row-major), or ok false when x holds NaN or ±Inf (the general pass then
// names the first).
func columnExps(x []float64, k, n int) (exps []int, ok bool) {
	colMax := make([]float64, n)
	parts := parallel.Parts(n, k*n, hostPartMin)
	bad := make([]bool, parts)
	parallel.Ranges(n, parts, func(part, lo, hi int) {
		mx := colMax[lo:hi]
		for i := range k {
			for j, v := range x[i*n+lo : i*n+hi] {
				if v-v != 0 { // NaN or ±Inf
					bad[part] = true
					return
				}
				if a := math.Abs(v); a > mx[j] {
					mx[j] = a
				}
			}
		}
	})
	for _, b := range bad {
		if b {
			return nil, false
		}
	}
	exps = make([]int, n)
	for j, m := range colMax {
		if m > 0 {
			exps[j] = binadeShift(m, Pow2Target)
		}
	}
	return exps, true
}

// writeXFP16 encodes column j of x, times 2^exps[j], as row j of each
// chunk's input, transposing by tiles.
func (p *product) writeXFP16(fn string, x []float64, exps []int) error {
	k, n := p.k, p.n
	parts := parallel.Parts(n, k*n, hostPartMin)
	errs := make([]error, parts)
	for c, ks := range p.kch {
		h, err := p.ses.InputRows(fmt.Sprintf("x_k%d", c))
		if err != nil {
			return fmt.Errorf("precision: %s: %w", fn, err)
		}
		parallel.Ranges(n, parts, func(part, lo, hi int) {
			buf := make([]float64, tile*tile)
			for j0 := lo; j0 < hi; j0 += tile {
				j1 := min(j0+tile, hi)
				for t0 := 0; t0 < ks.len; t0 += tile {
					t1 := min(t0+tile, ks.len)
					for t := t0; t < t1; t++ {
						row := x[(ks.off+t)*n+j0 : (ks.off+t)*n+j1]
						for jj, v := range row {
							buf[jj*tile+t-t0] = v
						}
					}
					for j := j0; j < j1; j++ {
						src := buf[(j-j0)*tile : (j-j0)*tile+t1-t0]
						if i := fp16.EncodeScaled(h.Row(j)[t0:t1], src, exps[j]); i >= 0 && errs[part] == nil {
							errs[part] = fmt.Errorf("precision: %s: x[%d][%d]·2^%d is beyond fp16's range: %w", fn, ks.off+t0+i, j, exps[j], ErrRange)
						}
					}
				}
			}
		})
		if err := firstError(errs); err != nil {
			return err
		}
	}
	return nil
}

// readYFP16 sums the chunks' outputs (row j of each is column j of Y) into
// dst (m×n, row-major), unscaled by 2^−(rowExp_i + colExp_j), as the
// general pass does, and returns the first entry beyond float64's range
// (−1 if none). ok is false when an output holds ±Inf or NaN: the general
// pass then reads it and reports the overflow.
func (p *product) readYFP16(dst []float64, colExp []int) (over int, ok bool) {
	m, n := p.m, p.n
	ys := make([]shim.HalfRows, len(p.outNames))
	for o, name := range p.outNames {
		h, err := p.ses.OutputRows(name)
		if err != nil {
			return -1, false
		}
		ys[o] = h
	}
	parts := parallel.Parts(n, m*n, hostPartMin)
	finite := make([]bool, parts)
	parallel.Ranges(n, parts, func(part, lo, hi int) {
		for _, h := range ys {
			for j := lo; j < hi; j++ {
				if fp16.Finite(h.Row(j)) >= 0 {
					return
				}
			}
		}
		finite[part] = true
	})
	for _, f := range finite {
		if !f {
			return -1, false
		}
	}
	parts = parallel.Parts(m, m*n, hostPartMin)
	overs := make([]int, parts)
	parallel.Ranges(m, parts, func(part, lo, hi int) {
		first := -1
		acc := make([]float64, tile)
		for i0 := lo; i0 < hi; i0 += tile {
			i1 := min(i0+tile, hi)
			for j := range n {
				a := acc[:i1-i0]
				clear(a)
				for _, h := range ys {
					for ii, b := range h.Row(j)[i0:i1] {
						a[ii] += fp16.DecodeTimes(b, 0x1p112)
					}
				}
				for ii, v := range a {
					i := i0 + ii
					e := -(p.rowExp[i] + colExp[j])
					var y float64
					if e > -1000 && e < 1000 {
						y = v * math.Float64frombits(uint64(e+1023)<<52)
					} else {
						y = math.Ldexp(v, e)
					}
					dst[i*n+j] = y
					if math.IsInf(y, 0) && (first < 0 || i*n+j < first) {
						first = i*n + j
					}
				}
			}
		}
		overs[part] = first
	})
	over = -1
	for _, o := range overs {
		if o >= 0 {
			over = o
			break
		}
	}
	return over, true
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
