package sim

import (
	"slices"
)

func buildMatmul(c *compiler, a *args) (built, error) {
	x, y := a.data("x"), a.data("y")
	if len(x.shape) < 2 || len(y.shape) < 2 {
		return built{}, unsupportedf(a.op.Pos, "matmul: operands of rank %d and %d: rank-1 (and rank-0) operands fail on the runtime; reshape to [1, K] or [K, 1]", len(x.shape), len(y.shape))
	}
	tx, ty := a.bool("transpose_x", false), a.bool("transpose_y", false)
	rx, ry := len(x.shape), len(y.shape)
	m, kx := x.shape[rx-2], x.shape[rx-1]
	if tx {
		m, kx = kx, m
	}
	ky, n := y.shape[ry-2], y.shape[ry-1]
	if ty {
		ky, n = n, ky
	}
	if kx != ky {
		return built{}, a.errorf("contraction dimensions differ: x %s (transpose_x %v) and y %s (transpose_y %v)", shapeString(x.shape), tx, shapeString(y.shape), ty)
	}
	k := kx
	if k > c.t.MaxSpatial {
		return built{}, unsupportedf(a.op.Pos, "matmul: contraction of length %d exceeds the target's limit of %d", k, c.t.MaxSpatial)
	}
	bx, by := x.shape[:rx-2], y.shape[:ry-2]
	batch, ok := broadcastShapes(bx, by)
	if !ok {
		return built{}, a.errorf("batch dimensions %s and %s do not broadcast", shapeString(bx), shapeString(by))
	}
	shape := append(slices.Clone(batch), m, n)
	xst, yst := broadcastStrides(bx, batch), broadcastStrides(by, batch)
	for i := range xst {
		xst[i] *= m * k
		yst[i] *= k * n
	}
	xoffs, yoffs := offsetsOver(batch, xst), offsetsOver(batch, yst)
	xs, ys := x.slot, y.slot
	rules := rulesOf(c.t)
	if rules.changesSums() {
		return built{shape: shape, cliff: matmulCliff, run: familyMatmul(rules, m, n, k, tx, ty, xs, ys, xoffs, yoffs)}, nil
	}
	if !c.reference && (m <= mvGroup || n <= mvGroup) {
		return built{shape: shape, cliff: matmulCliff, run: innerRule(rules, k, smallMatmul(m, n, k, tx, ty, xs, ys, xoffs, yoffs))}, nil
	}
	return built{shape: shape, cliff: matmulCliff, run: innerRule(rules, k, func(b [][]float32, out []float32, narrow bool) {
		X, Y := b[xs], b[ys]
		// A is m×k and B is n×k, row-major: transpose an operand when its
		// layout differs; broadcast batches share one packing.
		as, bs := map[int]operand{}, map[int]operand{}
		var aops, bops []operand
		for i := range xoffs {
			if _, ok := as[xoffs[i]]; !ok {
				d := X[xoffs[i] : xoffs[i]+m*k]
				if tx {
					d = transposed(d, k, m)
				}
				as[xoffs[i]] = newOperand(m, k, d, k)
				aops = append(aops, as[xoffs[i]])
			}
			if _, ok := bs[yoffs[i]]; !ok {
				d := Y[yoffs[i] : yoffs[i]+k*n]
				if !ty {
					d = transposed(d, k, n)
				}
				bs[yoffs[i]] = newOperand(n, k, d, k)
				bops = append(bops, bs[yoffs[i]])
			}
		}
		ta, tb := smallThresholds(maxHi(aops...), maxHi(bops...))
		for _, o := range aops {
			o.markSmall(k, ta)
		}
		for _, o := range bops {
			o.markSmall(k, tb)
		}
		jobs := make([]gemmJob, len(xoffs))
		for i := range xoffs {
			jobs[i] = gemmJob{m: m, n: n, k: k, a: as[xoffs[i]], b: bs[yoffs[i]], c: out[i*m*n : (i+1)*m*n], ldc: n}
		}
		runGemms(jobs, narrow)
	})}, nil
}

// smallMatmul is the kernel of a matmul with at most mvGroup rows on one
// side: a matrix-vector product of the other side's rows with each of them.
// Its buffers are reused from run to run (runs are serialized).
func smallMatmul(m, n, k int, tx, ty bool, xs, ys int, xoffs, yoffs []int) kernel {
	var bufA, bufB []float32
	var rows mvRows
	return func(b [][]float32, out []float32, narrow bool) {
		X, Y := b[xs], b[ys]
		for bi := range xoffs {
			// A is m×k and B is n×k, row-major (B holds y transposed); a
			// transpose with a dimension of 1 is the same data.
			A := X[xoffs[bi] : xoffs[bi]+m*k]
			if tx && m > 1 {
				A = transposeInto(&bufA, A, k, m)
			}
			B := Y[yoffs[bi] : yoffs[bi]+k*n]
			if !ty && n > 1 {
				B = transposeInto(&bufB, B, k, n)
			}
			C := out[bi*m*n : (bi+1)*m*n]
			if m == 2 && n == 2 && !narrow {
				var c [4]float32
				dot2x2Checked(A[:k], A[k:2*k], B[:k], B[k:2*k], &c)
				copy(C, c[:])
				continue
			}
			// Both sides vary from run to run: the checked kernels bound
			// the products as they go.
			if m <= n {
				rows.useRows(B, n, k, k)
				for i := range m {
					matvec(&rows, A[i*k:(i+1)*k], 0, 0, C[i*n:], 1, narrow)
				}
				continue
			}
			rows.useRows(A, m, k, k)
			for j := range n {
				matvec(&rows, B[j*k:(j+1)*k], 0, 0, C[j:], n, narrow)
			}
		}
	}
}

// transposeInto writes the cols×rows transpose of the rows×cols matrix src
// into *buf, grown as needed, and returns it.
func transposeInto(buf *[]float32, src []float32, rows, cols int) []float32 {
	if cap(*buf) < rows*cols {
		*buf = make([]float32, rows*cols)
	}
	dst := (*buf)[:rows*cols]
	for r := range rows {
		for c, v := range src[r*cols : (r+1)*cols] {
			dst[c*rows+r] = v
		}
	}
	return dst
}

// transposed returns the cols×rows transpose of the rows×cols matrix src,
// in blocks of 32×32 spread over the cores.
func transposed(src []float32, rows, cols int) []float32 {
	dst := make([]float32, rows*cols)
	const blk = 32
	rb := (rows + blk - 1) / blk
	forRows(rb, blk*cols, func(b int) {
		r0 := b * blk
		for c0 := 0; c0 < cols; c0 += blk {
			for r := r0; r < min(r0+blk, rows); r++ {
				row := src[r*cols : (r+1)*cols]
				for c := c0; c < min(c0+blk, cols); c++ {
					dst[c*rows+r] = row[c]
				}
			}
		}
	})
	return dst
}

// convGeom is a 2-D conv's geometry.
type convGeom struct {
	n, ci, h, w    int // input
	co, kh, kw     int // weight [co, ci/groups, kh, kw]
	sh, sw, dh, dw int // strides, dilations
	pt, pl         int // padding before (top, left)
	oh, ow         int // output spatial size
	groups         int
}

func buildConv(c *compiler, a *args) (built, error) {
	x, w := a.data("x"), a.data("weight")
	if len(x.shape) != 4 {
		return built{}, unsupportedf(a.op.Pos, "conv: x has shape %s; only 2-D conv on [N, C, H, W] is supported", shapeString(x.shape))
	}
	if len(w.shape) != 4 {
		return built{}, a.errorf("weight has shape %s, want [C_out, C_in/groups, KH, KW]", shapeString(w.shape))
	}
	g := convGeom{n: x.shape[0], ci: x.shape[1], h: x.shape[2], w: x.shape[3], co: w.shape[0], kh: w.shape[2], kw: w.shape[3]}
	g.groups = a.int("groups", 1)
	if g.groups < 1 || g.ci%g.groups != 0 || g.co%g.groups != 0 {
		return built{}, a.errorf("groups %d must divide C_in %d and C_out %d", g.groups, g.ci, g.co)
	}
	if w.shape[1] != g.ci/g.groups {
		return built{}, a.errorf("weight %s has %d input channels per group, want C_in/groups = %d", shapeString(w.shape), w.shape[1], g.ci/g.groups)
	}
	if g.kh > c.t.MaxKernel || g.kw > c.t.MaxKernel {
		return built{}, unsupportedf(a.op.Pos, "conv: kernel %d×%d exceeds the target's kernel limit of %d", g.kh, g.kw, c.t.MaxKernel)
	}
	pair := func(name string) (int, int, error) {
		v := a.ints(name)
		if v == nil {
			return 1, 1, nil
		}
		if len(v) != 2 || v[0] < 1 || v[1] < 1 {
			return 0, 0, a.errorf("%s must be two positive integers, got %v", name, v)
		}
		return v[0], v[1], nil
	}
	var err error
	if g.sh, g.sw, err = pair("strides"); err != nil {
		return built{}, err
	}
	if g.dh, g.dw, err = pair("dilations"); err != nil {
		return built{}, err
	}
	if (g.dh > 1 || g.dw > 1) && !w.isConst {
		return built{}, unsupportedf(a.op.Pos, "conv: dilations %d×%d need a const weight", g.dh, g.dw)
	}
	ekh, ekw := (g.kh-1)*g.dh+1, (g.kw-1)*g.dw+1
	var pb, pr int
	switch pt := a.str("pad_type", "valid"); pt {
	case "valid":
	case "custom":
		p := a.ints("pad")
		if p == nil {
			p = []int{0, 0, 0, 0}
		}
		if len(p) != 4 || slices.Min(p) < 0 {
			return built{}, a.errorf("pad must be four non-negative integers [top, bottom, left, right], got %v", p)
		}
		g.pt, pb, g.pl, pr = p[0], p[1], p[2], p[3]
	case "same":
		// Total padding as MIL's conv defines it; the odd element goes at the end.
		same := func(in, s, ek int) (int, int) {
			t := max(0, s*((in+s-1)/s)-in+ek-s)
			return t / 2, t - t/2
		}
		g.pt, pb = same(g.h, g.sh, ekh)
		g.pl, pr = same(g.w, g.sw, ekw)
	case "same_lower":
		return built{}, unsupportedf(a.op.Pos, "conv: pad_type same_lower is not supported (use custom)")
	default:
		return built{}, a.errorf("pad_type %q is not one of valid, same, custom", pt)
	}
	if a.has("pad") && a.str("pad_type", "valid") != "custom" {
		// MIL reads pad only for custom padding; an ignored pad that is not
		// all zeros is a mistake in the program.
		if slices.ContainsFunc(a.ints("pad"), func(v int) bool { return v != 0 }) {
			return built{}, a.errorf("pad %v is given but pad_type is not custom", a.ints("pad"))
		}
	}
	g.oh = (g.h+g.pt+pb-ekh)/g.sh + 1
	g.ow = (g.w+g.pl+pr-ekw)/g.sw + 1
	if g.h+g.pt+pb < ekh || g.w+g.pl+pr < ekw {
		return built{}, a.errorf("kernel extent %d×%d exceeds the padded input %d×%d", ekh, ekw, g.h+g.pt+pb, g.w+g.pl+pr)
	}
	bias := a.data("bias")
	if bias != nil && !equalShapes(bias.shape, []int{g.co}) {
		return built{}, a.errorf("bias has shape %s, want [%d]", shapeString(bias.shape), g.co)
	}
	shape := []int{g.n, g.co, g.oh, g.ow}
	xs, ws, bs := x.slot, w.slot, -1
	if bias != nil {
		bs = bias.slot
	}
	var cw *convWeights
	if w.isConst && !c.reference {
		if cw = w.convPrep[g.groups]; cw == nil {
			cw = prepareConvWeights(&g, w.halfs)
			if w.convPrep == nil {
				w.convPrep = map[int]*convWeights{}
			}
			w.convPrep[g.groups] = cw
		}
	}
	reference := c.reference
	rules := rulesOf(c.t)
	return built{shape: shape, cliff: matmulCliff, run: func(b [][]float32, out []float32, narrow bool) {
		var bv []float32
		if bs >= 0 {
			bv = b[bs]
		}
		if rules.changesSums() {
			familyConv(rules, &g, b[xs], b[ws], bv, out)
			return
		}
		if !reference && fastConv(&g, b[xs], b[ws], bv, out, cw, narrow) {
			return
		}
		runConv(&g, b[xs], b[ws], bv, out, narrow)
	}}, nil
}

// convCoRows is the number of output channels per conv task.
const convCoRows = 64

// runConv computes the conv as, per image and group, the product of the
// weight rows [C_out/G, C_in/G·KH·KW] with im2col patch rows of the same
// length (ordered ci, kh, kw), in tasks of output channels × positions.
func runConv(g *convGeom, x, w, bias, out []float32, narrow bool) {
	cig, cog := g.ci/g.groups, g.co/g.groups
	kc := cig * g.kh * g.kw
	npos := g.oh * g.ow
	wo := newOperand(g.co, kc, w, kc)
	tw, tp := smallThresholds(maxHi(wo), maxAbs(x[:g.n*g.ci*g.h*g.w]))
	wo.markSmall(kc, tw)
	pc := min(npos, max(2, (panelBytes/(4*kc))&^1))
	posTiles := (npos + pc - 1) / pc
	coTiles := (cog + convCoRows - 1) / convCoRows
	perImage := g.groups * posTiles * coTiles
	patches := make([][]float32, workers(g.n*perImage))
	flags := make([][]int32, len(patches))
	parallel(g.n*perImage, func(worker, t int) {
		img, t := t/perImage, t%perImage
		grp, t := t/(posTiles*coTiles), t%(posTiles*coTiles)
		pt, ct := t/coTiles, t%coTiles
		p0, np := pt*pc, min(pc, npos-pt*pc)
		c0, nc := grp*cog+ct*convCoRows, min(convCoRows, cog-ct*convCoRows)
		if patches[worker] == nil {
			patches[worker] = make([]float32, pc*kc)
		}
		patch := patches[worker][:np*kc]
		im2col(g, x, img, grp*cig, cig, p0, np, patch)
		po := newOperand(np, kc, patch, kc)
		po.markSmall(kc, tp)
		dst := out[(img*g.co+c0)*npos+p0:]
		flags[worker] = dotBlock(nc, np, kc, wo.from(c0), po, dst, npos, narrow, flags[worker])
		if bias != nil {
			for co := range nc {
				row := dst[co*npos : co*npos+np]
				bv := bias[c0+co]
				for i, v := range row {
					row[i] = mmRound(v + bv)
				}
			}
		}
	})
}

// im2col writes the patches of output positions p0 … p0+np−1 of image img,
// input channels c0 … c0+nc−1: row p holds x_padded[ci, oh·sh + r·dh,
// ow·sw + s·dw] at column (ci, r, s), zero in the padding.
func im2col(g *convGeom, x []float32, img, c0, nc, p0, np int, patch []float32) {
	kc := nc * g.kh * g.kw
	for p := range np {
		oh, ow := (p0+p)/g.ow, (p0+p)%g.ow
		row := patch[p*kc : (p+1)*kc]
		col := 0
		for ci := range nc {
			plane := x[((img*g.ci)+c0+ci)*g.h*g.w:][:g.h*g.w]
			for r := range g.kh {
				ih := oh*g.sh + r*g.dh - g.pt
				if ih < 0 || ih >= g.h {
					clear(row[col : col+g.kw])
					col += g.kw
					continue
				}
				line := plane[ih*g.w : (ih+1)*g.w]
				for s := range g.kw {
					iw := ow*g.sw + s*g.dw - g.pl
					if iw < 0 || iw >= g.w {
						row[col] = 0
					} else {
						row[col] = line[iw]
					}
					col++
				}
			}
		}
	}
}
