package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/anemone-go/anemone/precision"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// normBlock is the block size of Norm2's subspace iteration.
const normBlock = 8

// Norm2 returns the spectral norm ‖A‖₂ = σ_max(A) of an m×n matrix.
//
// Subspace (block power) iteration on AᵀA: the device applies A and then
// Aᵀ to a block of p = min(8, n) orthonormal vectors (two products a
// step, in Compensated mode by default), the host orthonormalizes the
// result in float64 (modified Gram–Schmidt; the vectors are thereby
// rescaled between applications) and computes the Rayleigh–Ritz values
// from W = A·V in float64: σ_max ≈ √λ_max(WᵀW), a p×p eigenproblem. The
// device's rounding only perturbs the subspace, and the Rayleigh quotient's
// error is second order in that perturbation, so the value is
// float64-class while the device's products are merely compensated (Golub
// and Van Loan, Matrix Computations, 4th ed., §8.2.4 and §8.3.7). The block
// makes the rate (σ_{p+1}/σ_1)² per step instead of (σ_2/σ_1)².
//
// The iteration runs on 2⁻ᵉ·A, where 2ᵉ is the power of two just above
// the largest |a_ij| (found on the host), so every entry is at most 1 in
// magnitude, and the result is scaled back by 2ᵉ. Both scalings are exact
// (an entry that falls below float64's subnormal range in 2⁻ᵉ·A is smaller
// than 2⁻¹⁰⁷⁴·‖A‖_max and cannot move σ_max by a relative 1e-10), so the
// accuracy is the same at every scale, from subnormal entries to 1e308:
// neither the Gram matrix WᵀW of the Rayleigh–Ritz step nor the device's
// fp16 scaling sees the magnitude of A.
//
// It stops when the Ritz value changes by less than Tol relative (default
// DefaultNormTol = 1e-13) between two steps; MaxDispatches reached first is
// ErrNotConverged with the best value. On the simulator the result is
// within 1e-10 relative of gonum's SVD under both numerics models (the
// narrow device's 3-bit compensated products carry the same 30 bits), in
// the Compensated and Float64 modes; with Precision FP16 the subspace
// carries fp16's error and the Ritz value about its square, 1e-8; a
// looser Tol gives what it asks for. A zero matrix gives 0.
// Errors: ErrShape (nil or empty), ErrRange (NaN or ±Inf in A; ‖A‖₂ above
// math.MaxFloat64; or ‖A‖₂ below 2⁻¹⁰⁷⁴·1e10 ≈ 4.9e-314, deep in the
// subnormal range where float64's own spacing is coarser than 1e-10
// relative — scale A by a power of two first and scale the result back).
func Norm2(a mat.Matrix, s *Settings) (float64, error) {
	const fn = "Norm2"
	cfg, err := resolve(fn, s)
	if err != nil {
		return 0, err
	}
	defer cfg.stats.finish()
	_, n, err := checkMatrix(fn, "a", a)
	if err != nil {
		return 0, err
	}
	u, e := scaleToUnit(a)
	if u == nil {
		return 0, nil
	}
	su, err := norm2Unit(fn, cfg, u, n, e)
	// The Ritz values were of 2⁻ᵉ·A; the caller's are 2ᵉ times larger.
	for i, h := range cfg.stats.History {
		cfg.stats.History[i] = math.Ldexp(h, e)
	}
	sigma := math.Ldexp(su, e)
	if err != nil {
		return sigma, err
	}
	if math.IsInf(sigma, 0) {
		return sigma, fmt.Errorf("linalg: Norm2: ‖A‖₂ = %.17g·2^%d exceeds math.MaxFloat64; scale A down (by a power of two, exactly) and scale the result back: %w",
			su, e, ErrRange)
	}
	if sigma < minNorm2 {
		return sigma, fmt.Errorf("linalg: Norm2: ‖A‖₂ = %.17g·2^%d ≈ %.3g is below %.3g, where float64's subnormal spacing 2^-1074 exceeds 1e-10 relative; scale A up (by a power of two, exactly) and scale the result back: %w",
			su, e, sigma, minNorm2, ErrRange)
	}
	return sigma, nil
}

// minNorm2 is the smallest spectral norm Norm2 returns: below it the
// float64 spacing 2⁻¹⁰⁷⁴ of subnormals is more than 1e-10 relative.
const minNorm2 = 0x1p-1074 * 1e10

// scaleToUnit returns 2⁻ᵉ·a as a dense copy and e, where 2ᵉ is the
// smallest power of two above max |a_ij|, so the copy's largest entry is in
// [1/2, 1). A zero matrix gives nil. Multiplying by a power of two is exact
// except for entries that underflow, which are below 2⁻¹⁰⁷⁴·‖a‖_max.
func scaleToUnit(a mat.Matrix) (*mat.Dense, int) {
	m, n := a.Dims()
	amax := 0.0
	for i := range m {
		for j := range n {
			amax = math.Max(amax, math.Abs(a.At(i, j)))
		}
	}
	if amax == 0 {
		return nil, 0
	}
	_, e := math.Frexp(amax)
	d := mat.NewDense(m, n, nil)
	for i := range m {
		for j := range n {
			d.Set(i, j, math.Ldexp(a.At(i, j), -e))
		}
	}
	return d, e
}

// norm2Unit is Norm2's subspace iteration on a matrix whose largest entry
// is in [1/2, 1), 2⁻ᵉ times the caller's: its messages give values in the
// caller's scale.
func norm2Unit(fn string, cfg *config, a *mat.Dense, n, e int) (float64, error) {
	caller := func(h []float64) []float64 {
		out := make([]float64, len(h))
		for i, v := range h {
			out[i] = math.Ldexp(v, e)
		}
		return out
	}
	tol := cfg.tol
	if tol == 0 {
		tol = DefaultNormTol
	}
	mode := productMode(cfg.mode)
	cfg.stats.Mode = mode
	p := min(normBlock, n)
	pa, err := newPlan(fn, cfg, a, p, mode)
	if err != nil {
		return 0, err
	}
	defer pa.close()
	at := mat.DenseCopyOf(a.T())
	pt, err := newPlan(fn, cfg, at, p, mode)
	if err != nil {
		return 0, err
	}
	defer pt.close()

	hostStart := time.Now()
	rng := rand.New(rand.NewPCG(0x6e6f726d, uint64(n)))
	v := mat.NewDense(n, p, nil)
	for i := range n {
		for j := range p {
			v.Set(i, j, rng.NormFloat64())
		}
	}
	orthonormalize(v)
	cfg.stats.Host += time.Since(hostStart)
	prev := 0.0
	best := 0.0
	for {
		hostStart = time.Now()
		// Rayleigh–Ritz in float64: σ² = λ_max(VᵀAᵀAV).
		var w mat.Dense
		w.Mul(a, v)
		var g mat.SymDense
		g.SymOuterK(1, w.T())
		var eig mat.EigenSym
		if !eig.Factorize(&g, true) {
			return best, fmt.Errorf("linalg: Norm2: the %d×%d Ritz eigenproblem failed: %w", p, p, ErrNotConverged)
		}
		vals := eig.Values(nil)
		sigma := math.Sqrt(math.Max(0, vals[len(vals)-1]))
		// Rotate V to the Ritz vectors, so the block keeps its best
		// direction first.
		var vecs mat.Dense
		eig.VectorsTo(&vecs)
		var vr mat.Dense
		vr.Mul(v, &vecs)
		v = &vr
		cfg.stats.History = append(cfg.stats.History, sigma)
		best = math.Max(best, sigma)
		cfg.stats.Host += time.Since(hostStart)
		if math.IsNaN(sigma) {
			return best, fmt.Errorf("linalg: Norm2: Ritz value NaN after %d steps: %w", cfg.stats.Refinements, ErrNotConverged)
		}
		if prev > 0 && math.Abs(sigma-prev) <= tol*sigma {
			return sigma, nil
		}
		prev = sigma
		if cfg.stats.Dispatches+pa.dispatches()+pt.dispatches() > cfg.budget {
			return best, fmt.Errorf("linalg: Norm2: MaxDispatches = %d reached, Ritz values %s, last change %.3g relative (tolerance %g): %w",
				cfg.budget, fmtHistory(caller(cfg.stats.History)), math.Abs(sigma-cfg.stats.History[max(0, len(cfg.stats.History)-2)])/sigma, tol, ErrNotConverged)
		}
		var y, z mat.Dense
		if err := pa.apply(fn, &y, v); err != nil {
			return best, err
		}
		// The device's y = A·V must give the host's Ritz value to the
		// product's accuracy: a device that does not compute A·V would
		// otherwise leave V unchanged and the Ritz value "converged".
		hostStart = time.Now()
		var gy mat.SymDense
		gy.SymOuterK(1, y.T())
		var ey mat.EigenSym
		if ey.Factorize(&gy, false) {
			vy := ey.Values(nil)
			sy := math.Sqrt(math.Max(0, vy[len(vy)-1]))
			if d := math.Abs(sy - sigma); !(d <= normCheck(mode)*sigma) {
				cfg.stats.Host += time.Since(hostStart)
				return best, fmt.Errorf("linalg: Norm2: the device's A·V gives σ = %.6g where the host's float64 A·V gives %.6g (relative difference %.2g, more than the %v product's %.0e): %w",
					math.Ldexp(sy, e), math.Ldexp(sigma, e), d/sigma, mode, normCheck(mode), ErrDevice)
			}
		}
		cfg.stats.Host += time.Since(hostStart)
		if err := pt.apply(fn, &z, &y); err != nil {
			return best, err
		}
		hostStart = time.Now()
		orthonormalize(&z)
		v = &z
		cfg.stats.Refinements++
		cfg.stats.Host += time.Since(hostStart)
	}
}

// normCheck bounds the relative difference between the largest singular
// value of the device's A·V and of the host's, for V orthonormal: the
// product's normwise error, about 2⁻¹¹·√(log₂ k) for FP16 (a wide
// accumulator; ten times that on a narrow one) and 4e-8 for Compensated,
// with a margin of about 30 so that only a wrong device trips it.
func normCheck(mode precision.Mode) float64 {
	if mode == precision.FP16 {
		return 0.1
	}
	return 1e-5
}

// orthonormalize replaces the columns of v by an orthonormal basis of
// their span (modified Gram–Schmidt, twice). A column that vanishes (its
// norm falls below 1e-10 of what it was: it lies in the span of the
// columns before it to working precision) is replaced by a unit vector
// e_k orthogonalized against the columns before it, the first k from j on
// whose remainder has norm at least 1/2 (one exists when n ≥ 2j, since the
// remainders' squared norms sum to n − j; otherwise the largest found), so
// the block stays orthonormal even when A has rank below the block size.
func orthonormalize(v *mat.Dense) {
	n, p := v.Dims()
	col := make([]float64, n)
	project := func(j int) float64 {
		for pass := 0; pass < 2; pass++ {
			for i := range j {
				c := 0.0
				for r := range n {
					c += col[r] * v.At(r, i)
				}
				for r := range n {
					col[r] -= c * v.At(r, i)
				}
			}
		}
		return math.Sqrt(floats.Dot(col, col))
	}
	for j := range p {
		mat.Col(col, j, v)
		n0 := math.Sqrt(floats.Dot(col, col))
		nr := project(j)
		if !(nr > 1e-10*n0) || n0 == 0 {
			bestK, bestNr := j%n, -1.0
			for t := range n {
				k := (j + t) % n
				clear(col)
				col[k] = 1
				if nr = project(j); nr > bestNr {
					bestK, bestNr = k, nr
				}
				if nr >= 0.5 {
					break
				}
			}
			clear(col)
			col[bestK] = 1
			nr = project(j)
		}
		for r := range n {
			v.Set(r, j, col[r]/nr)
		}
	}
}
