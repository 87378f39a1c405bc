package krylov

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
)

// noiseDevice runs every program on the simulator and replaces each output
// by Gaussian noise of the same 2-norm: the ablation of the design rule
// "the device does the work".
type noiseDevice struct {
	shim.Device
	rng *rand.Rand
}

func newNoiseDevice(t testing.TB) *noiseDevice {
	return &noiseDevice{Device: simDevice(t, "sim"), rng: rand.New(rand.NewPCG(7, 7))}
}

func (d *noiseDevice) Compile(p *lower.Program) (shim.Executable, error) {
	exe, err := d.Device.Compile(p)
	if err != nil {
		return nil, err
	}
	return &noiseExe{Executable: exe, rng: d.rng}, nil
}

type noiseExe struct {
	shim.Executable
	rng *rand.Rand
}

func (e *noiseExe) Run(in [][]float32) ([][]float32, error) {
	out, err := e.Executable.Run(in)
	if err != nil {
		return out, err
	}
	for _, o := range out {
		ss, nn := 0.0, 0.0
		noise := make([]float64, len(o))
		for i, v := range o {
			ss += float64(v) * float64(v)
			noise[i] = e.rng.NormFloat64()
			nn += noise[i] * noise[i]
		}
		s := math.Sqrt(ss / nn)
		for i := range o {
			o[i] = float32(noise[i] * s)
		}
	}
	return out, nil
}

// cgCases are the problems of the ablation and host-share checks: a
// stencil in both modes with the polynomial and with its default,
// FastDiagonalization, and a dense SPD matrix in both modes.
func cgCases(t testing.TB) []struct {
	name string
	op   Operator
	mode precision.Mode
	b    []float64
	pre  Preconditioner
} {
	rng := rand.New(rand.NewPCG(100, 3))
	a, err := reference.RandSVD(64, 100, 3, true, rng)
	require.NoError(t, err)
	dense := denseOf(t, a)
	p48, p64 := poisson(t, 48, 48), poisson(t, 64, 64)
	poly48 := polynomialOf(t, p48)
	return []struct {
		name string
		op   Operator
		mode precision.Mode
		b    []float64
		pre  Preconditioner
	}{
		{"Poisson 48² FP16 polynomial", p48, precision.FP16, randVec(48*48, 1), poly48},
		{"Poisson 48² Compensated polynomial", p48, precision.Compensated, randVec(48*48, 1), poly48},
		{"Poisson 64² FP16 default (FastDiagonalization)", p64, precision.FP16, randVec(64*64, 1), nil},
		{"Poisson 64² Compensated default (FastDiagonalization)", p64, precision.Compensated, randVec(64*64, 1), nil},
		{"RandSVD 64 κ=100 FP16", dense, precision.FP16, randVec(64, 2), nil},
		{"RandSVD 64 κ=100 Compensated", dense, precision.Compensated, randVec(64, 2), nil},
	}
}

// TestCGAblation: the device's polynomial is what makes CG converge. With
// each output replaced by noise of its norm, flexible CG still reduces the
// residual (any positive direction does), but slowly: within twice the
// dispatches the honest device needs, the noise device must not reach Tol
// and must stay at least 100× above it — and it reports not converged.
func TestCGAblation(t *testing.T) {
	honest := simDevice(t, "sim")
	noisy := newNoiseDevice(t)
	for _, c := range cgCases(t) {
		t.Run(c.name, func(t *testing.T) {
			res, err := CG(c.op, c.b, &Settings{Device: honest, Precision: c.mode, Precond: c.pre})
			require.NoError(t, err)
			budget := 2 * res.Dispatches
			abl, err := CG(c.op, c.b, &Settings{Device: noisy, Precision: c.mode, Precond: c.pre, MaxDispatches: budget})
			t.Logf("honest: %d dispatches to %.2g; noise: %.3g after %d", res.Dispatches, res.Residual, abl.Residual, abl.Dispatches)
			require.ErrorIs(t, err, ErrNotConverged)
			require.False(t, abl.Converged)
			require.Greater(t, abl.Residual, 100*DefaultTol)
		})
	}
}

// bestHostShare is the least ratio of measured host time to the modeled
// engine time of the same dispatches (Stats.ModeledTime and ModeledSetup,
// lower.Estimate on ane-m1) over three solves, so that a loaded machine
// cannot make a host-share check fail by chance. The simulator's own time
// is in neither: it stands in for the engine, hundreds of times slower.
func bestHostShare(t *testing.T, solve func() (Result, error)) float64 {
	best := math.Inf(1)
	for range 3 {
		res, err := solve()
		require.NoError(t, err)
		require.Positive(t, res.ModeledTime, "every dispatch is priced")
		best = math.Min(best, float64(res.Host)/float64(res.ModeledTime+res.ModeledSetup))
	}
	return best
}

// TestCGHostShare: the host's float64 work (the residual, the step, the
// conjugation) against the modeled engine time of the same dispatches.
// For the dense matrix the device's O(n²) product dominates and the share
// is the design's bound, a quarter (measured 0.02–0.03). The 48² and 64²
// grids are where a share above a quarter is honest: each dispatch is
// floor-bound on the engine (0.22 ms on M1 for a few kilobytes of work),
// while the host's float64 passes over 2304–4096 unknowns cost the same
// order (measured 0.5–0.8, best of three on a loaded machine); the bound
// is three times that. The share falls with the grid (docs/RESULTS.md
// has it at 512² and 1024²).
func TestCGHostShare(t *testing.T) {
	dev := simDevice(t, "sim")
	for _, c := range cgCases(t) {
		t.Run(c.name, func(t *testing.T) {
			best := bestHostShare(t, func() (Result, error) {
				return CG(c.op, c.b, &Settings{Device: dev, Precision: c.mode, Precond: c.pre})
			})
			bound := 2.5
			if _, dense := c.op.(*denseOp); dense {
				bound = 0.25
			}
			t.Logf("host / modeled engine %.3f (bound %g)", best, bound)
			require.Less(t, best, bound)
		})
	}
}

// TestCGDeviceBytes: the fused stencil program moves at most 40 device
// bytes per unknown per iteration by lower.Estimate (one conv of 3 input
// and 3 output fp16 channels is 12; the packed input's and output's
// reshapes and the 1- and 3-channel ends change it by little, amortized
// over the Unroll steps).
func TestCGDeviceBytes(t *testing.T) {
	for _, c := range []struct{ n, unroll int }{{128, 8}, {128, DefaultUnroll}, {128, 32}, {512, DefaultUnroll}} {
		op := poisson(t, c.n, c.n)
		p, err := CGProgram(op, &Settings{Device: simDevice(t, "sim"), Unroll: c.unroll, Precond: polynomialOf(t, op)})
		require.NoError(t, err)
		for _, target := range []string{"ane-m1", "ane-m5"} {
			cost, err := lower.Estimate(p, target)
			require.NoError(t, err)
			per := float64(cost.Bytes) / float64(c.n*c.n) / float64(c.unroll)
			t.Logf("Poisson %d², Unroll %d, %s: %d nodes, %.2f device bytes per unknown per iteration, %v per dispatch", c.n, c.unroll, target, cost.Nodes, per, cost.Time)
			require.LessOrEqual(t, per, 40.0)
			require.GreaterOrEqual(t, per, 11.9)
		}
	}
}

// TestChebyshevDeviceMatchesHost: the device program computes the
// polynomial it was built for. Against the same polynomial in float64 on
// the fp16-rounded input: each step rounds the three channels once
// (relative u = 2⁻¹¹ of each), and an error committed in step j travels
// through the remaining steps as a fresh input would, so it reaches y
// multiplied by at most max|q| = by (chebPoly.bounds) on [0, λ_hi]. Over k
// steps, ‖δy‖ ≤ 3·k·u·by·‖r₀‖. A wrong weight, scale or step is an O(1)
// error and fails it; the measured errors are a few u of ‖y‖.
func TestChebyshevDeviceMatchesHost(t *testing.T) {
	dev := simDevice(t, "sim")
	rng := rand.New(rand.NewPCG(1e3, 9))
	a, err := reference.RandSVD(96, 1e3, 3, true, rng)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		op   Operator
		mode precision.Mode
	}{
		{"stencil", poisson(t, 20, 12), precision.FP16},
		{"anisotropic stencil", anisotropic(t, 16, 16, 0.01), precision.FP16},
		{"dense", denseOf(t, a), precision.FP16},
		{"dense compensated", denseOf(t, a), precision.Compensated},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := planCG(c.op, (&Settings{Device: dev, Precision: c.mode, Precond: polynomialOf(t, c.op)}).withDefaults(c.op.Dims()))
			require.NoError(t, err)
			exe, err := plan.program(dev)
			require.NoError(t, err)
			n := c.op.Dims()
			r := randVec(n, 3)
			e := pow2Exp(norm2(r)) + 12
			in := make([]float32, n)
			for i, v := range r {
				in[i] = float32(math.Ldexp(v, e))
			}
			in = roundFP16(in)
			rr := make([]float64, n)
			for i, v := range in {
				rr[i] = float64(v)
			}
			out, err := exe.Run([][]float32{in})
			require.NoError(t, err)
			want, tmp := make([]float64, n), make([]float64, n)
			plan.poly.apply(want, rr, func(dst, x []float64) {
				plan.dop.MulVecTo(tmp, x)
				for i := range dst {
					dst[i] = math.Ldexp(tmp[i], plan.sigma)
				}
			})
			diff := make([]float64, n)
			for i, v := range out[0] {
				diff[i] = float64(v)*plan.poly.sy - want[i]
			}
			by, _, _, _ := plan.poly.bounds()
			rel := norm2(diff) / norm2(want)
			bound := 3 * float64(plan.poly.k) * 0x1p-11 * by * norm2(rr)
			t.Logf("relative error %.3g (%.2f u) of ‖y‖; %.3g of the bound", rel, rel/0x1p-11, norm2(diff)/bound)
			require.Less(t, norm2(diff), bound)
		})
	}
}

// anisotropic is −ε·∂xx − ∂yy by the 5-point stencil on an n×m grid, unit
// spacing (h² scaled out).
func anisotropic(t testing.TB, nx, ny int, eps float64) Operator {
	op, err := Stencil2D(nx, ny, [3][3]float64{{0, -1, 0}, {-eps, 2 + 2*eps, -eps}, {0, -1, 0}})
	require.NoError(t, err)
	return op
}

// anisotropicCSR is the same operator for reference.CG.
type hostOp struct{ Operator }

func (h hostOp) Dims() int                 { return h.Operator.Dims() }
func (h hostOp) MulVecTo(dst, x []float64) { h.Operator.MulVecTo(dst, x) }

// smoothRHS is b = sin(πx)·sin(2πy)·(1 + x) sampled on the grid.
func smoothRHS(nx, ny int) []float64 {
	b := make([]float64, nx*ny)
	for j := range ny {
		for i := range nx {
			x, y := float64(i+1)/float64(nx+1), float64(j+1)/float64(ny+1)
			b[j*nx+i] = math.Sin(math.Pi*x) * math.Sin(2*math.Pi*y) * (1 + x)
		}
	}
	return b
}

// jumpDiffusion is −∇·(k∇u) with k jumping between 1 and 100 in a
// checkerboard of 4×4 blocks, as a user Operator (no Stencil2D): the
// 5-point finite-volume stencil with harmonic face means, unit spacing.
type jumpDiffusion struct {
	nx, ny int
	c      [5][]float64 // west, east, south, north, centre
}

func newJumpDiffusion(nx, ny int) *jumpDiffusion {
	k := func(x, y int) float64 {
		if (x*4/nx+y*4/ny)%2 == 0 {
			return 1
		}
		return 100
	}
	d := &jumpDiffusion{nx: nx, ny: ny}
	for i := range d.c {
		d.c[i] = make([]float64, nx*ny)
	}
	off := [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}
	for y := range ny {
		for x := range nx {
			i := y*nx + x
			kc := k(x, y)
			for dir, o := range off {
				xn, yn := x+o[0], y+o[1]
				kn := kc
				if xn >= 0 && xn < nx && yn >= 0 && yn < ny {
					kn = k(xn, yn)
				}
				face := 2 * kc * kn / (kc + kn)
				d.c[4][i] += face
				if xn >= 0 && xn < nx && yn >= 0 && yn < ny {
					d.c[dir][i] = -face
				}
			}
		}
	}
	return d
}

func (d *jumpDiffusion) Dims() int          { return d.nx * d.ny }
func (d *jumpDiffusion) Grid() (nx, ny int) { return d.nx, d.ny }

func (d *jumpDiffusion) MulVecTo(dst, u []float64) {
	for y := range d.ny {
		for x := range d.nx {
			i := y*d.nx + x
			s := d.c[4][i] * u[i]
			if x > 0 {
				s += d.c[0][i] * u[i-1]
			}
			if x < d.nx-1 {
				s += d.c[1][i] * u[i+1]
			}
			if y > 0 {
				s += d.c[2][i] * u[i-d.nx]
			}
			if y < d.ny-1 {
				s += d.c[3][i] * u[i+d.nx]
			}
			dst[i] = s
		}
	}
}

func (d *jumpDiffusion) NormInf() float64 {
	m := 0.0
	for i := range d.c[4] {
		row := 0.0
		for _, c := range d.c {
			row += math.Abs(c[i])
		}
		m = math.Max(m, row)
	}
	return m
}

func (d *jumpDiffusion) Diagonal() []float64 { return append([]float64(nil), d.c[4]...) }

// DeviceApply, on the grid (jumpDiffusion is a GridOperator): a gather
// conv with five one-hot kernels, a product with the per-point
// coefficients, a 1×1 conv that sums the five channels. Its
// intermediates are bounded by |x|·‖2^scale·A‖∞ ≤ |x|.
func (d *jumpDiffusion) DeviceApply(g *dataflow.Graph, u dataflow.Value, scale int) dataflow.Value {
	n := d.nx * d.ny
	name := func(s string) string { return weightName("jump_"+s, uint64(d.nx*100000+d.ny), scale) }
	gather, ok := g.Lookup(name("gather"))
	if !ok {
		w := make([]float64, 5*9)
		for dir, o := range [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
			w[dir*9+(1+o[1])*3+(1+o[0])] = 1
		}
		w[4*9+4] = 1
		gather = g.Const(name("gather"), dataflow.Shape{5, 1, 3, 3}, w)
	}
	coef, ok := g.Lookup(name("coef"))
	if !ok {
		w := make([]float64, 0, 5*n)
		for _, c := range d.c {
			for _, v := range c {
				w = append(w, math.Ldexp(v, scale))
			}
		}
		coef = g.Const(name("coef"), dataflow.Shape{1, 5, d.ny, d.nx}, w)
	}
	sum, ok := g.Lookup(name("sum"))
	if !ok {
		sum = g.Const(name("sum"), dataflow.Shape{1, 5, 1, 1}, []float64{1, 1, 1, 1, 1})
	}
	near := g.Conv2D(u, gather, dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}})
	return g.Conv2D(g.Mul(near, coef), sum, dataflow.Conv2DOptions{})
}

// TestCGFamilySweep is the CG family sweep: total applications of A,
// dispatches·(Unroll + 1) (Unroll on the device, one on the host), against
// float64 CG's iterations (reference.CG), to 1e-10, for random and smooth
// right-hand sides, at 128² (the jump coefficient a user GridOperator on
// the same grid). Asserted for the default settings on every row
// (FastDiagonalization for the constant stencils, the polynomial for the
// user operator) and for the polynomial at Unroll 8, 16 and 32 on random
// right-hand sides and the jump coefficient: at most 1.5×, and the
// polynomial smooth in Unroll (no Unroll more than 1.3× another's on one
// problem). The polynomial on smooth right-hand sides on the constant
// stencils is reported only:
// measured 3.75/4.43/6.53× at Unroll 8/16/32 on Poisson, 1.90/2.04/3.33×
// on ε = 0.1, 1.36–2.70× on ε ≤ 0.03 (below). Run with -v for the table.
func TestCGFamilySweep(t *testing.T) {
	if testing.Short() {
		t.Skip("family sweep (about a minute); run without -short")
	}
	dev := simDevice(t, "sim")
	const n = 128
	type problem struct {
		name string
		op   Operator
	}
	problems := []problem{{"Poisson", poisson(t, n, n)}}
	for _, eps := range []float64{1, 0.3, 0.1, 0.03, 0.01} {
		problems = append(problems, problem{fmt.Sprintf("anisotropic ε=%g", eps), anisotropic(t, n, n, eps)})
	}
	problems = append(problems, problem{"jump diffusion 1:100 (user GridOperator)", newJumpDiffusion(n, n)})
	var table strings.Builder
	var failures []string
	fmt.Fprintf(&table, "| problem | rhs | float64 CG | default | Unroll 8 | Unroll 16 | Unroll 32 |\n|---|---|---|---|---|---|---|\n")
	for _, p := range problems {
		nn := p.op.Dims()
		side := int(math.Sqrt(float64(nn)))
		for _, rhs := range []string{"random", "smooth"} {
			b := randVec(nn, 11)
			if rhs == "smooth" {
				b = smoothRHS(side, side)
			}
			ref, err := reference.CG(hostOp{p.op}, b, reference.CGSettings{Tol: 1e-10, MaxIter: 100000})
			require.NoError(t, err)
			// A smooth right-hand side on a constant-coefficient stencil
			// excites few modes, and float64 CG converges superlinearly on
			// them (96 iterations on Poisson 128², 440 for a random b). The
			// device's fp16 directions give every mode some content, which
			// the outer iteration must then clear at the random-b rate:
			// without any polynomial (Unroll 1, z = fl16(r)) Poisson takes
			// 201 dispatches, 4.2×, and 163 (3.4×) with every direction kept,
			// so no choice of polynomial reaches 1.5×. Moving λ_lo down to
			// the smallest Ritz value of the kept directions made every row
			// worse (Poisson smooth 8.3–8.5×, random 2.2–2.3×); a smaller
			// Unroll (1 … 6) gives 3.9–4.2×. Those rows are measured and
			// reported, not asserted (see CG's documentation).
			asserted := rhs == "random" || strings.HasPrefix(p.name, "jump")
			fmt.Fprintf(&table, "| %s | %s | %d |", p.name, rhs, ref.Iterations)
			// The default settings: FastDiagonalization for the constant
			// stencils, whose dispatch applies A⁻¹ once (counted as one
			// application) and the host A once; the polynomial at
			// DefaultUnroll for the user operator. Asserted on every row.
			def, err := CG(p.op, b, &Settings{Device: dev})
			require.NoError(t, err, "%s %s default", p.name, rhs)
			require.LessOrEqual(t, reference.RelResidual(hostOp{p.op}, def.X, b), 1e-10)
			defApps := def.Iterations + def.Dispatches
			defRatio := float64(defApps) / float64(ref.Iterations)
			what := "FD"
			if def.Iterations != def.Dispatches {
				what = fmt.Sprintf("Unroll %d", def.Iterations/def.Dispatches)
			}
			fmt.Fprintf(&table, " %d in %d dispatches, %s (%.3f×) |", defApps, def.Dispatches, what, defRatio)
			// The default's bound. FastDiagonalization applies A⁻¹ to
			// within δ = 8u16 of ‖r‖ per dispatch (TestFastDiagonalizationDevice's
			// bound), so the float64 outer iteration gains δ per dispatch,
			// and a residual of 1e-10 needs the error down to 1e-10/√κ
			// (κ = cot²(π/(2(n+1))) ≈ 6.7e3 for every ε: both axes' λ_min
			// and λ_max scale together): ⌈log(1e-10/√κ)/log δ⌉ = 5
			// dispatches, plus 2 (the first, from x = 0, and δ bounds the
			// 2-norm, not the A-norm the iteration contracts): D = 7, two
			// applications each (A⁻¹ on the device, A on the host):
			// ≤ 14/ref, 0.015× (ε = 0.01 random) … 0.146× (Poisson
			// smooth), against 0.011× … 0.125× measured (5–6 dispatches).
			// The user operator's default is the polynomial: its columns'
			// bound 1.5× (measured 1.19× and 1.32×).
			defMax := 1.5
			if what == "FD" {
				kappa := math.Pow(1/math.Tan(math.Pi/float64(2*(side+1))), 2)
				d := 2 + math.Ceil(math.Log(1e-10/math.Sqrt(kappa))/math.Log(8*0x1p-11))
				defMax = 2 * d / float64(ref.Iterations)
			}
			if defRatio > defMax {
				failures = append(failures, fmt.Sprintf("%s %s default: %.3f× > %.3f×", p.name, rhs, defRatio, defMax))
			}
			var ratios []float64
			for _, u := range []int{8, 16, 32} {
				res, err := CG(p.op, b, &Settings{Device: dev, Unroll: u, MaxDispatches: 2000, Precond: polynomialOf(t, p.op)})
				require.NoError(t, err, "%s %s Unroll %d", p.name, rhs, u)
				require.LessOrEqual(t, reference.RelResidual(hostOp{p.op}, res.X, b), 1e-10)
				apps := res.Dispatches * (u + 1)
				ratio := float64(apps) / float64(ref.Iterations)
				ratios = append(ratios, ratio)
				fmt.Fprintf(&table, " %d = %d·%d (%.2f×) |", apps, res.Dispatches, u+1, ratio)
				if ratio > 1.5 && asserted {
					failures = append(failures, fmt.Sprintf("%s %s Unroll %d: %.2f× > 1.5×", p.name, rhs, u, ratio))
				}
			}
			fmt.Fprintln(&table)
			lo, hi := math.Inf(1), 0.0
			for _, r := range ratios {
				lo, hi = math.Min(lo, r), math.Max(hi, r)
			}
			if hi/lo > 1.3 && asserted {
				failures = append(failures, fmt.Sprintf("not smooth in Unroll: %s %s %.2f", p.name, rhs, ratios))
			}
		}
	}
	t.Log("\n" + table.String())
	require.Empty(t, failures)
}

// TestCGPoissonLarge solves Poisson 512² (262,144 unknowns, 16 device rows'
// worth) to 1e-10 with the default preconditioner (FastDiagonalization)
// and with the polynomial, and reports dispatches, iterations, time and
// memory. Asserted for both: the residual, the error against the
// manufactured solution, the dispatches and applications, the device
// bytes per unknown per iteration and the modeled engine time (the bounds'
// derivations are below); the simulator's wall time and the heap are
// measurements of this machine, logged. The 1024² solves are
// BenchmarkCGFastDiagonalizationPoisson1024 and BenchmarkCGPoisson1024.
func TestCGPoissonLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("Poisson 512² takes a minute on the simulator; run without -short")
	}
	const n = 512
	dev := simDevice(t, "sim")
	csr, b, exact, err := reference.ManufacturedPoisson2D(n, n)
	require.NoError(t, err)
	t0 := time.Now()
	ref, err := reference.CG(csr, b, reference.CGSettings{Tol: 1e-10, MaxIter: 100000})
	refTime := time.Since(t0)
	require.NoError(t, err)
	op := poisson(t, n, n)
	lams := stencilSpectrum(t, op)
	// The error's model. At the stop the residual is the rounding the
	// last dispatches left, spread over every mode (white): its image
	// under A⁻¹ is ‖r‖·rms(1/λ), so ‖x − x*‖/‖x*‖ ≈ relres·‖b‖·rms(1/λ)/‖x*‖
	// (3.8e-3·relres here; the rigorous ‖A⁻¹‖·‖r‖ = relres·‖b‖/(λ_min·‖x*‖)
	// is 1.5·relres, 390× looser). Measured 1.34–1.36× the model (the
	// residual leans a little to the low modes, which A⁻¹ amplifies
	// most): bound 3×.
	inv2 := 0.0
	for _, l := range lams {
		inv2 += 1 / (l * l)
	}
	errPerRes := norm2(b) * math.Sqrt(inv2/float64(len(lams))) / norm2(exact)
	for _, c := range []struct {
		name string
		pre  Preconditioner
	}{
		{"default (FastDiagonalization)", nil},
		{"polynomial", polynomialOf(t, op)},
	} {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		res, err := CG(op, b, &Settings{Device: dev, Precond: c.pre})
		wall := time.Since(start)
		require.NoError(t, err, c.name)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		relres := reference.RelResidual(csr, res.X, b)
		plan, err := planCG(op, (&Settings{Device: dev, Precond: c.pre}).withDefaults(op.Dims()))
		require.NoError(t, err)
		g, err := plan.graph()
		require.NoError(t, err)
		p5, err := lower.Lower(g, lower.TargetM5)
		require.NoError(t, err)
		cost5, err := lower.Estimate(p5, "ane-m5")
		require.NoError(t, err)
		// Applications of A or A⁻¹: the device's steps and the host's one
		// per dispatch, as in the sweep.
		apps := res.Iterations + res.Dispatches
		t.Logf("Poisson %d², %s: %d dispatches, %d device iterations, %d applications of A (float64 CG %d, %.2f×), residual %.2g, error %.2g; wall %v (build %v, device %v, host %v); %.1f device B/unknown per iteration, %.0f per solve; modeled M1 %v, M5 %v; float64 CG %v; heap in use after %.0f MiB, %.0f MiB allocated",
			n, c.name, res.Dispatches, res.Iterations, apps, ref.Iterations, float64(apps)/float64(ref.Iterations),
			relres, reference.RelErr(res.X, exact), wall, res.Build, res.Device, res.Host,
			float64(res.DeviceBytes)/float64(n*n*res.Iterations), float64(res.DeviceBytes)/float64(n*n), res.ModeledTime, time.Duration(res.Dispatches)*cost5.Time, refTime,
			float64(after.HeapInuse)/(1<<20), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
		require.LessOrEqual(t, relres, 1e-10, c.name)
		relerr := reference.RelErr(res.X, exact)
		t.Logf("%s: error %.2g, model %.2g (%.2f×)", c.name, relerr, relres*errPerRes, relerr/(relres*errPerRes))
		require.LessOrEqual(t, relerr, 3*relres*errPerRes, c.name)
		// The modeled engine time is the cost model's price of one
		// dispatch (the program lowered for the simulator, ane-m1) times
		// the dispatches.
		p1, err := CGProgram(op, &Settings{Device: dev, Precond: c.pre})
		require.NoError(t, err)
		cost1, err := lower.Estimate(p1, "ane-m1")
		require.NoError(t, err)
		require.Equal(t, time.Duration(res.Dispatches+res.Retries)*cost1.Time, res.ModeledTime, c.name)
		perIter := float64(res.DeviceBytes) / float64(n*n*res.Iterations)
		if c.pre == nil {
			// The sweep's bound for FastDiagonalization (TestCGFamilySweep):
			// δ = 8u16 gained per dispatch, the error down to 1e-10/√κ,
			// κ = cot²(π/(2(n+1))) = 1.07e5: ⌈log(1e-10/√κ)/log δ⌉ = 6,
			// plus 2: D = 8 dispatches, 16 applications (measured 8, 16;
			// the table's 0.01× of float64 CG). 32 + 6q device bytes per
			// unknown per dispatch with q = 1 (TestFastDiagonalizationDeviceBytes):
			// 38.
			kappa := math.Pow(1/math.Tan(math.Pi/float64(2*(n+1))), 2)
			d := 2 + int(math.Ceil(math.Log(1e-10/math.Sqrt(kappa))/math.Log(8*0x1p-11)))
			require.LessOrEqual(t, res.Dispatches, d, c.name)
			require.LessOrEqual(t, apps, 2*d, c.name)
			require.InDelta(t, 38, perIter, 0.05, c.name)
			continue
		}
		// The polynomial: the classical PCG bound of its Chebyshev
		// polynomial (Unroll 16 on [λ_hi/512, λ_hi]) on Poisson's
		// spectrum, with the fp16 rounding of its vectors
		// (pcgDispatchBound): 319 dispatches, 17 applications each, 3.1×
		// float64 CG's 1,739; measured 161 (2,737, 1.57×, 2.0× below):
		// this smooth b converges superlinearly, as in
		// TestCGSmoothRHSCause. One conv per step reads and writes the
		// three fp16 channels of the state, 12 bytes per unknown; the 1-
		// and 3-channel ends, once per dispatch, add under 1/16 of a step.
		d := pcgDispatchBound(plan.poly, lams, math.Ldexp(1, plan.sigma), roundedDelta(plan.poly.k, 0x1p-11), 1e-10)
		t.Logf("%s: the classical bound %d dispatches, %d applications (%.2f×)", c.name, d, d*(plan.poly.k+1), float64(d*(plan.poly.k+1))/float64(ref.Iterations))
		require.LessOrEqual(t, res.Dispatches, d, c.name)
		require.LessOrEqual(t, apps, d*(plan.poly.k+1), c.name)
		require.GreaterOrEqual(t, perIter, 12.0, c.name)
		require.LessOrEqual(t, perIter, 12.75, c.name)
	}
}

// TestCGKappa1e6 is the κ = 1e6 case, SPD RandSVD, in both modes (every
// row's residual, dispatches and modeled M1 time asserted):
// the float64 outer iteration reaches 1e-10 with the device's polynomial
// in FP16 mode already (fl16(A)'s eigenvalues near zero are wrong, but the
// polynomial is positive on them, and the outer loop multiplies by A in
// float64). n = 512 with ANEMONE_LONG (Compensated takes minutes on the
// simulator); n = 128 otherwise; skipped with -short.
func TestCGKappa1e6(t *testing.T) {
	n := 128
	if os.Getenv("ANEMONE_LONG") != "" {
		n = 512
	} else if testing.Short() {
		t.Skip("κ = 1e6 takes seconds; run without -short (ANEMONE_LONG=1 for n = 512)")
	}
	rng := rand.New(rand.NewPCG(1e6, 9))
	a, err := reference.RandSVD(n, 1e6, 3, true, rng)
	require.NoError(t, err)
	b := randVec(n, 5)
	aop, err := reference.DenseOperator(a)
	require.NoError(t, err)
	t0 := time.Now()
	ref, err := reference.CG(aop, b, reference.CGSettings{Tol: 1e-10, MaxIter: 100000})
	refTime := time.Since(t0)
	require.NoError(t, err)
	op := denseOf(t, a)
	dev := simDevice(t, "sim")
	for _, mode := range []precision.Mode{precision.FP16, precision.Compensated} {
		for _, u := range []int{16, 64} {
			if n > 128 && mode == precision.Compensated && u == 16 {
				continue // about 1500 dispatches of 16 compensated products: many minutes
			}
			set := &Settings{Device: dev, Unroll: u, MaxDispatches: 4000, Precision: mode}
			res, err := CG(op, b, set)
			require.NoError(t, err, "%v Unroll %d", mode, u)
			relres := reference.RelResidual(aop, res.X, b)
			// The classical PCG bound of the plan's polynomial (its
			// interval from the host's Lanczos estimate) on the scaled
			// operator's spectrum (pcgDispatchBound, the vectors' fp16
			// rounding as δ): n = 512, 1037 dispatches at Unroll 16 and
			// 299 at 64 (measured 803, 223 and 217 Compensated, 0.73–0.77
			// of it); n = 128, 1036 and 296 (0.64–0.69). The A the
			// polynomial applies is fl16(A) in FP16 mode, off by u16·‖A‖
			// ≫ λ_min; q(λ) is flat below the interval, so the small
			// eigenvalues' μ barely moves, as the counts show.
			plan, err := planCG(op, set.withDefaults(n))
			require.NoError(t, err)
			bound := pcgDispatchBound(plan.poly, denseSpectrum(t, plan.dop), math.Ldexp(1, plan.sigma), roundedDelta(u, 0x1p-11), 1e-10)
			t.Logf("RandSVD n=%d κ=1e6 %v Unroll %d: %d dispatches, %d device iterations (float64 CG %d iterations, %v), residual %.2g; device %v, host %v (share %.3f), modeled M1 %v; classical bound %d dispatches (%.2f of it)",
				n, mode, u, res.Dispatches, res.Iterations, ref.Iterations, refTime, relres, res.Device, res.Host, float64(res.Host)/float64(res.Device), res.ModeledTime, bound, float64(res.Dispatches)/float64(bound))
			require.LessOrEqual(t, relres, 1e-10)
			require.LessOrEqual(t, res.Dispatches, bound, "%v Unroll %d", mode, u)
			// The host share (host/device wall time) is logged, not
			// asserted: no test asserts on wall-clock time. The modeled
			// M1 time is the program's price times the dispatches.
			p1, err := CGProgram(op, set)
			require.NoError(t, err)
			cost1, err := lower.Estimate(p1, "ane-m1")
			require.NoError(t, err)
			require.Equal(t, time.Duration(res.Dispatches+res.Retries)*cost1.Time, res.ModeledTime, "%v Unroll %d", mode, u)
		}
	}
}

// denseSpectrum returns the eigenvalues of a symmetric dense operator.
func denseSpectrum(t testing.TB, a Operator) []float64 {
	d, ok := a.(*denseOp)
	require.True(t, ok, "a Dense operator")
	sym := mat.NewSymDense(d.n, nil)
	for i := range d.n {
		for j := i; j < d.n; j++ {
			sym.SetSym(i, j, d.a[i*d.n+j])
		}
	}
	var eig mat.EigenSym
	require.True(t, eig.Factorize(sym, false))
	return eig.Values(nil)
}
