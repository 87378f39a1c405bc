package ane

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGuardReleasesDropped drops an owner without closing it: its
// resources are released once it is collected, and only once.
func TestGuardReleasesDropped(t *testing.T) {
	var released atomic.Int32
	done := make(chan struct{})
	func() {
		owner := &struct{ buf [64]byte }{}
		r := &releaser{release: func() error { released.Add(1); close(done); return errors.New("unload failed") }}
		var reported atomic.Value
		guard(owner, r, func(err error) { reported.Store(err) })
		runtime.KeepAlive(owner)
	}()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		select {
		case <-done:
			require.Equal(t, int32(1), released.Load())
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("the dropped owner's resources were never released")
}

// TestGuardClosed closes an owner first: the cleanup is stopped and the
// release ran once.
func TestGuardClosed(t *testing.T) {
	n := 0
	owner := new(int)
	r := &releaser{release: func() error { n++; return nil }}
	c := guard(owner, r, nil)
	c.Stop()
	require.NoError(t, r.Release())
	require.NoError(t, r.Release())
	require.Equal(t, 1, n)
	runtime.GC()
	require.Equal(t, 1, n)
}

func TestHWTimer(t *testing.T) {
	var calls []bool
	eval := func(fail bool) func(bool) error {
		return func(stats bool) error {
			calls = append(calls, stats)
			if stats && fail {
				return errors.New("evaluate failed: Program Inference error")
			}
			return nil
		}
	}
	h := &hwTimer{on: true}
	// The engine reports 183.5 µs.
	require.NoError(t, h.run(eval(false), func() uint64 { return 183500 }))
	d, ok := h.time()
	require.True(t, ok)
	require.Equal(t, 183500*time.Nanosecond, d)
	require.Equal(t, []bool{true}, calls)

	// Statistics on, but none reported (hwExecutionTime 0): no time.
	require.NoError(t, h.run(eval(false), func() uint64 { return 0 }))
	_, ok = h.time()
	require.False(t, ok)

	// A run failing with statistics is retried without, and they stay off.
	calls = nil
	require.NoError(t, h.run(eval(true), func() uint64 { t.Fatal("read without statistics"); return 0 }))
	require.Equal(t, []bool{true, false}, calls)
	require.False(t, h.on)
	require.ErrorContains(t, h.off, "Program Inference error")
	calls = nil
	require.NoError(t, h.run(eval(true), nil))
	require.Equal(t, []bool{false}, calls)
	_, ok = h.time()
	require.False(t, ok)

	// A run that fails either way is the run's error.
	h = &hwTimer{on: true}
	err := h.run(func(bool) error { return errors.New("evaluate failed") }, nil)
	require.ErrorContains(t, err, "evaluate failed")
	require.True(t, h.on, "statistics are not blamed for a run that fails without them")
}
