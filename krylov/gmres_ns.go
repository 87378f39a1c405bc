package krylov

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/internal/newtonschulz"
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
	modeled  time.Duration // modeled engine time of the products
	compile  time.Duration // modeled compile time of the programs compiled
	build    time.Duration
}

func (o *nsOutcome) ok() bool { return o.x != nil && o.resF < nsAccept }

// newtonSchulz approximates B⁻¹ by the Newton–Schulz iteration
// X_{k+1} = X_k·(2I − B·X_k) (Schulz 1933) with the acceleration of Pan and
// Schreiber (SIAM J. Sci. Stat. Comput. 12(5), 1991):
// X_{k+1} = β·X_k·(2I − β·B·X_k) with β = 2/(1 + l + 0.1·(1 − l)) for
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
	// Both products are n×n by n×n: one program, compiled once per size
	// and mode, whose left operand is resident and rewritten (B once, X
	// every step).
	compile := func() (*precision.MatMulPlan, error) {
		t0 := time.Now()
		p, err := precision.NewMatMulShape(dev, n, n, n, opts)
		out.build += time.Since(t0)
		if err == nil {
			out.compile += p.Compiled().Modeled
		}
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
		out.modeled += p.Cost().Time
		if err != nil {
			return fmt.Errorf("krylov: GMRES: Newton–Schulz product: %w", err)
		}
		return nil
	}
	pb, err := compile()
	if err != nil {
		return out, err
	}
	defer pb.Close()
	if err := pb.SetA(b); err != nil {
		return out, fmt.Errorf("krylov: GMRES: Newton–Schulz product: %w", err)
	}
	px, err := compile()
	if err != nil {
		return out, err
	}
	defer px.Close()
	res, err := newtonschulz.Run(b, newtonschulz.Config{Stop: nsStop, Reach: nsReach(compensated), Seed: 0x6e73}, newtonschulz.Products{
		MulB: func(dst, x *mat.Dense) error { return apply(pb, dst, x) },
		MulX: func(dst, x, m *mat.Dense) error {
			if err := px.SetA(x); err != nil {
				return fmt.Errorf("krylov: GMRES: Newton–Schulz product: %w", err)
			}
			return apply(px, dst, m)
		},
	})
	out.x, out.resF, out.steps = res.X, res.ResF, res.Steps
	return out, err
}
