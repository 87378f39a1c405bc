package krylov

import (
	"fmt"
	"math"
	"math/cmplx"

	"github.com/anemone-go/anemone/dataflow"
)

// The polynomial preconditioner: Chebyshev iteration for A·z = v on the
// device, a fixed number of steps from z = 0, with coefficients fixed when
// the program is built. It has no dot products (nothing the device would
// have to reduce in fp16, nothing for the host to wait on), so a step of
// the host's flexible GMRES is one dispatch of polyDegree operator
// applications.
//
// The region is an ellipse centred on the real axis for the scaled
// operator A_s = 2^σ·A: along the axis it spans [λ_hi/(polyReach·k²),
// λ_hi], λ_hi = ‖A_s‖∞ ∈ [½, 1), which bounds every eigenvalue
// (Gershgorin), k = polyDegree; its imaginary half-axis is a bound of
// ‖(A_s − A_sᵀ)/2‖₂, so that the ellipse holds the field of values where
// the operator knows the bound (Stencil2D). The field of values matters
// more than the spectrum for a non-normal operator: upwind
// convection–diffusion at Pe 100 has a real spectrum, and a polynomial for
// the real interval alone stalls FGMRES(30) at a residual of 0.74, while
// the ellipse converges in 18 steps. The residual polynomial
// R(λ) = 1 − λ·p(λ) is small on the region and stays in (0, 1] on the
// real axis below it, so the smallest eigenvalues are damped little and
// FGMRES takes care of them.
const (
	// polyDegree, the operator applications per step, and polyReach, the
	// interval's bottom, were chosen by measurement on convection–diffusion
	// 64² at Pe 1, 10 and 100 with m = 30 (the GMRES sweep of docs/RESULTS.md).
	// Degree 8, 16, 24 (reach 1) need about 27, 17, 14 steps, 244–262,
	// 273–307, 351–376 operator applications (host and device) against
	// float64 GMRES(30)'s 343–761: all within 1.5×. The host's work per
	// step (one float64 A·z, Gram–Schmidt) is fixed while the device's
	// grows with the degree: the host's time was 0.13–0.15 of the
	// simulated device time at 16 and 0.08–0.11 at 24 (best of three
	// re-solves), and about half at 8 (single solves, before Gram–Schmidt
	// used gonum's kernels). 16 keeps it well below a quarter at the fewer
	// operator applications. A wider interval (reach 2, 4) costs more steps
	// at every degree.
	polyDegree = 16
	polyReach  = 1
)

// polyInterval returns the bottom α of the Chebyshev interval for an
// operator scaled to ‖A_s‖∞ = beta.
func polyInterval(beta float64, degree int) (alpha float64) {
	return beta / (polyReach * float64(degree*degree))
}

// polyEllipse is the region the polynomial is built for: the ellipse
// centred at θ on the real axis with semi-axes a (real) and b (imaginary),
// so foci θ ± c, c² = a² − b² (c imaginary for b > a). The Chebyshev
// iteration for it (Manteuffel, Numer. Math. 28, 1977; Saad 2003 §12.1)
// has real coefficients either way.
type polyEllipse struct {
	theta, a, b float64
}

// newPolyEllipse covers [α, β] on the real axis and the imaginary
// half-width gamma (a bound of ‖(A_s − A_sᵀ)/2‖₂, the field of values'
// height; 0 for an operator that knows none).
func newPolyEllipse(alpha, beta, gamma float64) polyEllipse {
	return polyEllipse{theta: (alpha + beta) / 2, a: (beta - alpha) / 2, b: gamma}
}

// coefficients returns the recurrence's scalars: d₀ = c0·r₀, then for
// k = 1 … degree, d_k = cd[k−1]·d_{k−1} + cr[k−1]·r_k.
func (e polyEllipse) coefficients(degree int) (c0 float64, cd, cr []float64) {
	c2 := e.a*e.a - e.b*e.b
	if floor := 1e-6 * e.a * e.a; math.Abs(c2) < floor {
		c2 = floor // (nearly) a disc: keep σ₁ finite
	}
	c := cmplx.Sqrt(complex(c2, 0))
	sigma1 := complex(e.theta, 0) / c
	rho := 1 / sigma1
	for range degree {
		next := 1 / (2*sigma1 - rho)
		cd = append(cd, real(next*rho))
		cr = append(cr, real(2*next/c))
		rho = next
	}
	return 1 / e.theta, cd, cr
}

// skewNorm bounds ‖(A − Aᵀ)/2‖₂ for the stencil: the antisymmetric part
// has the stencil s_k = (c_k − c_−k)/2 over opposite neighbours, and its
// 2-norm is at most Σ_k |s_k| = Σ over pairs |c_k − c_−k|.
func (s *stencilOp) skewNorm() float64 {
	c := s.c
	return math.Abs(c[1][0]-c[1][2]) + math.Abs(c[0][1]-c[2][1]) + math.Abs(c[0][0]-c[2][2]) + math.Abs(c[0][2]-c[2][0])
}

// skewBounder is an operator that bounds the norm of its antisymmetric
// part (the imaginary extent of its field of values).
type skewBounder interface{ skewNorm() float64 }

// polyRegion returns the ellipse for the scaled operator 2^σ·a, where
// 2^σ·normA ∈ [½, 1) for the estimate normA ≥ ‖A‖∞.
func polyRegion(a Operator, normA float64, sigma, degree int) polyEllipse {
	beta := math.Ldexp(normA, sigma)
	gamma := 0.0
	if sb, ok := a.(skewBounder); ok {
		gamma = math.Min(math.Ldexp(sb.skewNorm(), sigma), beta)
	}
	return newPolyEllipse(polyInterval(beta, degree), beta, gamma)
}

// polyGraph builds one preconditioner dispatch: input "v" ([1, n], or the
// grid [1, 1, ny, nx] of a GridOperator) with |v_i| ≤ 1, output "z" of
// that shape, z = p(A_s)·v ≈ A_s⁻¹·v with p of degree `degree` (that many
// operator applications), the Chebyshev iteration for
// the region (Saad 2003, Alg. 12.1, with the focal distance c in place of
// the interval's half-width):
//
//	r₀ = v, d₀ = r₀/θ, z₀ = d₀,
//	r_k = r_{k−1} − A_s·d_{k−1}, d_k = ρ_k·ρ_{k−1}·d_{k−1} + (2ρ_k/c)·r_k,
//	z_k = z_{k−1} + d_k, ρ₀ = c/θ, ρ_k = 1/(2θ/c − ρ_{k−1}).
//
// The iterates stay bounded: |r_k| ≤ |v| on the region, |d_k| and |z_k|
// below about 1/α ≤ 2^10, so every conv or matmul output of A_s·d
// (|·| ≤ ‖A_s‖∞·|d|) stays far below 2¹⁴ (the host halves v and retries
// should a non-normal operator overflow anyway).
func polyGraph(a Operator, sigma, degree int, region polyEllipse) (*dataflow.Graph, error) {
	g := dataflow.New()
	// A grid operator's vectors are laid out as [1, 1, ny, nx] (row-major,
	// so the host's vector is unchanged): no row limit.
	shape, err := deviceShape("GMRES", a)
	if err != nil {
		return nil, err
	}
	v := g.Input("v", shape)
	c0, cd, cr := region.coefficients(degree)
	d := g.Mul(v, g.Scalar(c0))
	z, r := d, v
	for k := range degree {
		ad := a.DeviceApply(g, d, sigma)
		if k == 0 {
			if err := checkApplyShape(g, ad, shape); err != nil {
				return nil, fmt.Errorf("krylov: GMRES: %w", err)
			}
		}
		r = g.Sub(r, ad)
		d = g.Add(g.Mul(d, g.Scalar(cd[k])), g.Mul(r, g.Scalar(cr[k])))
		z = g.Add(z, d)
	}
	g.Output("z", z)
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("krylov: GMRES preconditioner graph: %w", err)
	}
	return g, nil
}

// polyValue evaluates the preconditioner polynomial p at λ in complex
// float64 arithmetic, by the recurrence polyGraph builds (for tests).
func polyValue(lambda complex128, degree int, region polyEllipse) complex128 {
	c0, cd, cr := region.coefficients(degree)
	d := complex(c0, 0)
	z, r := d, complex(1, 0)
	for k := range degree {
		r -= lambda * d
		d = complex(cd[k], 0)*d + complex(cr[k], 0)*r
		z += d
	}
	return z
}

// pow2Below returns e with 2^e·m ∈ [½, 1) for m > 0 (0 for m = 0): the
// power of two that brings a vector's largest entry m to at most 1.
func pow2Below(m float64) int {
	if m == 0 || !finite(m) {
		return 0
	}
	_, e := math.Frexp(m)
	return -e
}
