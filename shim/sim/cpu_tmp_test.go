package sim

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestTmpKernelCPU(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const m, k = 128, 512
	rng := newRNG(15)
	x, y := halfs(rng, m*k, 1), halfs(rng, m*k, 1)
	ta, tb := smallThresholds(maxAbs(x), maxAbs(y))
	c := make([]float32, m*m)
	for _, cfg := range []struct {
		name   string
		tau    bool
		narrow bool
	}{{"wide", true, false}, {"wide-noflags", false, false}, {"wide", true, false}, {"narrow", true, true}} {
		a, bo := newOperand(m, k, x, k, ta), newOperand(m, k, y, k, tb)
		if !cfg.tau {
			a, bo = newOperand(m, k, x, k, 0), newOperand(m, k, y, k, 0)
		}
		best := time.Hour
		for range 5 {
			t0 := threadCPU()
			for range 10 {
				dotBlock(m, m, k, a, bo, c, m, cfg.narrow, nil)
			}
			best = min(best, threadCPU()-t0)
		}
		t.Logf("%s: %.3f ns/MAC (thread CPU)", cfg.name, float64(best.Nanoseconds())/10/float64(m*m*k))
	}
}
