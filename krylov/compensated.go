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
	// compensatedLimbs is the limb count of A in Compensated mode: the
	// truncation error, about 2^(−5·6) ≈ 1e-9 of ‖A‖‖p‖, keeps the
	// compensated product accurate up to κ(A) ≈ 1e7.
	compensatedLimbs = 6
	compBits         = 5
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

// pairs returns the limbs l = lo … hi−1 that group s pairs with the vector
// levels s − l: every limb below L whose level s − l exists.
func (c *compensatedDense) pairs(s int) (lo, hi int) {
	return max(0, s-(c.levels-1)), min(s, c.limbs-1) + 1
}

// weights returns the const W_s = [D_lo | … | D_hi−1] (n × n·(hi−lo)) of
// group s with a power-of-two factor 2^−k so that |S_s·2^−k| stays below
// 2¹⁵; with lo it also appends −I (for the lo pass).
func (c *compensatedDense) weights(g *dataflow.Graph, s int, lo bool) (w dataflow.Value, k int) {
	l0, l1 := c.pairs(s)
	k = c.shift(s)
	name := fmt.Sprintf("Adig%d_s%d", c.id, s)
	if lo {
		name += "_lo"
	}
	if v, ok := g.Lookup(name); ok {
		return v, k
	}
	n := c.n
	cols := n * (l1 - l0)
	if lo {
		cols += n
	}
	data := make([]float64, n*cols)
	f := math.Ldexp(1, -k)
	for i := range n {
		row := data[i*cols : (i+1)*cols]
		for l := l0; l < l1; l++ {
			dst := row[(l-l0)*n : (l-l0+1)*n]
			copy(dst, c.digits[l][i*n:(i+1)*n])
			for j := range dst {
				dst[j] *= f
			}
		}
		if lo {
			row[(l1-l0)*n+i] = -1
		}
	}
	shape := dataflow.Shape{n, cols}
	return g.Const(name, shape, data), k
}

// shift is k for group s: 2^k ≥ 512·n·pairs/2¹⁵, the worst-case |S_s|.
func (c *compensatedDense) shift(s int) int {
	l0, l1 := c.pairs(s)
	return max(0, int(math.Ceil(math.Log2(512*float64(c.n*(l1-l0)))))-15)
}

// compMinExp: a group whose terms are scaled by less than 2^compMinExp
// relative to the first group's is dropped. Its digit products are at most
// as large as the first group's, so it contributes below 2⁻²⁸ of the sum,
// under the 2⁻²² resolution of the (hi, lo) pair the sum is kept in.
const compMinExp = -28

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
	for s := range c.levels { // groups s = 0 … levels−1: the triangle l + (s−l) ≤ levels−1
		k := c.shift(s)
		e := k - compBits*s - c.shift(0) // term = 2^e·(hi + lo), exact power-of-two scalings
		if e < compMinExp {
			break // e falls with s: every later group is smaller still
		}
		w, _ := c.weights(g, s, false)
		l0, l1 := c.pairs(s)
		parts := make([]dataflow.Value, 0, l1-l0)
		for l := l0; l < l1; l++ {
			parts = append(parts, levels[s-l])
		}
		x := concatTree(g, 1, parts)
		hi := g.MatMul(x, w, false, true)
		wLo, _ := c.weights(g, s, true)
		loV := g.MatMul(g.Concat(1, x, hi), wLo, false, true)
		tHi, tLo := scalePow2(g, hi, e), scalePow2(g, loV, e)
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

// scalePow2 returns 2^e·x, e ≥ 2·(−14), with constants in fp16's normal
// range: one multiplication for e ≥ −14, two below.
func scalePow2(g *dataflow.Graph, x dataflow.Value, e int) dataflow.Value {
	if e == 0 {
		return x
	}
	if e < -14 {
		x = g.Mul(x, g.Scalar(0x1p-14))
		e += 14
	}
	return g.Mul(x, g.Scalar(math.Ldexp(1, e)))
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

// compensable is an operator with a compensated device application.
type compensable interface {
	// compensatedSupported says why 2^σ·A has no compensated form, or nil.
	compensatedSupported(sigma int) error
	// compensatedApplier returns the compensated application of 2^σ·A for
	// vectors of norm ν.
	compensatedApplier(sigma int, nu float64) (applier, error)
}

// deviceApplier returns the device application of 2^σ·A: the operator's
// own DeviceApply (no remainder), or the compensated form.
func deviceApplier(a Operator, sigma int, compensated bool) (applier, error) {
	if compensated {
		return compensatedApplier(a, sigma, vectorNorm(a.Dims()))
	}
	return func(g *dataflow.Graph, p dataflow.Value) (dataflow.Value, dataflow.Value) {
		return a.DeviceApply(g, p, sigma), dataflow.Value{}
	}, nil
}

// compensatedSupported reports why Compensated mode is not available for
// 2^σ·A, or nil.
func compensatedSupported(a Operator, sigma int) error {
	c, ok := a.(compensable)
	if !ok {
		return fmt.Errorf("krylov: Compensated mode is not available for operator %T (only for Dense and Stencil2D operators): %w", a, ErrUnsupported)
	}
	return c.compensatedSupported(sigma)
}

// compensatedApplier returns the compensated application of a for vectors
// of norm ν: limb digits for a dense matrix, a remainder conv for a stencil
// whose scaled coefficients are fp16 numbers.
func compensatedApplier(a Operator, sigma int, nu float64) (applier, error) {
	if err := compensatedSupported(a, sigma); err != nil {
		return nil, err
	}
	return a.(compensable).compensatedApplier(sigma, nu)
}

func (d *denseOp) compensatedSupported(sigma int) error {
	if d.n > denseRowLimit {
		return fmt.Errorf("krylov: Compensated mode for a dense matrix keeps its vectors in one device row, at most %d unknowns; this one has %d (use FP16 mode, whose float64 outer iteration reaches Tol too): %w", denseRowLimit, d.n, ErrUnsupported)
	}
	extra := int(math.Ceil(math.Log2(math.Sqrt(float64(d.n))) / compBits))
	if d.n*(compensatedLimbs+extra) > compSpan {
		return fmt.Errorf("krylov: Compensated mode for a dense matrix needs n·(limbs+%d) ≤ %d, got n = %d with %d limbs: %w", extra, compSpan, d.n, compensatedLimbs, ErrUnsupported)
	}
	return nil
}

func (d *denseOp) compensatedApplier(sigma int, nu float64) (applier, error) {
	c, err := newCompensatedDense(d, sigma, compensatedLimbs)
	if err != nil {
		return nil, err
	}
	return func(g *dataflow.Graph, p dataflow.Value) (dataflow.Value, dataflow.Value) { return c.apply(g, p, nu) }, nil
}

func (s *stencilOp) compensatedSupported(sigma int) error {
	if !s.exactInFP16(sigma) {
		return fmt.Errorf("krylov: Compensated mode needs stencil coefficients exact in fp16 once scaled by 2^%d (small integers times one power of two, say; a factor 1/h² generally is not): %w", sigma, ErrUnsupported)
	}
	return nil
}

func (s *stencilOp) compensatedApplier(sigma int, _ float64) (applier, error) {
	return func(g *dataflow.Graph, p dataflow.Value) (dataflow.Value, dataflow.Value) {
		return s.compensatedApply(g, p, sigma)
	}, nil
}
