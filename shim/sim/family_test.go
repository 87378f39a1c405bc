package sim

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// familyDot is y = x·w for x [1, k] and w [k, 1], both inputs, lowered
// for t.
func familyDot(t *testing.T, k int, target lower.Target) *lower.Program {
	t.Helper()
	g := dataflow.New()
	x := g.Input("x", dataflow.Shape{1, k})
	w := g.Input("w", dataflow.Shape{k, 1})
	g.Output("y", g.MatMul(x, w, false, false))
	p, err := lower.Lower(g, target)
	require.NoError(t, err)
	return p
}

// runDot runs familyDot on dev and returns y.
func runDot(t *testing.T, dev *Device, p *lower.Program, x, w []float32) (float32, error) {
	t.Helper()
	exe, err := dev.Compile(p)
	require.NoError(t, err)
	out, err := exe.Run([][]float32{x, w})
	if out == nil {
		return 0, err
	}
	return out[0][0], err
}

// TestFamilyInnerMultiple: on M1 a matmul whose contraction is not a
// multiple of 32 returns zeros. sim-m1 does so for a program that does
// not pad it, and the lowering for ane-m1 pads it with zero terms, which
// gives the default simulator's result bit for bit.
func TestFamilyInnerMultiple(t *testing.T) {
	const k = 20
	x, w := make([]float32, k), make([]float32, k)
	for i := range k {
		x[i], w[i] = float32(i+1)/8, float32(k-i)/16
	}
	m1 := NewFamily("sim-m1", engine.M1)
	unpadded := engine.M1
	unpadded.InnerMultiple = 0
	got, err := runDot(t, m1, familyDot(t, k, unpadded), x, w)
	require.NoError(t, err)
	require.Zero(t, got, "an unpadded contraction of 20 is zeros on M1")

	want, err := runDot(t, New(Wide), familyDot(t, k, lower.TargetSim), x, w)
	require.NoError(t, err)
	require.NotZero(t, want)
	got, err = runDot(t, m1, familyDot(t, k, lower.TargetM1), x, w)
	require.NoError(t, err)
	require.Equal(t, want, got, "lowered for M1, the contraction is padded to 32 and the result is the model's")
	require.ErrorIs(t, lower.Lint(familyDot(t, k, unpadded), lower.TargetM1), lower.ErrLint, "the lint sees an unpadded contraction")
}

// TestFamilySurfaceMinimum: every family, and the strict default, refuses
// surfaces below about 49 KB; a program lowered for the family meets it
// and runs.
func TestFamilySurfaceMinimum(t *testing.T) {
	small := lower.TargetSim
	small.MinSurfaceBytes = 0
	devices := map[string]*Device{"sim": New(Wide)}
	targets := map[string]lower.Target{"sim": lower.TargetSim}
	for name, target := range Families {
		devices[name], targets[name] = NewFamily(name, target), target
	}
	for name, dev := range devices {
		target := targets[name]
		_, err := dev.Compile(familyDot(t, 32, small))
		require.ErrorIs(t, err, shim.ErrUnsupported, name)
		require.Contains(t, err.Error(), "49152 bytes", name)
		p := familyDot(t, 32, target)
		for _, s := range append(append([]lower.Surface{}, p.InputSurfaces...), p.OutputSurfaces...) {
			require.GreaterOrEqual(t, 2*s.Size(), target.MinSurfaceBytes, "%s surface %v", name, s.Shape)
		}
		x, w := make([]float32, 32), make([]float32, 32)
		for i := range x {
			x[i], w[i] = 1, float32(i)
		}
		got, err := runDot(t, dev, p, x, w)
		require.NoError(t, err, name)
		require.Equal(t, float32(31*32/2), got, name)
	}
}

// TestFamilyPartialSum: on M3 a sum reaching 2¹⁵ returns zero where the
// other families return ±Inf past 32752 (or, for a partial sum only, the
// finite total).
func TestFamilyPartialSum(t *testing.T) {
	const k = 32
	m3 := NewFamily("sim-m3", engine.M3)
	sim := New(Wide)
	p, p3 := familyDot(t, k, lower.TargetSim), familyDot(t, k, lower.TargetM3)
	ones := make([]float32, k)
	for i := range ones {
		ones[i] = 1
	}
	over := make([]float32, k)
	over[0], over[1] = 20000, 20000 // total 40000: past the cliff
	v, err := runDot(t, sim, p, over, ones)
	require.ErrorIs(t, err, shim.ErrRange)
	require.True(t, math.IsInf(float64(v), 1))
	v, err = runDot(t, m3, p3, over, ones)
	require.NoError(t, err)
	require.Zero(t, v, "M3: a sum reaching 2¹⁵ is zero")

	partial := make([]float32, k)
	partial[0], partial[1], partial[2] = 20000, 20000, -30000 // partial sum 40000, total 10000
	v, err = runDot(t, sim, p, partial, ones)
	require.NoError(t, err)
	require.Equal(t, float32(10000), v, "only the output counts on the default model")
	v, err = runDot(t, m3, p3, partial, ones)
	require.NoError(t, err)
	require.Zero(t, v, "M3: a partial sum reaching 2¹⁵ is zero")
}

// TestFamilyProductRounding: M3 and M5 round a product that is a tie
// between two fp16 values away from zero, M1 (and the default) to even;
// M3 flushes a subnormal product to zero, the others keep it.
func TestFamilyProductRounding(t *testing.T) {
	// A pair of fp16 values whose exact product is a tie that ties-to-even
	// rounds toward zero, found by search.
	var a, b float32
	for i := 1025; i < 2048 && a == 0; i++ {
		for j := 1025; j < 2048; j++ {
			x, y := float64(i)/1024, float64(j)/1024
			p := x * y
			if e, o := fp16.Round64(p), fp16.RoundAway(p); e != o && math.Abs(p-e) == math.Abs(p-o) {
				a, b = float32(x), float32(y)
				break
			}
		}
	}
	require.NotZero(t, a, "a tie exists among products of [1, 2)")
	p := float64(a) * float64(b)
	even, away := float32(fp16.Round64(p)), float32(fp16.RoundAway(p))
	require.Less(t, even, away)

	const k = 32
	x, w := make([]float32, k), make([]float32, k)
	x[0], w[0] = a, b
	for _, c := range []struct {
		dev    *Device
		target lower.Target
		want   float32
	}{
		{New(Wide), lower.TargetSim, even},
		{NewFamily("sim-m1", engine.M1), lower.TargetM1, even},
		{NewFamily("sim-m3", engine.M3), lower.TargetM3, away},
		{NewFamily("sim-m5", engine.M5), lower.TargetM5, away},
	} {
		got, err := runDot(t, c.dev, familyDot(t, k, c.target), x, w)
		require.NoError(t, err)
		require.Equal(t, c.want, got, c.dev.Info().Name)
	}

	x[0], w[0] = 0x1p-8, 0x1p-8 // 2⁻¹⁶: an fp16 subnormal
	got, err := runDot(t, New(Wide), familyDot(t, k, lower.TargetSim), x, w)
	require.NoError(t, err)
	require.Equal(t, float32(0x1p-16), got, "the default model keeps subnormal products")
	got, err = runDot(t, NewFamily("sim-m3", engine.M3), familyDot(t, k, lower.TargetM3), x, w)
	require.NoError(t, err)
	require.Zero(t, got, "M3 flushes a subnormal product in the MAC")
	got, err = runDot(t, NewFamily("sim-m5", engine.M5), familyDot(t, k, lower.TargetM5), x, w)
	require.NoError(t, err)
	require.Equal(t, float32(0x1p-16), got, "M5 keeps it")
}

// TestFamiliesRegistered: the variants open by name and say what they are.
func TestFamiliesRegistered(t *testing.T) {
	for name, target := range Families {
		d, err := shim.Open(name)
		require.NoError(t, err)
		require.Equal(t, name, d.Info().Name)
		require.Equal(t, target, d.Info().Target)
		require.Contains(t, d.Info().Numerics, "family "+target.Name)
		require.NoError(t, d.Close())
	}
}
