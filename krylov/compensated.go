package krylov

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/precision"
)

// Compensated operator application.
//
// In FP16 mode the device multiplies by fl16(A): a normwise error u‖A‖ with
// u = 2⁻¹¹, which stops refinement once κ(A)·u ≳ 1. In Compensated mode a
// dense A is applied exactly enough that only the final rounding of each
// component of A·p remains (a componentwise relative error u, which does
// not stop refinement):
//
//   - On the host, 2^σ·A is split into L limbs of 5-bit balanced digits with
//     one exponent per row (precision.SplitMatrix): a_ij = 2^e_i·Σ_l D_l·2^(−5(l+1)),
//     |D_l| ≤ 16. The digits are exact fp16 weights.
//   - On the device, p/ν (|·| ≤ 1, an exact power-of-two scaling) is split
//     into K digit vectors by the magic-constant rounding H = (R + 48) − 48,
//     which rounds R to a multiple of 2⁻⁵ in one correctly rounded add;
//     R ← 32·(R − H) is exact. So p/ν = Σ_k P_k·2^(−5(k+1)), |P_k| ≤ 32.
//   - Every digit product is an integer of magnitude ≤ 512, exact in fp16.
//     Pairs (l, k) with l + k = s share the scale 2^(e_i − 5(s+2)) and are
//     stacked along the contraction into one product S_s = Σ_{l+k=s} D_l·P_k
//     per s, exact in the float32 accumulator while its span stays within
//     22 bits (n·(s+1) ≤ 8192). Its fp16 rounding hi_s is corrected by a
//     second product that appends −I·hi_s to the same accumulator: lo_s =
//     fl16(S_s − hi_s) is exact, and S_s = hi_s + lo_s.
//   - The terms 2^(−5s)·(hi_s + lo_s) are added with TwoSum, in twice fp16's
//     precision, and the sum is rounded once and scaled by ν·2^e_i.
//
// The error is that of truncating the digit triangle, about 2^(−5L)·‖A‖‖p‖,
// plus the accumulated TwoSum error, about u²·max term.
const (
	compBits = 5
	// compSpan bounds n·(s+1): 512·8192 = 2²², so that S_s, its fp16
	// rounding and the exact remainder all fit the float32 accumulator.
	compSpan = 8192
)

// compensatedDense holds the digit weights of 2^σ·A.
type compensatedDense struct {
	id     uint64
	n      int
	limbs  int
	levels int         // digit vectors of p
	rowExp []int       // e_i
	digits [][]float64 // L × n², row-major
}

// newCompensatedDense splits 2^σ·A into limbs.
func newCompensatedDense(d *denseOp, sigma, limbs int) (*compensatedDense, error) {
	n := d.n
	// The vector's levels: its entries are about ν/√n·(a few) ≤ 1, so the
	// first 5-bit level holds fewer bits; add levels for log2(√n).
	extra := int(math.Ceil(math.Log2(math.Sqrt(float64(n))) / compBits))
	levels := limbs + extra
	if n*(limbs+extra) > compSpan {
		return nil, fmt.Errorf("krylov: compensated application needs n·(limbs+%d) ≤ %d, got n = %d with %d limbs: %w", extra, compSpan, n, limbs, ErrUnsupported)
	}
	scaled := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			scaled.Set(i, j, math.Ldexp(d.a[i*n+j], sigma))
		}
	}
	m, err := precision.SplitMatrix(scaled, limbs, compBits)
	if err != nil {
		return nil, fmt.Errorf("krylov: %w", err)
	}
	return &compensatedDense{id: nextID(), n: n, limbs: limbs, levels: levels, rowExp: m.RowExp, digits: m.Digits}, nil
}

// weights returns the const W_s = [D_0 | … | D_s'] (n × n·(s'+1)), where
// s' = min(s, L−1), with a power-of-two factor 2^−k so that |S_s·2^−k| stays
// below 2¹⁵; with hiCol it also appends −I (for the lo pass).
func (c *compensatedDense) weights(g *dataflow.Graph, s int, lo bool) (w dataflow.Value, lSpan, k int) {
	lSpan = min(s, c.limbs-1) + 1 // limbs l = 0 … lSpan−1 pair with levels s−l
	k = c.shift(s)
	name := fmt.Sprintf("Adig%d_s%d", c.id, s)
	if lo {
		name += "_lo"
	}
	if v, ok := g.Lookup(name); ok {
		return v, lSpan, k
	}
	n := c.n
	cols := n * lSpan
	if lo {
		cols += n
	}
	data := make([]float64, n*cols)
	f := math.Ldexp(1, -k)
	for i := range n {
		row := data[i*cols : (i+1)*cols]
		for l := range lSpan {
			copy(row[l*n:(l+1)*n], c.digits[l][i*n:(i+1)*n])
			for j := l * n; j < (l+1)*n; j++ {
				row[j] *= f
			}
		}
		if lo {
			row[lSpan*n+i] = -1
		}
	}
	shape := dataflow.Shape{n, cols}
	return g.Const(name, shape, data), lSpan, k
}

// shift is k for group s: 2^k ≥ 512·n·(s+1)/2¹⁵, the worst-case |S_s|.
func (c *compensatedDense) shift(s int) int {
	lSpan := min(s, c.limbs-1) + 1
	return max(0, int(math.Ceil(math.Log2(512*float64(c.n*lSpan))))-15)
}

// apply adds q = 2^σ·A·p to g for p of shape [1, n] with |p| ≤ ν, as
// fl16(q) and the exact-to-u² remainder qLo = q − fl16(q).
func (c *compensatedDense) apply(g *dataflow.Graph, p dataflow.Value, nu float64) (q, qLo dataflow.Value) {
	// Digit vectors P_k of p/ν.
	levels := make([]dataflow.Value, c.levels)
	r := g.Mul(p, g.Scalar(1/nu)) // ν is a power of two: exact
	magic := g.Scalar(48)
	for k := range c.levels {
		h := g.Sub(g.Add(r, magic), magic) // multiples of 2⁻⁵
		levels[k] = g.Mul(h, g.Scalar(32)) // integers, |·| ≤ 32
		if k+1 < c.levels {
			r = g.Mul(g.Sub(r, h), g.Scalar(32))
		}
	}
	var acc, accLo dataflow.Value
	groups := c.limbs - 1 + (c.levels - c.limbs) + 1 // s = 0 … L−1+extra
	for s := range groups {
		w, lSpan, k := c.weights(g, s, false)
		// Pair limb l with level s−l, for the limbs that have such a level.
		parts := make([]dataflow.Value, 0, lSpan)
		lo := max(0, s-(c.levels-1))
		if lo >= lSpan {
			continue
		}
		for l := range lSpan {
			if s-l >= c.levels || l < lo {
				parts = append(parts, g.Mul(levels[0], g.Scalar(0)))
				continue
			}
			parts = append(parts, levels[s-l])
		}
		x := parts[0]
		if len(parts) > 1 {
			x = g.Concat(1, parts...)
		}
		hi := g.MatMul(x, w, false, true)
		wLo, _, _ := c.weights(g, s, true)
		loV := g.MatMul(g.Concat(1, x, hi), wLo, false, true)
		// term = 2^(k − 5s − shift0)·(hi + lo), all exact power-of-two scalings.
		f := g.Scalar(math.Ldexp(1, k-compBits*s-c.shift(0)))
		tHi, tLo := g.Mul(hi, f), g.Mul(loV, f)
		if s == 0 {
			acc, accLo = twoSum(g, tHi, tLo)
			continue
		}
		var e1, e2 dataflow.Value
		acc, e1 = twoSum(g, acc, tHi)
		acc, e2 = twoSum(g, acc, tLo)
		accLo = g.Add(accLo, g.Add(e1, e2))
	}
	q, qLo = twoSum(g, acc, accLo)
	// Undo the scalings: 2^(e_i − 10 + shift0)·ν per row.
	name := fmt.Sprintf("Arow%d", c.id)
	rows, ok := g.Lookup(name)
	if !ok {
		data := make([]float64, c.n)
		for i, e := range c.rowExp {
			data[i] = math.Ldexp(nu, e-2*compBits+c.shift(0))
		}
		rows = g.Const(name, dataflow.Shape{1, c.n}, data)
	}
	return g.Mul(q, rows), g.Mul(qLo, rows) // exact power-of-two scalings
}

// stencilApply adds q = 2^σ·A·p for a stencil whose scaled coefficients are
// fp16 numbers, with its remainder: every product is exact, the float32 sum
// of nine of them is rounded once to fp16 as hi, and a second conv over the
// two channels [p, hi] with weights [c, −δ] gives lo = fl16(Σ − hi) in the
// same accumulator.
func (s *stencilOp) compensatedApply(g *dataflow.Graph, x dataflow.Value, scale int) (q, qLo dataflow.Value) {
	hi := s.DeviceApply(g, x, scale)
	name := weightName("stencil_lo", s.id, scale)
	k, ok := g.Lookup(name)
	if !ok {
		w := make([]float64, 18)
		for i := range 3 {
			for j := range 3 {
				w[i*3+j] = math.Ldexp(s.c[i][j], scale)
			}
		}
		w[9+4] = -1 // the centre of the second channel
		k = g.Const(name, dataflow.Shape{1, 2, 3, 3}, w)
	}
	grid := dataflow.Shape{1, 1, s.ny, s.nx}
	two := g.Concat(1, g.Reshape(x, grid), g.Reshape(hi, grid))
	lo := g.Conv2D(two, k, dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}})
	return hi, g.Reshape(lo, dataflow.Shape{1, s.nx * s.ny})
}

// applier adds q = 2^σ·A·p (fp16) and its remainder to a graph.
type applier func(g *dataflow.Graph, p dataflow.Value) (q, qLo dataflow.Value)

// compensatedApplier returns the compensated application of a for vectors
// of norm ν: limb digits for a dense matrix, a remainder conv for a stencil
// whose scaled coefficients are fp16 numbers.
func compensatedApplier(a Operator, sigma int, nu float64) (applier, error) {
	switch op := a.(type) {
	case *denseOp:
		c, err := newCompensatedDense(op, sigma, compensatedLimbs)
		if err != nil {
			return nil, err
		}
		return func(g *dataflow.Graph, p dataflow.Value) (dataflow.Value, dataflow.Value) { return c.apply(g, p, nu) }, nil
	case *stencilOp:
		if !op.exactInFP16(sigma) {
			return nil, fmt.Errorf("krylov: Compensated mode needs stencil coefficients exact in fp16 (scaled by 2^%d): %w", sigma, ErrUnsupported)
		}
		return func(g *dataflow.Graph, p dataflow.Value) (dataflow.Value, dataflow.Value) {
			return op.compensatedApply(g, p, sigma)
		}, nil
	}
	return nil, fmt.Errorf("krylov: Compensated mode is not available for operator %T: %w", a, ErrUnsupported)
}
