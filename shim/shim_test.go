package shim_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
)

func open(t *testing.T, name string) *shim.Cache {
	t.Helper()
	d, err := shim.Open(name)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d.(*shim.Cache)
}

// scaleGraph is y = x·c: a different constant gives a different program.
func scaleGraph(c float64) *dataflow.Graph {
	g := dataflow.New()
	g.Output("y", g.Mul(g.Input("x", dataflow.Shape{2, 3}), g.Scalar(c)))
	return g
}

func TestOpen(t *testing.T) {
	for _, name := range []string{"sim", "sim-narrow"} {
		d := open(t, name)
		require.Equal(t, name, d.Info().Name)
		require.False(t, d.Info().Hardware)
	}
	t.Setenv(shim.EnvDevice, "sim-narrow")
	require.Equal(t, "sim-narrow", open(t, "").Info().Name)
	d, err := shim.Default()
	require.NoError(t, err)
	require.Equal(t, "sim-narrow", d.Info().Name, "Default is Open(\"\")")
	d.Close()
	if runtime.GOOS != "darwin" {
		t.Setenv(shim.EnvDevice, "")
		require.Equal(t, "sim", open(t, "").Info().Name, "no ANE: the simulator is the default")
		_, err := shim.Open("ane")
		require.ErrorIs(t, err, shim.ErrNoDevice)
	}
	_, err = shim.Open("gpu")
	require.ErrorIs(t, err, shim.ErrNoDevice)
	require.Contains(t, err.Error(), "sim")
}

func TestCacheCompilesOnce(t *testing.T) {
	c := open(t, "sim")
	build := func(k float64) (shim.Executable, shim.CompileReport) {
		p, err := lower.Lower(scaleGraph(k), c.Info().Target)
		require.NoError(t, err)
		e, rep, err := shim.CompileReported(c, p)
		require.NoError(t, err)
		return e, rep
	}
	e1, rep := build(1)
	require.True(t, rep.Fresh)
	require.Greater(t, rep.Modeled, time.Duration(0), "a fresh compile has a modeled cost")
	_, rep = build(1)
	require.False(t, rep.Fresh)
	require.Zero(t, rep.Modeled, "a cache hit costs no compile")
	for k := 2; k <= 40; k++ {
		build(float64(k))
	}
	st := c.Stats()
	require.Equal(t, 40, st.Compiles)
	require.Equal(t, 1, st.Hits)
	// Programs are never evicted: the first still runs without a compile.
	out, err := e1.Run([][]float32{{1, 2, 3, 4, 5, 6}})
	require.NoError(t, err)
	require.Equal(t, []float32{1, 2, 3, 4, 5, 6}, out[0])
	require.Equal(t, 40, c.Stats().Compiles)
	require.Equal(t, 40*lower.EstimateCompile(e1.Program()), c.Stats().ModeledCompile,
		"weightless programs of one size are modeled alike")
}

// TestCompileBudget: the simulator allows the engine's budget of compiles
// per device; the next is ErrBudget, with what to do in the message, and
// a fresh device starts a fresh budget.
func TestCompileBudget(t *testing.T) {
	c := open(t, "sim")
	for k := range shim.DefaultCompileBudget {
		_, err := shim.Build(c, scaleGraph(float64(k+1)))
		require.NoError(t, err, "compile %d", k+1)
	}
	_, err := shim.Build(c, scaleGraph(1)) // cached: no compile
	require.NoError(t, err)
	_, err = shim.Build(c, scaleGraph(-1))
	require.ErrorIs(t, err, shim.ErrBudget, "compile %d", shim.DefaultCompileBudget+1)
	require.Contains(t, err.Error(), "100 of 100 compiles used")
	require.Contains(t, err.Error(), "runtime operands")
	require.Equal(t, shim.DefaultCompileBudget, c.Stats().Compiles)

	_, err = shim.Build(open(t, "sim"), scaleGraph(-1))
	require.NoError(t, err, "a fresh device has a fresh budget")
}

func TestRunChecks(t *testing.T) {
	c := open(t, "sim")
	e, err := shim.Build(c, scaleGraph(2))
	require.NoError(t, err)

	_, err = e.Run(nil)
	require.ErrorIs(t, err, shim.ErrShape)
	require.Contains(t, err.Error(), "got 0 inputs, program takes 1")
	_, err = e.Run([][]float32{{1, 2}})
	require.ErrorIs(t, err, shim.ErrShape)
	require.Contains(t, err.Error(), `"x" has 2 elements, want 6`)

	_, err = e.Run([][]float32{{1, 2, 3, 70000, 5, 6}})
	require.ErrorIs(t, err, shim.ErrRange)
	require.Contains(t, err.Error(), "element 3")

	// 40000·2 overflows inside the program: the output says so.
	out, err := e.Run([][]float32{{1, 2, 3, 40000, 5, 6}})
	require.ErrorIs(t, err, shim.ErrRange)
	require.Contains(t, err.Error(), `output "y" element 3`)
	require.Len(t, out, 1, "the outputs come back with the error")

	require.NoError(t, e.Close())
	_, err = e.Run([][]float32{{1, 2, 3, 4, 5, 6}})
	require.ErrorIs(t, err, shim.ErrClosed)

	require.NoError(t, c.Close())
	_, err = shim.Build(c, scaleGraph(3))
	require.ErrorIs(t, err, shim.ErrClosed)
	_, err = c.Compile(nil)
	require.Error(t, err)
}

func TestBuildRejectsWhatTheTargetCannotRun(t *testing.T) {
	c := open(t, "sim")
	g := dataflow.New()
	g.Output("y", g.Relu(g.Input("x", dataflow.Shape{1, 20000})))
	_, err := shim.Build(c, g)
	require.ErrorIs(t, err, lower.ErrUnsupported)
	_, err = shim.Build(nil, g)
	require.ErrorIs(t, err, shim.ErrNoDevice)
}

// TestConcurrentRuns runs one executable from many goroutines (go test
// -race checks the locking); the runs are serialized and all agree.
func TestConcurrentRuns(t *testing.T) {
	c := open(t, "sim")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := shim.Build(c, scaleGraph(float64(i%3+1)))
			if err != nil {
				errs <- err
				return
			}
			for range 10 {
				out, err := e.Run([][]float32{{1, 2, 3, 4, 5, 6}})
				if err != nil {
					errs <- err
					return
				}
				if want := float32(6 * (i%3 + 1)); out[0][5] != want {
					errs <- fmt.Errorf("goroutine %d: got %g, want %g", i, out[0][5], want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 3, c.Stats().Compiles)
	require.Equal(t, 160, c.Stats().Runs)
}

// TestSharedIsOneDevice: every package that is given no device gets the
// same one, so they share one compile cache and one program budget.
func TestSharedIsOneDevice(t *testing.T) {
	a, err := shim.Shared()
	require.NoError(t, err)
	b, err := shim.Shared()
	require.NoError(t, err)
	require.Same(t, a.(*shim.Cache), b.(*shim.Cache))
}
