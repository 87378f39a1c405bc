package familytest

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fft"
	"github.com/anemone-go/anemone/linalg"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/nn/nntest"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/reference"
	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/sim"
)

// devices are the default simulator and every family variant, sorted.
func devices(t *testing.T) []shim.Device {
	names := []string{"sim"}
	for n := range sim.Families {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	var out []shim.Device
	for _, n := range names {
		d, err := shim.Open(n)
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		out = append(out, d)
	}
	return out
}

// TestFamilyAccuracy: the headline accuracy of each method on every
// family variant, within the bound the method states for the default
// simulator. The families differ in how a product is rounded (ties away
// on M3 and M5: at most one ulp in a tie, which random data rarely hits),
// whether subnormal products are flushed (M3: products below 2⁻¹⁴, which
// the scaling keeps operands far from), and in shapes the lowering pads
// (M1's contractions, every family's surfaces): no figure should move by
// more than rounding noise.
func TestFamilyAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 1024
	x := make([]complex128, n)
	for i := range x {
		x[i] = complex(rng.NormFloat64(), rng.NormFloat64())
	}
	want := fourier.NewCmplxFFT(n).Coefficients(nil, x)
	relErr := func(got, want []complex128) float64 {
		var e, s float64
		for i := range want {
			e += math.Pow(cmplx.Abs(got[i]-want[i]), 2)
			s += math.Pow(cmplx.Abs(want[i]), 2)
		}
		return math.Sqrt(e / s)
	}
	a := mat.NewDense(128, 128, nil)
	b := mat.NewDense(128, 128, nil)
	for i := range 128 {
		for j := range 128 {
			a.Set(i, j, rng.NormFloat64())
			b.Set(i, j, rng.NormFloat64())
		}
	}
	var ab mat.Dense
	ab.Mul(a, b)
	solveA, err := reference.RandSVD(64, 1e4, 3, false, rng)
	require.NoError(t, err)
	rhs := make([]float64, 64)
	for i := range rhs {
		rhs[i] = rng.NormFloat64()
	}
	cnn, err := nn.CNN(nn.SmallCNN.RandomWeights(1), nn.SmallCNN)
	require.NoError(t, err)
	img := make([]float64, 3*32*32)
	for i := range img {
		img[i] = rng.NormFloat64()
	}
	wantLogits, err := dataflow.Eval(cnn, map[string][]float64{"image": img})
	require.NoError(t, err)

	for _, dev := range devices(t) {
		name := dev.Info().Name
		t.Run(name, func(t *testing.T) {
			// FFT, n = 1024: FP16 about 6e-4 on sim (fp16-class, 2⁻¹¹·a few
			// stages); Compensated about 2e-9. Bounds: the package's
			// documented 1e-3 and 1e-8.
			for _, c := range []struct {
				mode  precision.Mode
				bound float64
			}{{precision.FP16, 1e-3}, {precision.Compensated, 1e-8}} {
				y, err := fft.Forward(x, &fft.Settings{Device: dev, Precision: c.mode})
				require.NoError(t, err)
				e := relErr(y, want)
				t.Logf("%s FFT 1024 %v: %.2e", name, c.mode, e)
				require.LessOrEqual(t, e, c.bound)
			}
			// MatMul 128³: FP16 about 2⁻¹¹·√log₂k ≈ 1.3e-3 normwise at most,
			// Compensated 4e-8 (documented ≤ 1e-6).
			for _, c := range []struct {
				mode  precision.Mode
				bound float64
			}{{precision.FP16, 2e-3}, {precision.Compensated, 1e-6}} {
				got, err := linalg.MatMul(a, b, &linalg.Settings{Device: dev, Precision: c.mode})
				require.NoError(t, err)
				var d mat.Dense
				d.Sub(got, &ab)
				e := mat.Norm(&d, 2) / mat.Norm(&ab, 2)
				t.Logf("%s MatMul 128 %v: %.2e", name, c.mode, e)
				require.LessOrEqual(t, e, c.bound)
			}
			// Solve, RandSVD n = 64, κ = 1e4: backward error ≤ 1e-15.
			xs, err := linalg.Solve(solveA, rhs, &linalg.Settings{Device: dev})
			require.NoError(t, err)
			op, err := reference.DenseOperator(solveA)
			require.NoError(t, err)
			be := reference.BackwardError(op, xs, rhs)
			t.Logf("%s Solve 64 κ=1e4: backward error %.2e", name, be)
			require.LessOrEqual(t, be, 1e-15)
			// The CNN: cosine ≥ 0.9999 with float64, as on sim.
			m, err := nn.Compile(cnn, &nn.Settings{Device: dev})
			require.NoError(t, err)
			out, err := m.Run(map[string][]float64{"image": img})
			require.NoError(t, err)
			got, w := out["logits"], wantLogits["logits"]
			var xy, xx, yy float64
			for i := range w {
				xy, xx, yy = xy+got[i]*w[i], xx+got[i]*got[i], yy+w[i]*w[i]
			}
			cos := xy / math.Sqrt(xx*yy)
			t.Logf("%s CNN: cosine %.7f", name, cos)
			require.GreaterOrEqual(t, cos, 0.9999)
		})
	}
}

// TestFamilyLayers runs the nn layer cases of the conformance suite on
// every family variant, within the bounds they hold on the default
// simulator.
func TestFamilyLayers(t *testing.T) {
	for _, dev := range devices(t) {
		results := nntest.CheckLayers(dev)
		require.GreaterOrEqual(t, len(results), 15, "every nn layer has a case")
		for _, r := range results {
			require.True(t, r.Pass, "%s: %s/%s: %s", dev.Info().Name, r.Op, r.Case, r.Error)
		}
	}
}
