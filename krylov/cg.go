package krylov

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// CG solves A·x = b for a symmetric positive definite operator A by
// flexible conjugate gradients in float64 on the host (Notay 2000,
// "Flexible conjugate gradients", SIAM J. Sci. Comput. 22(4)), each
// dispatch applying a preconditioner on the device in fp16; the float64
// outer iteration absorbs the device's rounding, so it costs iterations,
// never accuracy.
//
// Precond nil means FastDiagonalization(a) for a Stencil2D it accepts
// (symmetric about both axes, positive definite, sides up to
// MaxSpectralSide): the stencil's exact inverse by sine transforms, 5–10
// dispatches to 1e-10. For every other operator it means the device
// polynomial (Polynomial): Unroll steps (1 … MaxUnroll, default 16) of
// the Chebyshev iteration on a Gershgorin interval of A, a dot-free
// program with constant coefficients (Saad 2003, Alg. 12.1); the host
// keeps FCGTruncation directions. Jacobi scales A symmetrically first.
// Compensated (or Float64) applies a dense A from limb-split digits; a
// user Operator has no compensated form. docs/KRYLOV.md has the design
// and what each choice costs; docs/RESULTS.md the measured counts.
//
// CG uses Tol, Unroll, MaxDispatches, Precond, Precision, X0, Device and
// Trace; it ignores Restart. It stops when the host's relative residual
// reaches Tol (Converged, nil error); otherwise it returns the best
// iterate it met (never worse than x = 0) with an error wrapping
// ErrNotConverged: MaxDispatches spent, stagnation, divergence, NaN, or a
// direction of zero curvature. ErrShape and ErrInput report bad input;
// ErrNotSPD a zero operator, a negative diagonal entry, a nonsymmetric
// Stencil2D or Dense (symmetric to 1e-8 of √(a_ii·a_jj)), negative
// curvature or an overflowing polynomial; ErrUnsupported a problem past
// the device's limits. b = 0 gives x = 0; b of any finite magnitude is
// scaled by a power of two first.
func CG(a Operator, b []float64, s *Settings) (Result, error) {
	set := s.withDefaults(dims(a))
	if err := checkVectors("CG", a, b, set); err != nil {
		return Result{}, err
	}
	plan, err := planCG(a, set)
	if err != nil {
		return Result{}, err
	}
	return solve(a, b, set, plan.loop)
}

// MaxUnroll bounds Settings.Unroll: a CG program holds one step per
// iteration (a conv for a stencil, a handful of ops otherwise), and its
// build time and memory grow with it; past a few hundred steps the
// polynomial gains nothing that the outer iteration would not.
const MaxUnroll = 256

// FCGTruncation is m, the number of earlier search directions the host
// keeps and makes each new direction A-conjugate to (Notay's FCG(m)): the
// host holds 2m vectors, a direction and its image each.
const FCGTruncation = 8

// Device programs for CG.
const (
	progStencil  = iota // the fused conv program on the grid
	progGeneric         // elementwise ops around DeviceApply on [1, n]
	progSpectral        // FastDiagonalization's transforms on the grid
)

// cgPlan is what CG derives from the operator and the settings before it
// runs: the operator the device applies, its scalings and its polynomial.
type cgPlan struct {
	dop   Operator  // the operator whose polynomial the device applies: S·A·S, or A
	sdiag []float64 // S (host), or nil: z = S·q(B)·S·r
	// devDiag: for a user operator with Jacobi, S is applied on the device
	// around DeviceApply (as ŝ = 2^−sExp·S, entries ≤ 1); nil otherwise.
	devDiag     []float64
	sExp        int
	sigma       int     // B = 2^σ·dop (2^σ·S·A·S with devDiag)
	hi          float64 // ‖B‖∞ bound, in [½, 1)
	kind        int
	shape       dataflow.Shape // the device vectors' shape (generic programs)
	spectral    *spectral      // FastDiagonalization, or nil
	poly        *chebPoly
	compensated bool
	zeroDiag    int // index of a zero diagonal entry of A, or −1
	set         Settings
	// normB is ‖S·A·S‖∞ (a bound of it) when sdiag is set: the host's
	// curvature test measures pᵀAp = uᵀ(S·A·S)u for u = S⁻¹·p against it.
	normB float64
	// general: FastDiagonalization runs in the general FCG loop, not the
	// lean one (for tests that compare the two).
	general bool
}

func planCG(a Operator, set Settings) (*cgPlan, error) {
	if err := checkCommon("CG", a, set); err != nil {
		return nil, err
	}
	if set.Unroll < 0 || set.Unroll > MaxUnroll {
		return nil, fmt.Errorf("krylov: CG: Unroll %d is out of range: use 1 … %d iterations per dispatch (0 for the default %d): %w", set.Unroll, MaxUnroll, DefaultUnroll, ErrInput)
	}
	norm, err := checkNorm("CG", a)
	if err != nil {
		return nil, err
	}
	if norm == 0 {
		return nil, fmt.Errorf("krylov: CG: the operator is zero (NormInf() = 0): %w", ErrNotSPD)
	}
	n := a.Dims()
	plan := &cgPlan{dop: a, zeroDiag: -1, set: set}
	plan.compensated, _ = isCompensated(set.Precision)
	// An SPD matrix has a positive diagonal: a negative (or NaN) entry
	// proves A indefinite before any dispatch. A zero entry makes a
	// semidefinite A singular; CG then runs and reports what it reached.
	diag := a.Diagonal()
	if len(diag) == n {
		for i, v := range diag {
			if v < 0 || math.IsNaN(v) {
				return nil, fmt.Errorf("krylov: CG needs a symmetric positive definite operator; diagonal entry %d is %g: %w", i, v, ErrNotSPD)
			}
			if v == 0 && plan.zeroDiag < 0 {
				plan.zeroDiag = i
			}
		}
	}
	st, isStencil := a.(*stencilOp)
	d, isDense := a.(*denseOp)
	// A nonsymmetric Stencil2D or Dense is refused here, where it is
	// cheap to see, rather than after MaxDispatches of a CG that cannot
	// converge (or converges at many times GMRES's cost).
	switch {
	case isStencil:
		if i, j, ok := st.asymmetry(); !ok {
			return nil, fmt.Errorf("krylov: CG needs a symmetric positive definite operator; the stencil is not symmetric: c[%d][%d] = %g but c[%d][%d] = %g (a symmetric stencil has c[i][j] = c[2−i][2−j]): use GMRES for a nonsymmetric operator: %w", i, j, st.c[i][j], 2-i, 2-j, st.c[2-i][2-j], ErrNotSPD)
		}
	case isDense:
		if i, j, ok := d.asymmetry(); !ok {
			return nil, fmt.Errorf("krylov: CG needs a symmetric positive definite operator; the matrix is not symmetric: entry (%d, %d) is %g but (%d, %d) is %g (they may differ by %g of √(a_ii·a_jj)): use GMRES for a nonsymmetric matrix: %w", i, j, d.a[i*d.n+j], j, i, d.a[j*d.n+i], symmetryTol, ErrNotSPD)
		}
	}
	bound := norm
	if set.Precond == nil && isStencil {
		// The default for a stencil FastDiagonalization accepts is its
		// exact inverse, made once per operator (the program key names it).
		if fd := st.defaultSpectral(); fd != nil {
			plan.set.Precond = fd
		}
	}
	switch pre := plan.set.Precond.(type) {
	case nil, polynomial:
		// A badly scaled dense matrix is scaled by powers of two, exactly.
		if sop, sd := symmetricScaling(a); sop != nil {
			plan.dop, plan.sdiag, bound = sop, sd, sop.NormInf()
		}
	case *jacobi:
		switch {
		case isStencil || pre.constant():
			// A constant diagonal: D^(−½)·A·D^(−½) is a multiple of A, and
			// the polynomial (and the solve) does not depend on the scale.
		case isDense:
			plan.dop, plan.sdiag = pre.scaledDense(d)
			bound = plan.dop.NormInf()
		default:
			if len(pre.inv) != n {
				return nil, fmt.Errorf("krylov: CG: the Jacobi preconditioner has %d entries, operator has %d: %w", len(pre.inv), n, ErrShape)
			}
			// ‖S·A·S‖∞ ≤ max(s)²·‖A‖∞.
			s, peak := pre.sqrtInv()
			plan.sdiag = s
			plan.sExp = pow2Exp(peak) // ŝ = 2^sExp·S has entries in (0, 1)
			plan.devDiag = make([]float64, n)
			for i, v := range s {
				plan.devDiag[i] = math.Ldexp(v, plan.sExp)
			}
			bound = norm * peak * peak
		}
	case *spectral:
		if pre.op != a {
			return nil, fmt.Errorf("krylov: CG: Settings.Precond is a FastDiagonalization of another operator (make it from the one you solve with): %w", ErrInput)
		}
		plan.spectral = pre
	default:
		return nil, fmt.Errorf("krylov: CG: Settings.Precond must come from Polynomial, Jacobi or FastDiagonalization (got %T): the device polynomial needs a symmetric scaling of A whose spectrum it can bound; scale the operator yourself instead: %w", set.Precond, ErrInput)
	}
	if math.IsInf(bound, 0) || !(bound > 0) {
		return nil, fmt.Errorf("krylov: CG: the scaled operator's ‖·‖∞ bound is %g: %w", bound, ErrInput)
	}
	plan.normB = bound
	plan.sigma = pow2Exp(bound)
	plan.hi = math.Ldexp(bound, plan.sigma)
	var denseLo float64 // a dense operator's Lanczos interval start, scaled
	if _, dense := plan.dop.(*denseOp); dense && plan.spectral == nil && sharpDenseBound {
		// A Gershgorin bound of a dense matrix can lie far above its
		// spectrum (‖A‖∞ = 29 for a spectrum in [0.5, 1.5]), and an
		// interval reaching far below it wastes the polynomial's steps:
		// take the Lanczos interval on the host, once per operator (the
		// scaling σ stays with ‖·‖∞, which bounds every device vector).
		if lo, hi := lanczosInterval(plan.dop, lanczosSteps, lanczosMargin, 0x6c616d); hi > 0 && lo > 0 {
			plan.hi = math.Min(plan.hi, math.Ldexp(hi, plan.sigma))
			denseLo = math.Ldexp(lo, plan.sigma)
		}
	}
	k := set.Unroll
	switch {
	case plan.spectral != nil:
		plan.kind = progSpectral // no polynomial
	case isStencil && plan.dop == a:
		plan.kind = progStencil
		if lam, ok := st.lambdaMin(); ok && lam > 0 {
			plan.poly = newChebPolyAbove(k, plan.hi, math.Ldexp(lam, plan.sigma))
		} else {
			plan.poly = newChebPoly(k, plan.hi)
		}
	default:
		plan.kind = progGeneric
		if denseLo > 0 {
			plan.poly = newChebPolyAbove(k, plan.hi, denseLo)
		} else {
			plan.poly = newChebPoly(k, plan.hi)
		}
		if plan.shape, err = deviceShape("CG", plan.dop); err != nil {
			return nil, err
		}
		if plan.compensated {
			if err := compensatedSupported(plan.dop, plan.sigma); err != nil {
				return nil, err
			}
		}
	}
	return plan, nil
}

// steps is the device's work per dispatch in the unit Result.Iterations
// counts: Unroll applications of A, or one application of A⁻¹
// (FastDiagonalization).
func (p *cgPlan) steps() int {
	if p.kind == progSpectral {
		return 1
	}
	return p.set.Unroll
}

// program returns the compiled CG program for the plan on dev.
func (p *cgPlan) program(dev shim.Device) (*compiled, error) {
	pre := p.set.Precond
	if _, ok := pre.(polynomial); ok {
		pre = nil // the same program as no preconditioner
	}
	key := programKey{solver: "cg", dev: dev, op: p.dop, pre: pre, steps: p.steps(), sigma: p.sigma, compensated: p.compensated && p.kind == progGeneric}
	return programs.get(key, fmt.Sprintf("CG program for n = %d", p.dop.Dims()), p.graph)
}

// graph builds the plan's device polynomial.
func (p *cgPlan) graph() (*dataflow.Graph, error) {
	switch p.kind {
	case progSpectral:
		g := dataflow.New()
		st := p.spectral.op
		r := g.Input("r", dataflow.Shape{1, st.ny, 1, st.nx}) // the grid's rows as channels: same order
		g.Output("y", p.spectral.DeviceApply(g, r))
		return g, g.Err()
	case progStencil:
		return stencilChebGraph(p.dop.(*stencilOp), p.poly, p.sigma), nil
	}
	var comp func(shift int) (applier, error)
	if p.compensated {
		// The stored d channel has ‖·‖∞ ≤ chebChannelMax: the digit split
		// wants |p| ≤ ν.
		appliers := map[int]applier{}
		comp = func(shift int) (applier, error) {
			if f, ok := appliers[shift]; ok {
				return f, nil
			}
			f, err := compensatedApplier(p.dop, p.sigma+shift, chebChannelMax)
			appliers[shift] = f
			return f, err
		}
	}
	var applyErr error
	apply := func(g *dataflow.Graph, x dataflow.Value, shift int) (dataflow.Value, dataflow.Value) {
		if comp != nil {
			f, err := comp(shift)
			if err != nil {
				applyErr = err
				return x, dataflow.Value{}
			}
			return f(g, x)
		}
		if p.devDiag == nil {
			return p.dop.DeviceApply(g, x, p.sigma+shift), dataflow.Value{}
		}
		s, ok := g.Lookup("cg_sdiag")
		if !ok {
			s = g.Const("cg_sdiag", p.shape, p.devDiag)
		}
		// 2^σ·S·A·S = 2^(σ−2·sExp)·ŝ·A·ŝ.
		y := p.dop.DeviceApply(g, g.Mul(x, s), p.sigma-2*p.sExp+shift)
		return g.Mul(y, s), dataflow.Value{}
	}
	g, err := genericChebGraph(p.shape, p.poly, apply)
	if applyErr != nil {
		return nil, applyErr
	}
	return g, err
}

// CGProgram returns the program one dispatch of CG(a, b, s) runs, as CG
// builds it (for s.Device's target; s may be nil), for inspection and
// pricing: lower.Estimate(p, "ane-m5") models its engine time. A later CG
// with the same operator and settings reuses it.
func CGProgram(a Operator, s *Settings) (*lower.Program, error) {
	set := s.withDefaults(dims(a))
	plan, err := planCG(a, set)
	if err != nil {
		return nil, err
	}
	dev, err := device(set)
	if err != nil {
		return nil, err
	}
	exe, err := plan.program(dev)
	if err != nil {
		return nil, err
	}
	return exe.Program(), nil
}

// inputShift is how many binades below chebInputNorm the host puts the
// device's input: FastDiagonalization's scaled M (see factors), else 0.
func (p *cgPlan) inputShift() int {
	if p.kind != progSpectral {
		return 0
	}
	return p.spectral.shift
}

// truncation is FCG's m for the plan.
func (p *cgPlan) truncation() int {
	if p.kind == progSpectral {
		return fdTruncation
	}
	return FCGTruncation
}

// fdTruncation is FCG's m with FastDiagonalization: its preconditioner is
// A⁻¹ up to fp16 rounding, so two kept directions take as few dispatches
// as eight (32 in all over Poisson and ε = 0.1, 0.01 at 128², smooth and
// random, measured for m = 2, 4 and 8; 35 for m = 1) at a quarter of the
// host's conjugation work.
const fdTruncation = 2
