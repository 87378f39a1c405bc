package krylov

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
)

// The device preconditioner: a Chebyshev polynomial in the scaled operator.
//
// Every dispatch applies y = q(B)·r, where B = 2^σ·(S·A·S) is the operator
// the device holds (S = I unless a diagonal scaling applies) and q is the
// polynomial of k = Unroll steps of the Chebyshev iteration on [λ_lo, λ_hi]
// started from y = 0 (Saad, Iterative Methods for Sparse Linear Systems,
// 2nd ed., §12.3.2, Alg. 12.1). λ_hi = ‖B‖∞ ≥ λ_max(B) by Gershgorin and
// λ_lo = λ_hi/(c·k²): no estimate of λ_min is needed, because the polynomial
// only has to damp B's upper spectrum; the float64 flexible CG on the host
// deals with what is left. Where λ_min is known (a Stencil2D symmetric about
// both axes has it in closed form) and above that, λ_lo = λ_min instead
// (newChebPolyAbove). With θ = (λ_hi+λ_lo)/2, δ = (λ_hi−λ_lo)/2,
// σ₁ = θ/δ, ρ₀ = 1/σ₁, d₀ = r₀/θ, y₀ = 0, step j = 0 … k−1 is
//
//	y_{j+1} = y_j + d_j
//	r_{j+1} = r_j − B·d_j
//	ρ_{j+1} = 1/(2σ₁ − ρ_j)
//	d_{j+1} = ρ_{j+1}ρ_j·d_j + (2ρ_{j+1}/δ)·r_{j+1}
//
// and the output is y_{k+1} = y_k + d_k: k applications of B. Every
// coefficient is a build-time constant, so the device program has no dot
// product, no division and no normalization: per step one application of
// B and a few fused multiply-adds (for a stencil, one conv does it all).
//
// Range. The host scales the input so that ‖r₀‖₂ ≤ chebInputNorm. Each of
// y_j, r_j, d_j and B·d_j is f(B)·r₀ for a polynomial f (r_j = P_j(B)·r₀
// with P_j the Chebyshev residual polynomial, |P_j| ≤ 1 on [0, λ_hi]), so
// for symmetric B with spectrum in [0, λ_hi], ‖f(B)·r₀‖∞ ≤ ‖f(B)·r₀‖₂ ≤
// max_{[0, λ_hi]}|f|·‖r₀‖₂. The host evaluates these maxima in float64
// (chebBounds) and stores each channel divided by its own power of two so
// that its bound is at most chebChannelMax = 2¹³; every conv and matmul
// output is then below 2¹⁴, half the engine's 32752 cliff.
const (
	// chebC is c in λ_lo = λ_hi/(c·k²). Measured (FCG(8), fp16 device,
	// random right-hand sides, Poisson and anisotropic ε = 0.1, 0.01 on
	// 128²): c = 2 and c = 4 are within a few per cent of each other for
	// k = 8 … 32; c = 1 lets the upper spectrum through at small k, c ≥ 8
	// damps it less per step. An interval that moves λ_lo down toward
	// the smallest eigenvalue the right-hand side excites (the smallest
	// Rayleigh–Ritz value of A on the host's kept directions, quantized
	// to powers of two) was measured worse on every row, random and
	// smooth (Poisson 128² random 1.31× → 2.15× at k = 8, smooth 3.75×
	// → 8.5×): the polynomial then no longer damps the upper spectrum
	// (|1 − λ·q(λ)| near 1 across it), while for eigenvalues below
	// λ_hi/(2k²) it can raise λ·q(λ) by at most 1.6× (q(0) is about
	// 1.25·k²/λ_hi now, at most 2k²/λ_hi for any polynomial of k steps
	// with |1 − λ·q(λ)| ≤ 1 on [0, λ_hi]).
	chebC = 2
	// chebInputNorm: the host scales r₀ so that ‖r₀‖₂ is in (2¹¹, 2¹²].
	// Its entries' root mean square is then at least 2¹¹/√n ≥ 2⁻⁴ for
	// n ≤ 2³⁰, eighteen binades above fp16's subnormals (2⁻¹⁴): an entry
	// small enough to be flushed weighs less than 2⁻¹⁴ of the RMS.
	chebInputNorm = 0x1p12
	// chebChannelMax bounds every stored channel's 2-norm (hence its
	// largest entry).
	chebChannelMax = 0x1p13
	// chebMargin covers the grid's sampling of the polynomials' maxima
	// and fp16 rounding of the iteration itself.
	chebMargin = 1.25
)

// chebPoly holds the constants of one device polynomial.
type chebPoly struct {
	k            int
	lo, hi       float64 // the interval [λ_lo, λ_hi] of B
	theta, delta float64
	rho          []float64 // ρ_0 … ρ_k
	// Power-of-two divisors of the stored channels: the device holds
	// y/sy, r/sr, d/sd. sq·2^qShift: B·(d/sd) is applied as 2^qShift·B so
	// that the product's bound is at most chebChannelMax.
	sy, sr, sd float64
	qShift     int
}

// Channels of the device state, in conv order.
const (
	chY = iota
	chR
	chD
	chCount
)

// newChebPoly returns the polynomial of k steps for an operator B with
// ‖B‖∞ = hi (the Gershgorin bound of its spectrum).
func newChebPoly(k int, hi float64) *chebPoly { return newChebPolyWidth(k, hi, chebC) }

// newChebPolyWidth is newChebPoly with λ_lo = λ_hi/(c·k²).
func newChebPolyWidth(k int, hi, c float64) *chebPoly {
	return newChebPolyOn(k, hi/(c*float64(k)*float64(k)), hi)
}

// newChebPolyAbove is newChebPoly for an operator whose smallest eigenvalue
// is known to be at least lamMin: λ_lo = max(λ_hi/(c·k²), lamMin), kept
// at most λ_hi/4. When k² exceeds B's condition number, the default λ_lo
// lies below the whole spectrum and every dispatch damps the residual by
// about the same factor whatever k (2ρ^k ≈ 2e^(−√2) with ρ from
// λ_hi/λ_lo = 2k²), so that more steps bought nothing: Poisson 32² took 17
// dispatches at Unroll 32 and at 64. With λ_lo at the spectrum's bottom the
// factor falls with k. An interval above λ_min is harmless: on [0, λ_lo]
// the residual polynomial stays in (0, 1].
func newChebPolyAbove(k int, hi, lamMin float64) *chebPoly {
	lo := math.Max(hi/(chebC*float64(k)*float64(k)), math.Min(lamMin, hi/4))
	return newChebPolyOn(k, lo, hi)
}

// newChebPolyOn returns the polynomial of k Chebyshev steps on [lo, hi]
// (0 < lo < hi), with channel scales for inputs of spectrum in [0, hi].
func newChebPolyOn(k int, lo, hi float64) *chebPoly {
	p := &chebPoly{k: k, lo: lo, hi: hi, theta: (hi + lo) / 2, delta: (hi - lo) / 2}
	sigma1 := p.theta / p.delta
	p.rho = make([]float64, k+1)
	p.rho[0] = 1 / sigma1
	for j := 1; j <= k; j++ {
		p.rho[j] = 1 / (2*sigma1 - p.rho[j-1])
	}
	by, br, bd, bq := p.bounds()
	p.sy = pow2Ceil(by * chebInputNorm * chebMargin / chebChannelMax)
	p.sr = pow2Ceil(br * chebInputNorm * chebMargin / chebChannelMax)
	p.sd = pow2Ceil(bd * chebInputNorm * chebMargin / chebChannelMax)
	// B·(d/sd)·2^qShift ≤ bq·‖r₀‖/sd·2^qShift ≤ chebChannelMax.
	p.qShift = -int(math.Round(math.Log2(pow2Ceil(bq * chebInputNorm * chebMargin / (chebChannelMax * p.sd)))))
	return p
}

// pow2Ceil is the smallest power of two ≥ v (v > 0).
func pow2Ceil(v float64) float64 {
	f, e := math.Frexp(v)
	if f == 0.5 {
		return math.Ldexp(1, e-1)
	}
	return math.Ldexp(1, e)
}

// step returns the coefficients of step j: (y, r, d)' = M0·(y, r, d) +
// M1·B·(y, r, d), of which only the d column of M1 is nonzero.
func (p *chebPoly) step(j int) (m0, m1 [chCount][chCount]float64) {
	c1 := p.rho[j+1] * p.rho[j]
	c2 := 2 * p.rho[j+1] / p.delta
	m0[chY][chY], m0[chY][chD] = 1, 1
	m0[chR][chR] = 1
	m1[chR][chD] = -1
	m0[chD][chR], m0[chD][chD] = c2, c1
	m1[chD][chD] = -c2
	return m0, m1
}

// linear is one step of the device iteration as a map from its stored
// input channels to its stored output channels: out_o = Σ_i w0[o][i]·in_i +
// w1[o]·(2^qShift·B·in_src), where src is the channel B is applied to.
type linear struct {
	in, out []int // the true channels read and written, in order
	w0      [][]float64
	w1      []float64
	src     int // index into in of the channel B multiplies
	shift   int // B is applied as 2^shift·B, its output bounded by chebChannelMax
}

// stepMap returns step j (0 … k−1) as a map of stored channels. Step 0
// reads r₀ alone (y₀ = 0, d₀ = r₀/θ); step k−1 writes y_{k+1} alone.
// Fused (one conv per step, no intermediate), B is applied as 2^shift·B
// with shift chosen to fill the output's range; otherwise it is applied as
// B itself (shift 0), so that an operator's DeviceApply always sees
// ‖2^scale·A‖∞ < 1 and inputs below chebChannelMax, as its contract says,
// and its output stays below them too.
func (p *chebPoly) stepMap(j int, fused bool) linear {
	scale := [chCount]float64{p.sy, p.sr, p.sd}
	m0, m1 := p.step(j)
	// The true input state as a combination of the stored inputs.
	var in []int
	var e [chCount][]float64 // e[c] = coefficients of true channel c in the stored inputs
	if j == 0 {
		in = []int{chR}
		e[chY], e[chR], e[chD] = []float64{0}, []float64{p.sr}, []float64{p.sr / p.theta}
	} else {
		in = []int{chY, chR, chD}
		e[chY], e[chR], e[chD] = []float64{p.sy, 0, 0}, []float64{0, p.sr, 0}, []float64{0, 0, p.sd}
	}
	// M1's only column is d, which step 0 holds as r₀/θ and later steps as d.
	src := len(in) - 1
	if j == 0 {
		src = 0
	}
	// B applies to the stored src channel, whose true value is
	// e[chD][src]·stored: d_j/sd (bounded by p.qShift), or in step 0 r₀/sr,
	// with ‖B·r₀‖ ≤ λ_hi·‖r₀‖.
	shift := p.qShift
	switch {
	case !fused:
		shift = 0
	case j == 0:
		shift = -int(math.Round(math.Log2(pow2Ceil(p.hi * chebInputNorm * chebMargin / (chebChannelMax * p.sr)))))
	}
	bScale := e[chD][src] / math.Ldexp(1, shift)
	out := []int{chY, chR, chD}
	if j == p.k-1 {
		out = []int{chY}
	}
	l := linear{in: in, out: out, src: src, shift: shift, w1: make([]float64, len(out))}
	for oi, o := range out {
		row := make([]float64, len(in))
		var c0 [chCount]float64 // true output o in true inputs
		var c1 float64          // coefficient of B·d
		if j == p.k-1 {
			// y_{k+1} = y_k + d_k, with y_k and d_k rows of this step.
			for c := range chCount {
				c0[c] = m0[chY][c] + m0[chD][c]
			}
			c1 = m1[chY][chD] + m1[chD][chD]
		} else {
			c0 = m0[o]
			c1 = m1[o][chD]
		}
		for c := range chCount {
			for i := range in {
				row[i] += c0[c] * e[c][i]
			}
		}
		for i := range row {
			row[i] /= scale[o]
		}
		l.w0 = append(l.w0, row)
		l.w1[oi] = c1 * bScale / scale[o]
	}
	return l
}

// bounds returns max over λ ∈ [0, λ_hi] and over the steps of |y_j(λ)|,
// |r_j(λ)|, |d_j(λ)| and |λ·d_j(λ)| for r₀ = 1: the scalar recurrence on a
// grid that clusters at both ends (Chebyshev points), where the
// polynomials' extrema crowd, plus λ = 0 and λ_hi themselves.
func (p *chebPoly) bounds() (by, br, bd, bq float64) {
	const points = 4096
	for i := 0; i <= points; i++ {
		lam := p.hi * (1 - math.Cos(math.Pi*float64(i)/points)) / 2
		y, r, d := 0.0, 1.0, 1/p.theta
		br = math.Max(br, 1)
		bd = math.Max(bd, math.Abs(d))
		for j := range p.k {
			bq = math.Max(bq, math.Abs(lam*d))
			m0, m1 := p.step(j)
			bdv := lam * d
			ny := m0[chY][chY]*y + m0[chY][chD]*d
			nr := m0[chR][chR]*r + m1[chR][chD]*bdv
			nd := m0[chD][chR]*nr + m0[chD][chD]*d
			y, r, d = ny, nr, nd
			by = math.Max(by, math.Abs(y))
			br = math.Max(br, math.Abs(r))
			bd = math.Max(bd, math.Abs(d))
		}
		by = math.Max(by, math.Abs(y+d)) // the output y_{k+1}
	}
	return by, br, bd, bq
}

// apply evaluates the polynomial in float64 on a vector: y = q(B)·r, with
// B given by mul (dst = B·x). For tests and the host's reference.
func (p *chebPoly) apply(dst, r []float64, mul func(dst, x []float64)) {
	n := len(r)
	y, rr, d, bd := make([]float64, n), append([]float64(nil), r...), make([]float64, n), make([]float64, n)
	for i, v := range r {
		d[i] = v / p.theta
	}
	for j := range p.k {
		m0, m1 := p.step(j)
		mul(bd, d)
		for i := range n {
			y[i] += d[i]
			rr[i] += m1[chR][chD] * bd[i]
			d[i] = m0[chD][chR]*rr[i] + m0[chD][chD]*d[i]
		}
	}
	for i := range n {
		dst[i] = y[i] + d[i]
	}
}

// stencilChebGraph builds the fused program for a constant-coefficient
// stencil: the state (y, r, d) is three channels of one [1, 3, ny, nx]
// tensor, and one 3×3 conv per step maps it to the next state — the stencil
// and the vector updates in one op, weights [3, 3, 3, 3]. The first conv
// reads r₀ ([1, 1, ny, nx]) and the last writes y alone.
func stencilChebGraph(s *stencilOp, p *chebPoly, sigma int) *dataflow.Graph {
	g := dataflow.New()
	x := g.Input("r", dataflow.Shape{1, 1, s.ny, s.nx})
	for j := range p.k {
		l := p.stepMap(j, true)
		cin, cout := len(l.in), len(l.out)
		w := make([]float64, cout*cin*9)
		for o := range cout {
			for i := range cin {
				base := (o*cin + i) * 9
				w[base+4] += l.w0[o][i]
				if i == l.src && l.w1[o] != 0 {
					for ky := range 3 {
						for kx := range 3 {
							w[base+ky*3+kx] += l.w1[o] * math.Ldexp(s.c[ky][kx], sigma+l.shift)
						}
					}
				}
			}
		}
		k := g.Const(fmt.Sprintf("cheb%d_s%d", s.id, j), dataflow.Shape{cout, cin, 3, 3}, w)
		x = g.Conv2D(x, k, dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}})
	}
	g.Output("y", x)
	return g
}

// genericChebGraph builds the polynomial for vectors of the given shape
// ([1, n], or a grid [1, 1, ny, nx]) from elementwise ops and one device
// application of B per step: apply(g, x, shift) adds 2^shift·B·x (and, in
// Compensated mode, its remainder).
func genericChebGraph(shape dataflow.Shape, p *chebPoly, apply func(g *dataflow.Graph, x dataflow.Value, shift int) (q, qLo dataflow.Value)) (*dataflow.Graph, error) {
	g := dataflow.New()
	r0 := g.Input("r", shape)
	state := []dataflow.Value{r0}
	for j := range p.k {
		l := p.stepMap(j, false)
		q, qLo := apply(g, state[l.src], l.shift)
		if j == 0 {
			if err := checkApplyShape(g, q, shape); err != nil {
				return nil, err
			}
		}
		next := make([]dataflow.Value, len(l.out))
		for o := range l.out {
			var acc dataflow.Value
			add := func(v dataflow.Value, w float64) {
				switch {
				case w == 0:
					return
				case !acc.Valid() && w == 1:
					acc = v
				case !acc.Valid():
					acc = g.Mul(v, g.Scalar(w))
				case w == 1:
					acc = g.Add(acc, v)
				case w == -1:
					acc = g.Sub(acc, v)
				default:
					acc = g.Add(acc, g.Mul(v, g.Scalar(w)))
				}
			}
			for i, v := range state {
				add(v, l.w0[o][i])
			}
			add(q, l.w1[o])
			if qLo.Valid() {
				add(qLo, l.w1[o])
			}
			next[o] = acc
		}
		state = next
	}
	g.Output("y", state[0])
	return g, nil
}
