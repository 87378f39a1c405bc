package fft

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
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
