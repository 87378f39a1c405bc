package krylov

import "math"

// leanStencil applies a Stencil2D row by row in float64, with the zero
// Dirichlet boundary handled at the row ends and the first and last rows,
// so that the inner loops have no branches and no bounds checks: the
// host's product of CG's lean loop (see leanLoop), fused there with the
// passes that consume it. Its coefficients may be the stencil's divided by
// a power of two (exactly).
type leanStencil struct {
	nx, ny  int
	c       [3][3]float64
	corners bool      // some corner coefficient is nonzero (a 9-point stencil)
	zero    []float64 // the row beyond the grid's edges: nx zeros
}

// newLeanStencil returns st's stencil with every coefficient times 2^−e.
func newLeanStencil(st *stencilOp, e int) leanStencil {
	l := leanStencil{nx: st.nx, ny: st.ny, zero: make([]float64, st.nx)}
	for i := range 3 {
		for j := range 3 {
			l.c[i][j] = math.Ldexp(st.c[i][j], -e)
		}
	}
	l.corners = l.c[0][0] != 0 || l.c[0][2] != 0 || l.c[2][0] != 0 || l.c[2][2] != 0
	return l
}

// row sets out (length nx) to grid row y of A·x.
func (l *leanStencil) row(out, x []float64, y int) {
	nx := l.nx
	var up, dn []float64
	if y > 0 {
		up = x[(y-1)*nx : y*nx]
	}
	if y < l.ny-1 {
		dn = x[(y+1)*nx : (y+2)*nx]
	}
	l.rowFrom(out, up, x[y*nx:(y+1)*nx], dn)
}

// rowFrom sets out to a row of A·x from that row of x (mid) and the rows
// above and below it (nil beyond the grid).
func (l *leanStencil) rowFrom(out, up, mid, dn []float64) {
	nx := l.nx
	out, mid = out[:nx], mid[:nx]
	if up == nil {
		up = l.zero
	}
	if dn == nil {
		dn = l.zero
	}
	up, dn = up[:nx], dn[:nx]
	c := &l.c
	if nx == 1 {
		out[0] = c[0][1]*up[0] + c[1][1]*mid[0] + c[2][1]*dn[0]
		return
	}
	// The ends of the row, then its interior in one branch-free loop.
	out[0] = c[0][1]*up[0] + c[0][2]*up[1] + c[1][1]*mid[0] + c[1][2]*mid[1] + c[2][1]*dn[0] + c[2][2]*dn[1]
	out[nx-1] = c[0][0]*up[nx-2] + c[0][1]*up[nx-1] + c[1][0]*mid[nx-2] + c[1][1]*mid[nx-1] + c[2][0]*dn[nx-2] + c[2][1]*dn[nx-1]
	o := out[1 : nx-1]
	ml, mc, mr := mid[:len(o)], mid[1:len(o)+1], mid[2:len(o)+2]
	uc, dc := up[1:len(o)+1], dn[1:len(o)+1]
	cw, cc, ce, cn, cs := c[1][0], c[1][1], c[1][2], c[0][1], c[2][1]
	if !l.corners {
		for i := range o {
			o[i] = cw*ml[i] + cc*mc[i] + ce*mr[i] + cn*uc[i] + cs*dc[i]
		}
		return
	}
	ul, ur := up[:len(o)], up[2:len(o)+2]
	dl, dr := dn[:len(o)], dn[2:len(o)+2]
	cnw, cne, csw, cse := c[0][0], c[0][2], c[2][0], c[2][2]
	for i := range o {
		o[i] = cw*ml[i] + cc*mc[i] + ce*mr[i] + cn*uc[i] + cs*dc[i] +
			cnw*ul[i] + cne*ur[i] + csw*dl[i] + cse*dr[i]
	}
}

// residual sets r = b − A·x and returns ‖r‖₂² (plain sum: see sumSq).
func (l *leanStencil) residual(r, x, b []float64, row []float64) float64 {
	ss := 0.0
	for y := range l.ny {
		ss += l.residualRow(r, x, b, row, y)
	}
	return ss
}

// residualRow sets row y of r = b − A·x and returns its sum of squares.
func (l *leanStencil) residualRow(r, x, b []float64, row []float64, y int) float64 {
	nx := l.nx
	l.row(row, x, y)
	rr, bb := r[y*nx:(y+1)*nx], b[y*nx:(y+1)*nx]
	t := row[:len(rr)]
	bb = bb[:len(rr)]
	ss := 0.0
	for i := range rr {
		v := bb[i] - t[i]
		rr[i] = v
		ss += v * v
	}
	return ss
}

// residualRow32 sets row y of r = (b − A·x)·rs, rounded to float32 (rs a
// power of two), and returns the sum of squares of the row of b − A·x,
// in float64 before the rounding.
func (l *leanStencil) residualRow32(r []float32, x, b []float64, row []float64, y int, rs float64) float64 {
	nx := l.nx
	l.row(row, x, y)
	rr, bb := r[y*nx:(y+1)*nx], b[y*nx:(y+1)*nx]
	t := row[:len(rr)]
	bb = bb[:len(rr)]
	ss := 0.0
	for i := range rr {
		v := bb[i] - t[i]
		rr[i] = float32(v * rs)
		ss += v * v
	}
	return ss
}
