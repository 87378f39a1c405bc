package ane

import (
	"runtime"
	"sync"
	"time"
)

// releaser holds what an executable must give back to the framework. It is
// released exactly once: by Close, or, for an executable dropped without
// Close, by the cleanup guard attaches, which runs once the executable is
// unreachable. The releaser must not refer to its owner, or the owner
// never becomes unreachable.
type releaser struct {
	once    sync.Once
	release func() error
	err     error
}

// Release runs release the first time and returns its error every time.
func (r *releaser) Release() error {
	r.once.Do(func() { r.err = r.release() })
	return r.err
}

// guard releases r when owner becomes unreachable; the returned Cleanup's
// Stop cancels that, for an owner closed explicitly.
func guard[T any](owner *T, r *releaser, onErr func(error)) runtime.Cleanup {
	return runtime.AddCleanup(owner, func(r *releaser) {
		if err := r.Release(); err != nil && onErr != nil {
			onErr(err)
		}
	}, r)
}

// hwTimer keeps the engine's own execution time of an executable's runs,
// from the framework's performance statistics (_ANEPerformanceStats
// hwExecutionTime, in nanoseconds). Statistics are asked for while on; a
// run that fails with them is tried once more without, and when that
// succeeds they stay off for good, with the reason kept: statistics are
// reported unavailable for some in-memory models, and they must never cost
// a result.
type hwTimer struct {
	on   bool
	last time.Duration
	ok   bool  // last is the time of the most recent run
	off  error // why statistics were turned off, if they were
}

// run evaluates once through eval, with statistics while they are on, and
// then reads the engine's time through read (0 meaning none reported).
func (h *hwTimer) run(eval func(withStats bool) error, read func() uint64) error {
	h.ok = false
	if !h.on {
		return eval(false)
	}
	if err := eval(true); err != nil {
		if err2 := eval(false); err2 != nil {
			return err2
		}
		h.on, h.off = false, err
		return nil
	}
	if ns := read(); ns > 0 && ns <= uint64(1<<63-1) {
		h.last, h.ok = time.Duration(ns), true
	}
	return nil
}

// time returns the engine's time of the last run, if it reported one.
func (h *hwTimer) time() (time.Duration, bool) { return h.last, h.ok }
