package fft

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// TestStatsForward65536: a transform of n = 65536 points is one dispatch
// whose host side moves only the signal: the input crosses once as n
// complex fp16 values (2n halves, 4n bytes) and the output once likewise,
// so the session's BytesIn + BytesOut is 8n bytes per call (the DFT
// blocks and twiddles are constants of the program). Stats carry the
// modeled engine time lower.Estimate gives the program for ane-m1 (the
// simulator's family), the compile charged to the first call only, and
// ModeledTotal as the sum of the parts. The result matches gonum's FFT to
// the FP16 tolerance (see tolerance).
func TestStatsForward65536(t *testing.T) {
	const n = 1 << 16
	dev := openDevice(t, "sim")
	x := signals[0].gen(n, newRNG(1, n))
	want := fourier.NewCmplxFFT(n).Coefficients(nil, x)

	var first, second Stats
	y, err := Forward(x, &Settings{Device: dev, Stats: &first})
	require.NoError(t, err)
	requireAccurate(t, y, want, tolerance("sim", precision.FP16, []int{n}), "first call")
	_, err = Forward(x, &Settings{Device: dev, Stats: &second})
	require.NoError(t, err)

	p, release, err := cachedPlan("test", []int{n}, &Settings{Device: dev})
	require.NoError(t, err)
	defer release()
	pr, err := p.program(1)
	require.NoError(t, err)
	cost, err := lower.Estimate(pr.exe.Program(), "ane-m1")
	require.NoError(t, err)

	for i, st := range []Stats{first, second} {
		require.Equal(t, 1, st.Dispatches, "call %d", i)
		require.Equal(t, cost.Time, st.ModeledTime, "call %d", i)
		require.Positive(t, st.Host, "call %d", i)
		require.Equal(t, st.ModeledTime+st.ModeledCompile+st.Host, st.ModeledTotal, "call %d", i)
	}
	require.Equal(t, lower.EstimateCompile(pr.exe.Program()), first.ModeledCompile, "the first call compiled the program")
	require.Zero(t, second.ModeledCompile, "the second reused it")
	total := p.Stats()
	require.Equal(t, 2, total.Dispatches)
	require.Equal(t, first.ModeledTotal+second.ModeledTotal, total.ModeledTotal)

	io := pr.disp.sess.Stats()
	require.Equal(t, 2, io.Dispatches)
	require.Equal(t, int64(2*8*n), io.BytesIn+io.BytesOut, "host bytes: 8n per call")
}

// TestInPlaceInputSilentSignal: an FP16 program's input is encoded on the
// device's surface, which keeps the last call's values; a signal that is
// all zeros in the next call transforms to zeros, and the others as
// before, bit for bit.
func TestInPlaceInputSilentSignal(t *testing.T) {
	const n = 4096
	p, err := NewPlan(n, &Settings{Device: openDevice(t, "sim")})
	require.NoError(t, err)
	defer p.Close()
	a, b := signals[0].gen(n, newRNG(1, n)), signals[0].gen(n, newRNG(2, n))
	first, err := p.ForwardMany([][]complex128{a, b})
	require.NoError(t, err)
	second, err := p.ForwardMany([][]complex128{a, make([]complex128, n)})
	require.NoError(t, err)
	require.Equal(t, first[0], second[0])
	require.Equal(t, make([]complex128, n), second[1])
}

// TestForwardTo: ForwardTo and InverseTo give Forward's and Inverse's
// results bit for bit, into the caller's slice or in place, in both
// modes; a dst of the wrong length is ErrShape.
func TestForwardTo(t *testing.T) {
	const n = 4096
	for _, mode := range modes {
		p, err := NewPlan(n, &Settings{Device: openDevice(t, "sim"), Precision: mode})
		require.NoError(t, err)
		x := signals[0].gen(n, newRNG(3, n))
		want, err := p.Forward(x)
		require.NoError(t, err)
		dst := make([]complex128, n)
		got, err := p.ForwardTo(dst, x)
		require.NoError(t, err)
		require.Equal(t, want, got, "%v", mode)
		require.Same(t, &dst[0], &got[0], "the result is dst")
		inPlace := slices.Clone(x)
		got, err = p.ForwardTo(inPlace, inPlace)
		require.NoError(t, err)
		require.Equal(t, want, got, "%v in place", mode)
		back, err := p.Inverse(want)
		require.NoError(t, err)
		got, err = p.InverseTo(nil, want)
		require.NoError(t, err)
		require.Equal(t, back, got, "%v inverse", mode)
		_, err = p.ForwardTo(make([]complex128, n-1), x)
		require.ErrorIs(t, err, ErrShape)
		require.NoError(t, p.Close())
	}
}

// slowDevice wraps a device whose compiles and runs take at least the
// given times (wall time the host does not spend working).
type slowDevice struct {
	shim.Device
	compile, run time.Duration
}

func (d slowDevice) Compile(p *lower.Program) (shim.Executable, error) {
	time.Sleep(d.compile)
	exe, err := d.Device.Compile(p)
	if err != nil {
		return nil, err
	}
	return slowExe{exe, d.run}, nil
}

type slowExe struct {
	shim.Executable
	run time.Duration
}

func (e slowExe) Run(in [][]float32) ([][]float32, error) {
	time.Sleep(e.run)
	return e.Executable.Run(in)
}

// TestStatsHostIsHostWork: Stats.Host counts a call's own host work, not
// the time it waits for another call's dispatch on the same plan (two
// concurrent calls on a device whose runs take 200 ms: the second waited
// 200 ms, which was in its Host), nor the time a Plan method spends
// building the program of a new batch size (a compile of 200 ms), which
// ModeledCompile models and the package functions never counted. A
// 64-point transform's host work is microseconds; the bound 100 ms is
// half the sleep. The results match gonum's FFT to the FP16 tolerance.
func TestStatsHostIsHostWork(t *testing.T) {
	const n, pause = 64, 200 * time.Millisecond
	base := openDevice(t, "sim")
	tol := tolerance("sim", precision.FP16, []int{n})
	x := signals[0].gen(n, newRNG(3, n))
	want := fourier.NewCmplxFFT(n).Coefficients(nil, x)

	p, err := NewPlan(n, &Settings{Device: slowDevice{Device: base, run: pause}})
	require.NoError(t, err)
	defer p.Close()
	ys := make([][]complex128, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range ys {
		wg.Go(func() { ys[i], errs[i] = p.Forward(x) })
	}
	wg.Wait()
	for i := range ys {
		require.NoError(t, errs[i])
		requireAccurate(t, ys[i], want, tol, "concurrent Forward")
	}
	st := p.Stats()
	require.Equal(t, 2, st.Dispatches)
	require.Less(t, st.Host, pause/2, "Host of two concurrent calls: %v", st.Host)

	q, err := NewPlan(n, &Settings{Device: slowDevice{Device: base, compile: pause}})
	require.NoError(t, err)
	defer q.Close()
	out, err := q.ForwardMany([][]complex128{x, x})
	require.NoError(t, err)
	for _, y := range out {
		requireAccurate(t, y, want, tol, "ForwardMany")
	}
	require.Less(t, q.Stats().Host, pause/2, "Host of a call that compiled its batch's program: %v", q.Stats().Host)
}

// TestStatsOfFailedCall: Settings.Stats receives what the call did, so a
// call that fails before any dispatch (a bad length, a wrong coefficient
// count, a bad mode, a bad 2-D shape) leaves zeros there, not the
// previous call's costs (which it used to leave in place).
func TestStatsOfFailedCall(t *testing.T) {
	dev := openDevice(t, "sim")
	var st Stats
	s := &Settings{Device: dev, Stats: &st}
	x := signals[0].gen(16, newRNG(4, 16))
	fails := map[string]func() error{
		"Forward, length 7":    func() error { _, err := Forward(make([]complex128, 7), s); return err },
		"Inverse, length 0":    func() error { _, err := Inverse(nil, s); return err },
		"RealForward, 11":      func() error { _, err := RealForward(make([]float64, 11), s); return err },
		"RealInverse, 4 for 8": func() error { _, err := RealInverse(make([]complex128, 4), 8, s); return err },
		"Forward2D, 3×3 of 8":  func() error { _, err := Forward2D(make([]complex128, 8), 3, 3, s); return err },
		"Inverse2D, 7×2":       func() error { _, err := Inverse2D(make([]complex128, 14), 7, 2, s); return err },
		"Float64 mode": func() error {
			_, err := Forward(x, &Settings{Device: dev, Precision: precision.Float64, Stats: &st})
			return err
		},
	}
	for name, call := range fails {
		y, err := Forward(x, s)
		require.NoError(t, err)
		requireAccurate(t, y, fourier.NewCmplxFFT(16).Coefficients(nil, x), tolerance("sim", precision.FP16, []int{16}), name)
		require.Equal(t, 1, st.Dispatches, "%s: the successful call before", name)
		require.Error(t, call(), name)
		require.Equal(t, Stats{}, st, "%s: Stats of the failed call", name)
	}
}
