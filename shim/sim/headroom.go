package sim

import (
	"math"

	"github.com/anemone-go/anemone/lower/mil"
	"github.com/anemone-go/anemone/shim"
)

// OpHeadroom is one op's margin in a run: the largest magnitude among its
// outputs and the magnitude they must stay within to be trusted on the
// engine.
type OpHeadroom struct {
	Op   string  // the MIL op, such as "matmul"
	Name string  // its output variable
	Pos  mil.Pos // its statement in the MIL text
	// Max is the largest |output| of the run; +Inf when an output is ±Inf
	// or NaN.
	Max float64
	// Cliff is 32752 for matmul and conv, 4094 for a slice at a nonzero
	// last-axis offset on a target with the width-slice clamp, and fp16's
	// largest value, 65504, for every other op.
	Cliff float64
}

// Ratio is Max/Cliff: at most 1 when the op's outputs stayed within its
// cliff; a program designed with a factor-two margin keeps it at most 0.5.
func (h OpHeadroom) Ratio() float64 { return h.Max / h.Cliff }

// Headroom is a run's report: one entry per op that computes (const and
// reshape, which move no data, have none), in program order.
type Headroom []OpHeadroom

// Worst returns the entry with the largest Ratio, the zero OpHeadroom when
// the report is empty.
func (h Headroom) Worst() OpHeadroom {
	var w OpHeadroom
	for _, e := range h {
		if w.Cliff == 0 || e.Ratio() > w.Ratio() {
			w = e
		}
	}
	return w
}

// RecordHeadroom turns the headroom report on or off for the runs that
// start afterwards. Recording scans every op's output once per run.
func (d *Device) RecordHeadroom(on bool) { d.headroom.Store(on) }

// Headroom returns the report of the last run on the device that recorded
// (see RecordHeadroom), nil if none has.
func (d *Device) Headroom() Headroom {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	e := d.last
	if e == nil {
		return nil
	}
	out := make(Headroom, len(e.plan.steps))
	for i, st := range e.plan.steps {
		out[i] = OpHeadroom{Op: st.op, Name: st.name, Pos: st.pos, Max: e.peaks[i], Cliff: st.cliff}
	}
	return out
}

// Backend returns the simulator behind dev: dev itself, or the backend of
// a wrapper such as the *shim.Cache that shim.Open returns. It reports
// false when dev is not a simulator.
func Backend(dev shim.Device) (*Device, bool) {
	for range 8 { // wrappers of wrappers, but never a cycle forever
		switch d := dev.(type) {
		case *Device:
			return d, true
		case interface{ Backend() shim.Device }:
			dev = d.Backend()
		default:
			return nil, false
		}
	}
	return nil, false
}

// instrument wraps the plan's steps with what every run does around the
// kernels: under Narrow, subnormal operands (the input surfaces, before
// the first op) and results (after every op) are flushed to zero; when
// the device records headroom, each op's largest output magnitude is kept
// and the run becomes the device's last recorded one. The wrappers run
// under dev.runMu, held by Run.
func (e *executable) instrument() {
	pl := e.plan
	e.peaks = make([]float64, len(pl.steps))
	for i := range pl.steps {
		st := &pl.steps[i]
		kernel, first, last := st.run, i == 0, i == len(pl.steps)-1
		st.run = func(b [][]float32, out []float32, narrow bool) {
			if first {
				e.recording = e.dev.headroom.Load()
				if narrow {
					for _, s := range pl.inputs {
						flushSubnormals(b[s])
					}
				}
			}
			kernel(b, out, narrow)
			if narrow {
				flushSubnormals(out)
			}
			if e.recording {
				e.peaks[i] = maxAbs(out)
				if last {
					e.dev.last = e
				}
			}
		}
	}
}

// flushSubnormals replaces every fp16 subnormal in xs by a zero of its
// sign.
func flushSubnormals(xs []float32) {
	for i, v := range xs {
		if b := math.Float32bits(v); b&0x7fffffff < minNormalBits {
			xs[i] = math.Float32frombits(b & (1 << 31))
		}
	}
}
