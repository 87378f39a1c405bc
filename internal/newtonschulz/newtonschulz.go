// Package newtonschulz is the host half of the accelerated Newton–Schulz
// iteration X_{k+1} = β·X_k·(2I − β·B·X_k) that approximates B⁻¹ (Schulz
// 1933; Ben-Israel 1965; the acceleration of Pan and Schreiber, SIAM J.
// Sci. Stat. Comput. 12(5), 1991, §3): the start, the float64 residual
// ‖I − B·X‖_F, the Lanczos estimate behind β and the stopping rule. The
// two products of every step run wherever the caller says — on the device,
// for linalg's inverses and krylov's GMRES preconditioner.
//
// X_0 = Bᵀ/min(‖B‖₁‖B‖∞, ‖B‖²_F) puts the spectrum of B·X_0 in (0, 1]
// (Ben-Israel and Cohen 1966) and every later step keeps it there; in
// exact arithmetic B·X_k stays symmetric. β = 2/(1 + l + Safety·(1 − l))
// for l the smallest Ritz value of Lanczos steps on sym(B·X_k): an upper
// bound of its smallest eigenvalue, so β errs small (safe), and the small
// eigenvalues grow about ×4 a step instead of ×2.
package newtonschulz

import (
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"
)

const (
	// Safety keeps the accelerated step clear of the spectrum's top: the
	// scaled spectrum β·[l, 1] is mapped below 2 − Safety·(1 − l), so
	// eigenvalues slightly above 1 (rounding) stay below 2.
	Safety = 0.1
	// Lanczos is the number of Lanczos steps that estimate l.
	Lanczos = 24
	// Stall: in the quadratic phase (‖I − B·X‖_F < 1) this many steps in
	// a row without a 10 % gain end the iteration (the rounding floor
	// κ·ε of the products is reached).
	Stall = 2
)

// Config tunes one run.
type Config struct {
	Stop  float64 // stop once ‖I − B·X‖_F ≤ Stop
	Reach float64 // the largest condition number the products keep; sets the step budget
	Seed  uint64  // of the Lanczos start vectors
}

// Products are the two products of a step, dst = B·x with B fixed, and
// dst = x·m with x new every step. Host, when not nil, receives the time
// of each stretch of host work.
type Products struct {
	MulB func(dst, x *mat.Dense) error
	MulX func(dst, x, m *mat.Dense) error
	Host func(time.Duration)
}

// Result is the best iterate of a run.
type Result struct {
	X       *mat.Dense // the iterate with the smallest residual, nil if none was finite
	ResF    float64    // its ‖I − B·X‖_F
	Steps   int        // steps taken (two products each, after the first B·X_0)
	History []float64  // ‖I − B·X‖_F of every iterate
}

// Run iterates from X_0 until the residual reaches c.Stop, stalls, grows,
// turns non-finite or the budget (about log₃.₆(n·Reach²) + 8 steps) is
// spent. On a product's error it returns the best iterate so far with it.
func Run(b *mat.Dense, c Config, p Products) (Result, error) {
	n, _ := b.Dims()
	res := Result{ResF: math.Inf(1)}
	host := func(start time.Time) {
		if p.Host != nil {
			p.Host(time.Since(start))
		}
	}
	start := time.Now()
	norm1, normInf, normF := mat.Norm(b, 1), mat.Norm(b, math.Inf(1)), mat.Norm(b, 2)
	x := mat.NewDense(n, n, nil)
	x.Scale(1/math.Min(norm1*normInf, normF*normF), b.T())
	host(start)

	t := mat.NewDense(n, n, nil)
	if err := p.MulB(t, x); err != nil {
		return res, err
	}
	maxSteps := int(math.Ceil(math.Log(float64(n)*c.Reach*c.Reach)/math.Log(3.6))) + 8
	rng := rand.New(rand.NewPCG(c.Seed, uint64(n)))
	m := mat.NewDense(n, n, nil)
	stall := 0
	for step := 0; ; step++ {
		start = time.Now()
		rF := ResidualF(t)
		res.History = append(res.History, rF)
		host(start)
		if math.IsNaN(rF) || math.IsInf(rF, 0) {
			break
		}
		if rF < res.ResF {
			if rF > 0.9*res.ResF && res.ResF < 1 {
				stall++
			} else {
				stall = 0
			}
			res.ResF = rF
			res.X = mat.DenseCopyOf(x)
		} else if res.ResF < 1 {
			stall++
		}
		if rF <= c.Stop || stall >= Stall || step >= maxSteps || rF > 2*res.ResF {
			break
		}
		start = time.Now()
		l := math.Max(0, math.Min(1, LanczosMin(t, Lanczos, rng)))
		beta := 2 / (1 + l + Safety*(1-l))
		m.Scale(-beta, t) // M = 2I − β·T
		for i := range n {
			m.Set(i, i, m.At(i, i)+2)
		}
		host(start)
		xn := mat.NewDense(n, n, nil)
		if err := p.MulX(xn, x, m); err != nil {
			return res, err
		}
		xn.Scale(beta, xn)
		x = xn
		res.Steps++
		if err := p.MulB(t, x); err != nil {
			return res, err
		}
	}
	return res, nil
}

// ResidualF returns ‖I − T‖_F.
func ResidualF(t *mat.Dense) float64 {
	n, _ := t.Dims()
	s := 0.0
	for i := range n {
		for j, v := range t.RawRowView(i) {
			if i == j {
				v = 1 - v
			}
			s += v * v
		}
	}
	return math.Sqrt(s)
}

// LanczosMin returns the smallest Ritz value of k Lanczos steps with full
// reorthogonalization on ½(T + Tᵀ) from a random start: an upper bound of
// its smallest eigenvalue.
func LanczosMin(t *mat.Dense, k int, rng *rand.Rand) float64 {
	n, _ := t.Dims()
	k = min(k, n)
	q := make([][]float64, 0, k)
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	scale(v, 1/norm2(v))
	q = append(q, v)
	var alpha, beta []float64
	w, wt := make([]float64, n), make([]float64, n)
	for j := range k {
		mat.NewVecDense(n, w).MulVec(t, mat.NewVecDense(n, q[j]))
		mat.NewVecDense(n, wt).MulVec(t.T(), mat.NewVecDense(n, q[j]))
		for i := range w {
			w[i] = (w[i] + wt[i]) / 2
		}
		a := dot(w, q[j])
		alpha = append(alpha, a)
		for range 2 {
			for _, qi := range q {
				c := dot(w, qi)
				for i := range w {
					w[i] -= c * qi[i]
				}
			}
		}
		bj := norm2(w)
		if j == k-1 || !(bj > 1e-14*math.Abs(a)) {
			break
		}
		beta = append(beta, bj)
		next := append([]float64(nil), w...)
		scale(next, 1/bj)
		q = append(q, next)
	}
	tri := mat.NewSymDense(len(alpha), nil)
	for i, a := range alpha {
		tri.SetSym(i, i, a)
		if i < len(beta) && i+1 < len(alpha) {
			tri.SetSym(i, i+1, beta[i])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(tri, false) {
		return 0
	}
	lo := math.Inf(1)
	for _, v := range eig.Values(nil) {
		lo = math.Min(lo, v)
	}
	return lo
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func norm2(a []float64) float64 { return math.Sqrt(dot(a, a)) }

func scale(a []float64, s float64) {
	for i := range a {
		a[i] *= s
	}
}
