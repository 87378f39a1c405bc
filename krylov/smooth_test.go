package krylov

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/reference"
)

// Why smooth right-hand sides cost more: the same outer iteration (FCG(8)
// with unit directions, a float64 product by A and the true residual per
// step) around the same Chebyshev polynomial, evaluated on the host in
// three arithmetics, so that the polynomial's own cost and the cost of
// rounding its vectors can be told apart.
const (
	arithExact  = iota // float64
	arithFP16          // every vector rounded to fp16's 11 significant bits after each step
	arithPaired        // every vector rounded to a pair hi + lo of such numbers
)

var arithNames = [...]string{"float64", "fp16", "paired fp16"}

// roundSignificand rounds v to 11 significant bits (fp16's significand,
// without its range: the device's scaling keeps values normal).
func roundSignificand(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	f, e := math.Frexp(v)
	return math.Ldexp(math.RoundToEven(f*2048)/2048, e)
}

func roundVec(v []float64, arith int) {
	for i, x := range v {
		switch arith {
		case arithFP16:
			v[i] = roundSignificand(x)
		case arithPaired:
			hi := roundSignificand(x)
			v[i] = hi + roundSignificand(x-hi)
		}
	}
}

// applyRounded is chebPoly.apply with the input, B·d, and the state (y, r,
// d) rounded after every step, and the output rounded.
func applyRounded(p *chebPoly, dst, r []float64, mul func(dst, x []float64), arith int) {
	n := len(r)
	rr := append([]float64(nil), r...)
	roundVec(rr, arith)
	y, d, bd := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, v := range rr {
		d[i] = v / p.theta
	}
	roundVec(d, arith)
	for j := range p.k {
		m0, m1 := p.step(j)
		mul(bd, d)
		roundVec(bd, arith)
		for i := range n {
			y[i] += d[i]
			rr[i] += m1[chR][chD] * bd[i]
			d[i] = m0[chD][chR]*rr[i] + m0[chD][chD]*d[i]
		}
		roundVec(y, arith)
		roundVec(rr, arith)
		roundVec(d, arith)
	}
	for i := range n {
		dst[i] = y[i] + d[i]
	}
	roundVec(dst, arith)
}

// hostFCG returns the outer iterations (dispatches) FCG(FCGTruncation)
// takes to 1e-10 around the Unroll-k polynomial in the given arithmetic.
func hostFCG(a Operator, b []float64, k, arith int) int {
	return hostFCGWidth(a, b, k, arith, chebC)
}

// hostFCGWidth is hostFCG with the interval [λ_hi/(c·k²), λ_hi].
func hostFCGWidth(a Operator, b []float64, k, arith int, c float64) int {
	n := a.Dims()
	normA := a.NormInf()
	mul := func(dst, x []float64) { // B = A/‖A‖∞, spectrum in [0, 1]
		a.MulVecTo(dst, x)
		for i := range dst {
			dst[i] /= normA
		}
	}
	p := newChebPolyWidth(k, 1, c)
	x, z := make([]float64, n), make([]float64, n)
	rv := append([]float64(nil), b...)
	bnorm := norm2(b)
	dirs := newFCGDirections(FCGTruncation, n)
	for it := 1; it <= 2000; it++ {
		applyRounded(p, z, rv, mul, arith)
		zn := norm2(z)
		pk, qk, pq := dirs.slot()
		for i := range z {
			pk[i] = z[i] / zn
		}
		*pq = 0
		dirs.conjugate(pk)
		pn := norm2(pk)
		for i := range pk {
			pk[i] /= pn
		}
		a.MulVecTo(qk, pk)
		*pq = dot(pk, qk)
		alpha := dot(pk, rv) / *pq
		for i := range x {
			x[i] += alpha * pk[i]
		}
		if residual(rv, a, x, b)/bnorm <= 1e-10 {
			return it
		}
	}
	return -1
}

// TestCGSmoothRHSCause splits the cost of a smooth right-hand side into its
// two causes, on Poisson and anisotropic ε = 0.1 at 128², Unroll 8/16/32:
//
//   - The polynomial itself: in float64 the outer iteration already needs
//     1.78× float64 CG's applications on Poisson with a smooth b at Unroll
//     8 (2.66× at 16, 4.12× at 32). The few modes b excites lie where
//     λ·q(λ) is nearly linear in λ, so the outer iteration needs about as
//     many steps for them as CG does, each costing Unroll + 1 products.
//     No interval width helps: with λ_lo = λ_hi/(c·k²), c from ¼ to 32,
//     Unroll 8 takes 1.69–3.09× in float64 and 4.0–5.7× in fp16.
//   - fp16 rounding of the polynomial's vectors: it roughly doubles the
//     dispatches again on smooth rows (Poisson Unroll 8: 19 → 44), and
//     costs at most 25 % on random ones. Rounded to pairs hi + lo instead,
//     the counts come back to float64's. (This is an emulation. The
//     simulator, like the engine, rounds each product in a conv to fp16
//     before the float32 sum, so a device pair needs error-free products:
//     the digit split of the compensated dense product. A two-conv pair
//     without it, tried on Poisson 128², took more dispatches than FP16
//     mode, at 57 device bytes per unknown per step.)
//
// The fp16 column reproduces the simulator's sweep within about 10 %
// (Poisson smooth: 4.12/4.60/6.19× here, 3.75/4.43/6.53× on sim). Run with
// -v for the table; skipped with -short (about a minute).
func TestCGSmoothRHSCause(t *testing.T) {
	if testing.Short() {
		t.Skip("host emulation of the device polynomial in three arithmetics (about a minute); run without -short")
	}
	const n = 128
	var table strings.Builder
	fmt.Fprintf(&table, "| problem | rhs | float64 CG | Unroll | float64 | fp16 | paired fp16 |\n|---|---|---|---|---|---|---|\n")
	for _, prob := range []struct {
		name string
		op   Operator
	}{{"Poisson", poisson(t, n, n)}, {"anisotropic ε=0.1", anisotropic(t, n, n, 0.1)}} {
		for _, rhs := range []string{"smooth", "random"} {
			b := smoothRHS(n, n)
			if rhs == "random" {
				b = randVec(n*n, 11)
			}
			ref, err := reference.CG(hostOp{prob.op}, b, reference.CGSettings{Tol: 1e-10, MaxIter: 100000})
			require.NoError(t, err)
			for _, k := range []int{8, 16, 32} {
				var d [3]int
				fmt.Fprintf(&table, "| %s | %s | %d | %d |", prob.name, rhs, ref.Iterations, k)
				for arith := range d {
					d[arith] = hostFCG(prob.op, b, k, arith)
					require.Positive(t, d[arith], "%s %s Unroll %d %s did not converge", prob.name, rhs, k, arithNames[arith])
					fmt.Fprintf(&table, " %d (%.2f×) |", d[arith], float64(d[arith]*(k+1))/float64(ref.Iterations))
				}
				fmt.Fprintln(&table)
				exact, fp, paired := float64(d[arithExact]), float64(d[arithFP16]), float64(d[arithPaired])
				// Paired rounding recovers float64's counts.
				require.LessOrEqual(t, paired, 1.25*exact+1, "%s %s Unroll %d: paired %v vs float64 %v", prob.name, rhs, k, paired, exact)
				if rhs == "random" {
					// fp16 rounding costs little on random right-hand sides.
					require.LessOrEqual(t, fp, 1.25*exact, "%s random Unroll %d", prob.name, k)
				} else if k <= 16 {
					// …and much on smooth ones.
					require.GreaterOrEqual(t, fp, 1.5*exact, "%s smooth Unroll %d", prob.name, k)
				}
			}
		}
		if prob.name == "Poisson" {
			// The polynomial's own cost: above the 1.5× bar in float64.
			ref, err := reference.CG(hostOp{prob.op}, smoothRHS(n, n), reference.CGSettings{Tol: 1e-10, MaxIter: 100000})
			require.NoError(t, err)
			// No width of the interval changes that: λ_lo = λ_hi/(c·k²)
			// for c from ¼ to 32 (chebC = 2), in float64 and in fp16.
			for _, c := range []float64{0.25, 0.5, 1, 2, 4, 8, 32} {
				var line [2]float64
				for i, arith := range []int{arithExact, arithFP16} {
					d := hostFCGWidth(prob.op, smoothRHS(n, n), 8, arith, c)
					require.Positive(t, d)
					line[i] = float64(d*9) / float64(ref.Iterations)
				}
				t.Logf("Poisson smooth, Unroll 8, λ_lo = λ_hi/(%g·k²): %.2f× in float64, %.2f× in fp16", c, line[0], line[1])
				require.Greater(t, line[0], 1.5, "c = %g", c)
			}
		}
	}
	t.Log("\n" + table.String())
}
