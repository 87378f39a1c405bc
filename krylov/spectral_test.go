package krylov

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
)

// TestFastDiagonalizationInverse: the host form of the preconditioner is
// A⁻¹ in float64 (A·M⁻¹·r = r to 1e-12) for 5- and 9-point stencils on
// square, one-point and one-row grids.
func TestFastDiagonalizationInverse(t *testing.T) {
	for name, c := range map[string][3][3]float64{
		"Laplacian":   {{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}},
		"anisotropic": {{0, -1, 0}, {-0.01, 2.02, -0.01}, {0, -1, 0}},
		"9-point":     {{-1, -4, -1}, {-4, 20, -4}, {-1, -4, -1}},
		"shifted":     {{0, -1e4, 0}, {-1e4, 4e4 + 1, -1e4}, {0, -1e4, 0}},
	} {
		for _, g := range [][2]int{{1, 1}, {1, 9}, {9, 1}, {17, 12}, {40, 40}} {
			op, err := Stencil2D(g[0], g[1], c)
			require.NoError(t, err)
			pre, err := FastDiagonalization(op)
			require.NoError(t, err)
			r := randVec(op.Dims(), 4)
			z, az := make([]float64, len(r)), make([]float64, len(r))
			pre.ApplyTo(z, r)
			op.MulVecTo(az, z)
			for i := range az {
				az[i] -= r[i]
			}
			require.Less(t, norm2(az)/norm2(r), 1e-12, "%s on %v", name, g)
		}
	}
}

// TestFastDiagonalizationDevice: the device program applies
// 2^shift·scale·A⁻¹ to an input CG has scaled by 2^−shift.
// Each of its four 1×1 convs is an orthogonal transform; its fp16 weights
// (relative error u/2 each, u = 2⁻¹¹), rounded products and rounded
// outputs add at most about 1.5u of its input's norm, and the product
// with M (scaled by 2^shift, the input by 2^−shift) adds u/2, so
// ‖z − scale·A⁻¹·r‖₂ ≤ 8u·‖r‖₂ with room.
// A wrong transform, ordering or eigenvalue is an O(‖z‖) error; for a
// smooth r, ‖z‖ is well above the bound, so the check would see one.
func TestFastDiagonalizationDevice(t *testing.T) {
	for _, variant := range []string{"sim", "sim-narrow"} {
		dev := simDevice(t, variant)
		for _, g := range [][2]int{{20, 12}, {64, 64}, {300, 256}} {
			op, err := Stencil2D(g[0], g[1], [3][3]float64{{0, -1, 0}, {-0.1, 2.2, -0.1}, {0, -1, 0}})
			require.NoError(t, err)
			pre, err := FastDiagonalization(op)
			require.NoError(t, err)
			plan, err := planCG(op, (&Settings{Device: dev, Precond: pre}).withDefaults(op.Dims()))
			require.NoError(t, err)
			exe, err := plan.program(dev)
			require.NoError(t, err)
			n := op.Dims()
			for _, smooth := range []bool{false, true} {
				r := randVec(n, 6)
				if smooth {
					r = smoothRHS(g[0], g[1])
				}
				e := pow2Exp(norm2(r)) + 12 - plan.inputShift() // as CG scales it
				in := make([]float32, n)
				rr := make([]float64, n)
				for i, v := range r {
					in[i] = float32(math.Ldexp(v, e))
				}
				in = roundFP16(in)
				for i, v := range in {
					rr[i] = float64(v)
				}
				out, err := exe.Run([][]float32{in})
				require.NoError(t, err)
				want := make([]float64, n)
				pre.ApplyTo(want, rr)
				sp := pre.(*spectral)
				c := math.Ldexp(sp.scale, sp.shift) // z = 2^shift·scale·A⁻¹·(the input)
				diff := make([]float64, n)
				for i, v := range out[0] {
					diff[i] = float64(v) - c*want[i]
				}
				rel := norm2(diff) / math.Ldexp(norm2(rr), sp.shift)
				zn := sp.scale * norm2(want) / norm2(rr)
				t.Logf("%s %v smooth=%v (shift %d): ‖z − scale·A⁻¹r‖ = %.3g·‖r‖ (%.2f u); ‖z‖ = %.3g·‖r‖", variant, g, smooth, sp.shift, rel, rel/0x1p-11, zn)
				require.Less(t, rel, 8*0x1p-11)
				if smooth {
					require.Greater(t, zn, 10*8*0x1p-11, "a wrong z must be visible above the bound")
				}
			}
		}
	}
}

// TestCGFastDiagonalization: with FastDiagonalization, CG reaches 1e-10
// in a handful of dispatches on every constant-coefficient row of the
// family sweep, random and smooth right-hand sides alike, on both
// simulator variants: each dispatch applies A⁻¹ to fp16 accuracy, so the
// float64 outer iteration gains a fixed factor per dispatch. Applications
// of A (one on the host per dispatch, none on the device) are then a few
// per cent of float64 CG's iterations; the device work is reported beside
// them. 128² without -short, 64² with it. Run with -v for the table.
func TestCGFastDiagonalization(t *testing.T) {
	n := 128
	if testing.Short() {
		n = 64
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| problem | rhs | float64 CG | dispatches (sim / sim-narrow) | applications | device MFLOP per solve | modeled M1 / M5 per solve |\n|---|---|---|---|---|---|---|\n")
	for _, eps := range []float64{1, 0.3, 0.1, 0.03, 0.01} {
		op := anisotropic(t, n, n, eps)
		pre, err := FastDiagonalization(op)
		require.NoError(t, err)
		for _, rhs := range []string{"random", "smooth"} {
			b := randVec(n*n, 11)
			if rhs == "smooth" {
				b = smoothRHS(n, n)
			}
			ref, err := reference.CG(hostOp{op}, b, reference.CGSettings{Tol: 1e-10, MaxIter: 100000})
			require.NoError(t, err)
			var d [2]int
			var wide Result
			for i, variant := range []string{"sim", "sim-narrow"} {
				res, err := CG(op, b, &Settings{Device: simDevice(t, variant), Precond: pre})
				require.NoError(t, err, "ε = %g %s %s", eps, rhs, variant)
				require.LessOrEqual(t, reference.RelResidual(hostOp{op}, res.X, b), 1e-10)
				require.LessOrEqual(t, res.Dispatches, 8, "ε = %g %s %s", eps, rhs, variant)
				d[i] = res.Dispatches
				if i == 0 {
					wide = res
				}
			}
			require.LessOrEqual(t, float64(wide.Dispatches), 1.5*float64(ref.Iterations))
			m1, m5 := modeledDispatch(t, op, pre)
			fmt.Fprintf(&table, "| ε = %g | %s | %d | %d / %d | %d (%.3f×) | %.1f | %v / %v |\n", eps, rhs, ref.Iterations, d[0], d[1],
				wide.Dispatches, float64(wide.Dispatches)/float64(ref.Iterations), float64(wide.DeviceFlops)/1e6,
				(time.Duration(wide.Dispatches) * m1).Round(time.Microsecond), (time.Duration(wide.Dispatches) * m5).Round(time.Microsecond))
		}
	}
	t.Log("\n" + table.String())
}

// modeledDispatch is the modeled engine time of one CG dispatch with pre,
// the program lowered for M1 and for M5.
func modeledDispatch(t *testing.T, op Operator, pre Preconditioner) (m1, m5 time.Duration) {
	plan, err := planCG(op, (&Settings{Precond: pre}).withDefaults(op.Dims()))
	require.NoError(t, err)
	var out [2]time.Duration
	for i, target := range []lower.Target{lower.TargetM1, lower.TargetM5} {
		g, err := plan.graph()
		require.NoError(t, err)
		p, err := lower.Lower(g, target)
		require.NoError(t, err)
		c, err := lower.Estimate(p, target.Name)
		require.NoError(t, err)
		out[i] = c.Time
	}
	return out[0], out[1]
}

// TestFastDiagonalizationErrors: what FastDiagonalization cannot invert is
// refused with the reason, and a preconditioner made for one operator is
// refused for another.
func TestFastDiagonalizationErrors(t *testing.T) {
	_, err := FastDiagonalization(denseOf(t, mat.NewDense(2, 2, []float64{2, 0, 0, 2})))
	require.ErrorIs(t, err, ErrInput)
	asym, err := Stencil2D(4, 4, [3][3]float64{{0, -1, 0}, {-1, 4, -2}, {0, -1, 0}})
	require.NoError(t, err)
	_, err = FastDiagonalization(asym)
	require.ErrorIs(t, err, ErrInput)
	indef, err := Stencil2D(4, 4, [3][3]float64{{0, -1, 0}, {-1, 1, -1}, {0, -1, 0}})
	require.NoError(t, err)
	_, err = FastDiagonalization(indef)
	require.ErrorIs(t, err, ErrNotSPD)
	wide, err := Stencil2D(MaxSpectralSide+1, 2, [3][3]float64{{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}})
	require.NoError(t, err)
	_, err = FastDiagonalization(wide)
	require.ErrorIs(t, err, ErrUnsupported)
	a, b := poisson(t, 8, 8), poisson(t, 8, 8)
	pre, err := FastDiagonalization(a)
	require.NoError(t, err)
	_, err = CG(b, randVec(64, 1), &Settings{Precond: pre})
	require.ErrorIs(t, err, ErrInput)
	_, err = GMRES(a, randVec(64, 1), &Settings{Precond: pre})
	require.ErrorIs(t, err, ErrInput)
}

// TestFastDiagonalizationDeviceBytes: a FastDiagonalization dispatch on a
// square grid moves 32 + 6q device bytes per unknown by lower.Estimate:
// four 1×1 convs reading and writing one fp16 value per unknown and a
// sine matrix of side² values (6 bytes each), two transposes (4 each) and
// q products with M's factors (6 each), the last conv writing the output
// surface. Poisson up to 1024² needs q = 1 (M scaled into fp16's normal
// range, the input scaled down to match): 38 bytes, within the 40 a
// stencil CG iteration may move. Where n² fp16 values are below the
// engine's minimum surface (49152 bytes: n = 128), the lowering widens
// the surfaces' rows to a stride S > n, and a slice reading and writing
// the band (4 bytes) and a pad reading it and writing the surface (2 +
// 2·S/n bytes) come with them.
func TestFastDiagonalizationDeviceBytes(t *testing.T) {
	sides := []int{128, 512}
	if !testing.Short() {
		sides = append(sides, 1024)
	}
	for _, n := range sides {
		op := poisson(t, n, n)
		pre, err := FastDiagonalization(op)
		require.NoError(t, err)
		f := pre.(*spectral)
		require.Equal(t, 1, f.q, "Poisson %d²: one product with M", n)
		// The scaled M's entries are normal and at most 2^shift, and the
		// input's scale 2^−shift keeps the product's norm at ‖r‖'s.
		lo, hi := math.Inf(1), 0.0
		for _, v := range f.m {
			lo, hi = math.Min(lo, math.Ldexp(v, f.shift)), math.Max(hi, math.Ldexp(v, f.shift))
		}
		require.GreaterOrEqual(t, lo, 0x1p-14)
		require.LessOrEqual(t, hi, math.Ldexp(1, f.shift))
		require.Less(t, math.Ldexp(lo, -1), 0x1p-14, "shift %d is the least", f.shift)
		p, err := CGProgram(op, &Settings{Precond: pre})
		require.NoError(t, err)
		for _, target := range []string{"ane-m1", "ane-m5"} {
			c, err := lower.Estimate(p, target)
			require.NoError(t, err)
			per := float64(c.Bytes) / float64(n*n)
			t.Logf("Poisson %d², %s: %.2f device bytes per unknown per dispatch (shift %d, q = %d), %v per dispatch", n, target, per, f.shift, f.q, c.Time)
			want := 32 + 6*float64(f.q)
			if stride := p.InputSurfaces[0].Stride(); stride > n {
				want += 4 + 2 + 2*float64(stride)/float64(n)
			}
			require.InDelta(t, want, per, 0.01)
		}
	}
}

// TestCGFastDiagonalizationTrivial: the identity stencil, one point, a
// zero right-hand side and an exact X0, each with FastDiagonalization.
func TestCGFastDiagonalizationTrivial(t *testing.T) {
	dev := simDevice(t, "sim")
	for _, c := range []struct {
		name   string
		nx, ny int
		st     [3][3]float64
	}{
		{"identity 6×5", 6, 5, [3][3]float64{{0, 0, 0}, {0, 1, 0}, {0, 0, 0}}},
		{"4·identity 1×1", 1, 1, [3][3]float64{{0, 0, 0}, {0, 4, 0}, {0, 0, 0}}},
		{"Laplacian 1×1", 1, 1, [3][3]float64{{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}}},
		{"Laplacian 1×30", 1, 30, [3][3]float64{{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}}},
	} {
		op, err := Stencil2D(c.nx, c.ny, c.st)
		require.NoError(t, err)
		pre, err := FastDiagonalization(op)
		require.NoError(t, err, c.name)
		b := randVec(op.Dims(), 2)
		res, err := CG(op, b, &Settings{Device: dev, Precond: pre})
		require.NoError(t, err, c.name)
		require.LessOrEqual(t, reference.RelResidual(hostOp{op}, res.X, b), DefaultTol, c.name)
		res, err = CG(op, make([]float64, len(b)), &Settings{Device: dev, Precond: pre})
		require.NoError(t, err)
		require.Equal(t, make([]float64, len(b)), res.X)
		exact := make([]float64, len(b))
		pre.ApplyTo(exact, b)
		res, err = CG(op, b, &Settings{Device: dev, Precond: pre, X0: exact})
		require.NoError(t, err)
		require.Zero(t, res.Dispatches, "%s: an X0 that solves it needs no dispatch", c.name)
	}
}

// TestCGDefaultPreconditioner: a nil Precond is FastDiagonalization for a
// stencil it accepts, made once (a re-solve compiles nothing and builds
// no graph), and the polynomial for a stencil it refuses and for a dense
// matrix; Polynomial(a) gives the polynomial everywhere, and shares the
// program of a nil Precond where that is the polynomial.
func TestCGDefaultPreconditioner(t *testing.T) {
	dev := simDevice(t, "sim")
	compiles := func() int { return dev.(*shim.Cache).Stats().Compiles }
	lap := [3][3]float64{{0, -1, 0}, {-1, 4, -1}, {0, -1, 0}}
	square, err := Stencil2D(40, 40, lap)
	require.NoError(t, err)
	wide, err := Stencil2D(MaxSpectralSide+76, 2, lap) // a side past MaxSpectralSide
	require.NoError(t, err)
	skew, err := Stencil2D(30, 30, [3][3]float64{{-0.5, -1, 0}, {-1, 6, -1}, {0, -1, -0.5}}) // symmetric, not about the axes
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		op   Operator
		fd   bool
	}{
		{"Laplacian 40²", square, true},
		{"Laplacian 1100×2", wide, false},
		{"skew 9-point 30²", skew, false},
		{"dense", denseOf(t, mat.NewDiagDense(3, []float64{1, 2, 3})), false},
	} {
		b := randVec(c.op.Dims(), 3)
		before := compiles()
		res, err := CG(c.op, b, &Settings{Device: dev})
		require.NoError(t, err, c.name)
		require.LessOrEqual(t, reference.RelResidual(hostOp{c.op}, res.X, b), DefaultTol, c.name)
		if c.fd {
			require.Equal(t, res.Dispatches, res.Iterations, "%s: one application of A⁻¹ per dispatch", c.name)
		} else {
			require.Equal(t, res.Dispatches*DefaultUnroll, res.Iterations, "%s: the polynomial", c.name)
		}
		require.Equal(t, before+1, compiles(), c.name)
		again, err := CG(c.op, b, &Settings{Device: dev})
		require.NoError(t, err)
		require.Equal(t, res.Dispatches, again.Dispatches)
		require.Equal(t, before+1, compiles(), "%s: the re-solve reuses the program", c.name)

		poly, err := CG(c.op, b, &Settings{Device: dev, Precond: polynomialOf(t, c.op)})
		require.NoError(t, err, c.name)
		require.Equal(t, poly.Dispatches*DefaultUnroll, poly.Iterations, "%s: Polynomial", c.name)
		want := before + 1
		if c.fd {
			want++ // the polynomial's own program
		}
		require.Equal(t, want, compiles(), c.name)
	}
	_, err = Polynomial(nil)
	require.ErrorIs(t, err, ErrShape)
	poly := polynomialOf(t, square)
	_, err = GMRES(square, randVec(square.Dims(), 1), &Settings{Device: dev, Precond: poly})
	require.ErrorIs(t, err, ErrInput, "GMRES takes no preconditioner")
	z := make([]float64, 3)
	poly.ApplyTo(z, []float64{1, -2, 3})
	require.Equal(t, []float64{1, -2, 3}, z, "M = I")
}
