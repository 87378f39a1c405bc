package sim

import (
	"github.com/anemone-go/anemone/engine"
	"sync"
	"testing"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
)

func TestRegisteredAndInfo(t *testing.T) {
	for _, c := range []struct {
		name   string
		num    Numerics
		target engine.Target
	}{{"sim", Wide, lower.TargetSim}, {"sim-narrow", Narrow, engine.Pessimistic(lower.TargetSim)}} {
		d, err := shim.Open(c.name)
		require.NoError(t, err)
		info := d.Info()
		require.Equal(t, c.name, info.Name)
		require.False(t, info.Hardware)
		require.Equal(t, c.target, info.Target, "the target states the numerics model")
		for _, cliff := range []string{"32752", "4094"} {
			require.Contains(t, info.Numerics, cliff, "the numerics state the cliffs")
		}
		require.Equal(t, c.name, New(c.num).Info().Name)
		require.NoError(t, d.Close())
	}
	require.Contains(t, New(Narrow).Info().Numerics, "narrow")
	require.Contains(t, New(Narrow).Info().Numerics, "flushed to zero")
	require.Contains(t, New(Narrow).Info().Numerics, "2^-10")
	require.Contains(t, New(Wide).Info().Numerics, "subnormals kept")
	m5 := New(Wide)
	m5.target = lower.TargetM5
	require.NotContains(t, m5.Info().Numerics, "4094", "no width-slice clamp on M5")
}

func TestConcurrentRuns(t *testing.T) {
	// Eight goroutines run one executable at once (and compile their own
	// copy too); every result equals the sequential one. Run under -race.
	const n = 48
	body := stmt("m", []int{n, n}, "matmul", "x = x", "y = y") +
		cInt("ax", -1) + stmt("z", []int{n, n}, "softmax", "axis = ax", "x = m")
	p := program([]port{in("x", n, n), in("y", n, n)}, body, []port{in("z", n, n)})
	dev := New(Wide)
	exe, err := dev.Compile(p)
	require.NoError(t, err)
	rng := newRNG(11)
	x, y := halfs(rng, n*n, 0.5), halfs(rng, n*n, 0.5)
	want, err := exe.Run([][]float32{x, y})
	require.NoError(t, err)
	var wg sync.WaitGroup
	results := make([][][]float32, 8)
	errs := make([]error, 8)
	for g := range 8 {
		wg.Go(func() {
			e := exe
			if g%2 == 1 {
				if e, errs[g] = dev.Compile(p); errs[g] != nil {
					return
				}
			}
			for range 3 {
				results[g], errs[g] = e.Run([][]float32{x, y})
			}
		})
	}
	wg.Wait()
	for g := range 8 {
		require.NoError(t, errs[g])
		require.Equal(t, want, results[g], "goroutine %d", g)
	}
}

func TestSupportedOps(t *testing.T) {
	ops := SupportedOps()
	require.Contains(t, ops, "matmul")
	require.Contains(t, ops, "const")
	require.NotContains(t, ops, "rsqrt")
	require.Len(t, ops, 29)
	require.IsIncreasing(t, ops)
}
