package krylov

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// Newton–Schulz on the device: the approximate inverse that preconditions
// GMRES on a dense matrix.
const (
	// nsStop: the iteration stops once ‖I − B·X‖_F ≤ nsStop. A
	// preconditioner needs no more: the device applies X in fp16, whose
	// rounding (about 2⁻¹¹·‖X‖·‖v‖ per product) is of that order for the
	// condition numbers Newton–Schulz reaches, and each further step costs
	// two n³ products.
	nsStop = 1.0 / 32
	// nsAccept: X preconditions when ‖I − B·X‖_F < ½ (then ‖I − B·X‖₂ < ½
	// as well, and FGMRES gains at least a factor 2 per step in exact
	// arithmetic). Short of it, GMRES uses the polynomial instead.
	nsAccept = 0.5
	// nsSafety keeps the accelerated step clear of the spectrum's top: the
	// scaled eigenvalues stay below 2 − nsSafety·(1 − l) instead of 2.
	nsSafety = 0.1
	// nsLanczos Lanczos steps estimate the smallest eigenvalue of B·X.
	nsLanczos = 24
	// nsStall: in the quadratic phase, this many steps in a row without a
	// 10 % gain end the iteration (its rounding floor is reached).
	nsStall = 2
	// nsLimbs is the limb count of the Compensated products (6-bit digits):
	// a normwise product error of about 40·2⁻³⁰ ≈ 4e-8, so that
	// Newton–Schulz reaches κ ≈ 1e7 (it loses singular directions below
	// the product's error: κ·ε ≪ 1).
	nsLimbs = 5
	// nsMaxN: a dense matrix larger than this is preconditioned by the
	// polynomial instead: Newton–Schulz costs about 40 n³-products, and
	// the host keeps X (n² float64).
	nsMaxN = 1024
)

// nsReach is the largest condition number Newton–Schulz reaches in a mode
// (κ·ε ≈ 0.1 for the product error ε); it sets the step budget.
func nsReach(compensated bool) float64 {
	if compensated {
		return 1e7
	}
	return 2e3
}

// nsOutcome is what Newton–Schulz produced for B.
type nsOutcome struct {
	x        *mat.Dense // the best iterate, or nil
	resF     float64    // its ‖I − B·X‖_F
	steps    int
	products int // device products run
	device   time.Duration
	build    time.Duration
}

func (o *nsOutcome) ok() bool { return o.x != nil && o.resF < nsAccept }

// newtonSchulz approximates B⁻¹ by the Newton–Schulz iteration
// X_{k+1} = X_k·(2I − B·X_k) (Schulz 1933) with the acceleration of Pan and
// Schreiber (SIAM J. Sci. Stat. Comput. 12(5), 1991):
// X_{k+1} = β·X_k·(2I − β·B·X_k) with β = 2/(1 + l + nsSafety·(1 − l)) for
// an estimate l of the smallest eigenvalue of B·X_k. From
// X_0 = Bᵀ/min(‖B‖₁‖B‖∞, ‖B‖²_F), B·X_k is symmetric with its spectrum in
// (0, 1] (in exact arithmetic), and l comes from Lanczos on its symmetric
// part: the smallest Ritz value bounds the smallest eigenvalue from above,
// which makes β err small (safe). Both products of a step run on the
// device (fp16, or compensated limbs); the host forms 2I − β·T, its
// Frobenius residual and the Lanczos estimate, O(n²) per step.
func newtonSchulz(dev shim.Device, b *mat.Dense, compensated bool) (*nsOutcome, error) {
	n, _ := b.Dims()
	out := &nsOutcome{resF: math.Inf(1)}
	opts := precision.MatMulOptions{Mode: precision.FP16}
	if compensated {
		opts = precision.MatMulOptions{Mode: precision.Compensated, Limbs: nsLimbs}
	}
	compile := func(a *mat.Dense) (*precision.MatMulPlan, error) {
		t0 := time.Now()
		p, err := precision.NewMatMul(dev, a, n, opts)
		out.build += time.Since(t0)
		if err != nil {
			return nil, fmt.Errorf("krylov: GMRES: Newton–Schulz product: %w", errors.Join(ErrUnsupported, err))
		}
		return p, nil
	}
	apply := func(p *precision.MatMulPlan, dst *mat.Dense, rhs mat.Matrix) error {
		t0 := time.Now()
		err := p.Apply(dst, rhs)
		out.device += time.Since(t0)
		out.products++
		if err != nil {
			return fmt.Errorf("krylov: GMRES: Newton–Schulz product: %w", err)
		}
		return nil
	}
	pb, err := compile(b)
	if err != nil {
		return out, err
	}
	defer pb.Close()

	norm1, normInf, normF := mat.Norm(b, 1), mat.Norm(b, math.Inf(1)), mat.Norm(b, 2)
	x := mat.NewDense(n, n, nil)
	x.Scale(1/math.Min(norm1*normInf, normF*normF), b.T())
	t := mat.NewDense(n, n, nil)
	if err := apply(pb, t, x); err != nil {
		return out, err
	}
	reach := nsReach(compensated)
	maxSteps := int(math.Ceil(math.Log(float64(n)*reach*reach)/math.Log(3.6))) + 8
	rng := rand.New(rand.NewPCG(0x6e73, uint64(n)))
	m := mat.NewDense(n, n, nil)
	stall := 0
	for step := 0; ; step++ {
		rF := frobeniusResidual(t)
		if !finite(rF) {
			break
		}
		if rF < out.resF {
			if rF > 0.9*out.resF && out.resF < 1 {
				stall++
			} else {
				stall = 0
			}
			out.resF = rF
			out.x = mat.DenseCopyOf(x)
		} else if out.resF < 1 {
			stall++
		}
		if rF <= nsStop || stall >= nsStall || step >= maxSteps || rF > 2*out.resF {
			break
		}
		l := math.Max(0, math.Min(1, lanczosMin(t, nsLanczos, rng)))
		beta := 2 / (1 + l + nsSafety*(1-l))
		m.Scale(-beta, t)
		for i := range n {
			m.Set(i, i, m.At(i, i)+2)
		}
		px, err := compile(x)
		if err != nil {
			return out, err
		}
		xn := mat.NewDense(n, n, nil)
		err = apply(px, xn, m)
		px.Close()
		if err != nil {
			return out, err
		}
		xn.Scale(beta, xn)
		x = xn
		out.steps++
		if err := apply(pb, t, x); err != nil {
			return out, err
		}
	}
	return out, nil
}

// frobeniusResidual returns ‖I − T‖_F.
func frobeniusResidual(t *mat.Dense) float64 {
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

// lanczosMin returns the smallest Ritz value of k Lanczos steps with full
// reorthogonalization on ½(T + Tᵀ) from a random start: an upper bound of
// its smallest eigenvalue.
func lanczosMin(t *mat.Dense, k int, rng *rand.Rand) float64 {
	n, _ := t.Dims()
	k = min(k, n)
	q := make([][]float64, 0, k)
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	scaleVec(v, 1/norm2(v))
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
		scaleVec(next, 1/bj)
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

func scaleVec(x []float64, s float64) {
	for i := range x {
		x[i] *= s
	}
}
