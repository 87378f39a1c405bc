package sim

// directMaxTaps is the largest kernel (C_in/groups·KH·KW taps) the direct
// conv handles; larger ones go through im2col and the gemm kernels.
const directMaxTaps = 32

// directConv computes the conv output row by row: for an output row it
// walks the taps in the model's order (input channel, kernel row, kernel
// column) and adds each tap's rounded products to the whole row of running
// sums at once, so every output still sums its products in order, while
// the loop over a row has no dependence between iterations. It runs only
// when wmax·xmax < overflowBound (see matvec.go): zero weights and padding
// positions are then skipped. split says every nonzero product is normal.
func directConv(g *convGeom, x, w, bias, out []float32, split, narrow bool) {
	cig, cog := g.ci/g.groups, g.co/g.groups
	taps := g.kh * g.kw
	rowsPerTask := max(1, mvGrain/max(1, g.ow*cig*taps))
	nrows := g.n * g.co * g.oh
	body := func(t int) {
		for q := t * rowsPerTask; q < min(nrows, (t+1)*rowsPerTask); q++ {
			img, rest := q/(g.co*g.oh), q%(g.co*g.oh)
			co, oh := rest/g.oh, rest%g.oh
			acc := out[q*g.ow : (q+1)*g.ow]
			clear(acc)
			grp := co / cog
			wrow := w[co*cig*taps : (co+1)*cig*taps]
			for ci := range cig {
				plane := x[(img*g.ci+grp*cig+ci)*g.h*g.w:][:g.h*g.w]
				for r := range g.kh {
					ih := oh*g.sh + r*g.dh - g.pt
					if ih < 0 || ih >= g.h {
						continue
					}
					line := plane[ih*g.w : (ih+1)*g.w]
					for s := range g.kw {
						wv := wrow[(ci*g.kh+r)*g.kw+s]
						if wv == 0 {
							continue
						}
						// Output columns whose input column ow·sw + off lies in the line.
						off := s*g.dw - g.pl
						lo := 0
						if off < 0 {
							lo = (-off + g.sw - 1) / g.sw
						}
						hi := min(g.ow, (g.w-1-off)/g.sw+1)
						if g.w-1-off < 0 || lo >= hi {
							continue
						}
						if g.sw == 1 {
							tapRow(acc[lo:hi], line[lo+off:hi+off], wv, split, narrow)
						} else {
							tapRowStrided(acc[lo:hi], line[lo*g.sw+off:], g.sw, wv, narrow)
						}
					}
				}
			}
			for i, v := range acc {
				acc[i] = mmRound(v)
			}
			if bias != nil {
				bv := bias[co]
				for i, v := range acc {
					acc[i] = mmRound(v + bv)
				}
			}
		}
	}
	tasks := (nrows + rowsPerTask - 1) / rowsPerTask
	if nrows*g.ow*cig*taps < 2*mvGrain {
		for t := range tasks {
			body(t)
		}
		return
	}
	parallel(tasks, func(_, t int) { body(t) })
}

// tapRow adds the rounded products w·x[i] to the running sums acc[i].
func tapRow(acc, x []float32, w float32, split, narrow bool) {
	x = x[:len(acc)]
	switch {
	case narrow:
		for i, v := range x {
			acc[i] = r16(acc[i] + roundSum(float32(w*v)))
		}
	case split:
		for i, v := range x {
			p := float32(w * v)
			t := float32(p * 8193)
			acc[i] += t - float32(t-p)
		}
	default:
		for i, v := range x {
			acc[i] += roundSum(float32(w * v))
		}
	}
}

// tapRowStrided is tapRow reading x[i·stride].
func tapRowStrided(acc, x []float32, stride int, w float32, narrow bool) {
	for i := range acc {
		p := roundSum(float32(w * x[i*stride]))
		if narrow {
			acc[i] = r16(acc[i] + p)
		} else {
			acc[i] += p
		}
	}
}

// convWeights are a conv weight's bounds: computed once for a const
// weight, on every run otherwise.
type convWeights struct {
	hi, lo float64
	rows   []*mvRows // per group, for the matrix-vector path; const only
}

// fastConv runs the conv on a fast path when one applies and reports
// whether it did.
func fastConv(g *convGeom, x, w, bias, out []float32, cw *convWeights, narrow bool) bool {
	xin := x[:g.n*g.ci*g.h*g.w]
	cig, cog := g.ci/g.groups, g.co/g.groups
	if g.kh == 1 && g.kw == 1 && g.h == 1 && g.w == 1 && g.oh == 1 && g.ow == 1 {
		// A matrix-vector product per image and group.
		for img := range g.n {
			for grp := range g.groups {
				xv := xin[img*g.ci+grp*cig : img*g.ci+(grp+1)*cig]
				var xhi, xlo float64
				var rows *mvRows
				if cw != nil {
					rows = cw.rows[grp]
					xhi, xlo = hiLo(xv)
				} else { // a weight that varies: the checked kernels
					rows = &mvRows{}
					rows.useRows(w[grp*cog*cig:], cog, cig, cig)
				}
				dst := out[img*g.co+grp*cog : img*g.co+(grp+1)*cog]
				matvec(rows, xv, xhi, xlo, dst, 1, narrow)
				if bias != nil {
					for i, v := range dst {
						dst[i] = mmRound(v + bias[grp*cog+i])
					}
				}
			}
		}
		return true
	}
	if cig*g.kh*g.kw > directMaxTaps {
		return false
	}
	var whi, wlo float64
	if cw != nil {
		whi, wlo = cw.hi, cw.lo
	} else {
		whi, wlo = hiLo(w[:g.co*cig*g.kh*g.kw])
	}
	xhi, xlo := hiLo(xin)
	if !(whi*xhi < overflowBound) {
		return false
	}
	directConv(g, xin, w, bias, out, wlo*xlo >= minNormal, narrow)
	return true
}

// prepareConvWeights computes a const weight's bounds and matrix rows.
func prepareConvWeights(g *convGeom, w []float32) *convWeights {
	cig, cog := g.ci/g.groups, g.co/g.groups
	cw := &convWeights{}
	cw.hi, cw.lo = hiLo(w)
	if g.kh == 1 && g.kw == 1 {
		for grp := range g.groups {
			cw.rows = append(cw.rows, constRows(w[grp*cog*cig:], cog, cig, cig))
		}
	}
	return cw
}
