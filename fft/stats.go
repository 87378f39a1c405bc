package fft

import (
	"fmt"
	"sync"
	"time"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// Stats reports what transforms cost: what a user waits for is the
// modeled engine time of the dispatches, the modeled compile of the
// programs they compiled, and the measured host work around them.
type Stats struct {
	// Dispatches counts device programs run.
	Dispatches int
	// ModeledTime is the modeled engine time of the dispatches
	// (lower.Estimate for the device's ANE family; the simulator's programs
	// are priced as ane-m1, the slowest family).
	ModeledTime time.Duration
	// ModeledCompile is the modeled compile and load time
	// (lower.EstimateCompile) of the programs compiled for these calls: a
	// program is charged to the first call that runs it after compiling
	// it, and nothing to calls that reuse it.
	ModeledCompile time.Duration
	// Host is the measured wall time of the calls outside the device's
	// runs: scaling, fp16 conversion and its range check, reordering and
	// the host's check of the result. On the simulator the simulation's
	// own time is excluded, as the engine replaces it by ModeledTime; so
	// are a call's wait for another call's dispatch on the same plan (that
	// call's time) and the building of a program for a new batch size
	// (which ModeledCompile models).
	Host time.Duration
	// ModeledTotal is ModeledTime + ModeledCompile + Host.
	ModeledTotal time.Duration
}

// add accumulates o into s.
func (s *Stats) add(o Stats) {
	s.Dispatches += o.Dispatches
	s.ModeledTime += o.ModeledTime
	s.ModeledCompile += o.ModeledCompile
	s.Host += o.Host
	s.finish()
}

func (s *Stats) finish() { s.ModeledTotal = s.ModeledTime + s.ModeledCompile + s.Host }

// costFamily is the target name lower.Estimate prices dev's programs
// for: the device's own family, or ane-m1 for the simulator.
func costFamily(dev shim.Device) string {
	name := dev.Info().Target.Name
	for _, t := range lower.EstimateTargets() {
		if t == name && name != "sim" {
			return name
		}
	}
	return "ane-m1"
}

// dispatcher runs one program on a shim.Session: the input crosses as
// fp16 in one pass with one range check, the outputs are read back as
// they are, and the time inside the device's run is kept apart from the
// host's. Calls are serialized, as the device serializes them anyway.
type dispatcher struct {
	mu      sync.Mutex
	sess    *shim.Session
	outs    [][]float32
	cost    time.Duration      // modeled engine time of one dispatch
	compile shim.CompileReport // what building the program compiled
	charged bool               // a call has been charged the compile
}

func newDispatcher(exe shim.Executable, dev shim.Device, rep shim.CompileReport) (*dispatcher, error) {
	sess, err := shim.NewSession(exe)
	if err != nil {
		return nil, err
	}
	d := &dispatcher{sess: sess, compile: rep}
	if c, err := lower.Estimate(exe.Program(), costFamily(dev)); err == nil {
		d.cost = c.Time
	}
	for _, o := range exe.Program().Outputs {
		d.outs = append(d.outs, make([]float32, o.Size()))
	}
	return d, nil
}

// run writes in (fp16 encodings) as input "x", dispatches, and reads every output into the
// returned slices (valid until the next run; the caller holds d.mu). It
// adds the dispatch to st and returns the device's time.
func (d *dispatcher) run(in []uint16, st *Stats) (time.Duration, error) {
	return d.runRead(in, st, true)
}

// runRead is run; with read false the outputs stay on the session's
// surface for the caller to decode in place (outputRows).
func (d *dispatcher) runRead(in []uint16, st *Stats, read bool) (time.Duration, error) {
	if in != nil {
		if err := d.sess.WriteHalf("x", in); err != nil {
			return 0, err
		}
	}
	before := d.sess.Stats().Device
	err := d.sess.Run()
	dev := d.sess.Stats().Device - before
	st.Dispatches++
	st.ModeledTime += d.cost
	if d.compile.Fresh && !d.charged {
		d.charged = true
		st.ModeledCompile += d.compile.Modeled
	}
	if err != nil || !read {
		return dev, err
	}
	return dev, d.readAll()
}

// inputFlat is input "x" on the session's surface as one slice, for pack
// to encode into (then runRead is called with in nil), or nil when its
// rows do not lie end to end there.
func (d *dispatcher) inputFlat() []uint16 {
	h, err := d.sess.InputRows("x")
	if err != nil {
		return nil
	}
	flat, ok := h.Flat()
	if !ok {
		return nil
	}
	return flat
}

// outputRows is the single output's fp16 rows on the session's surface
// after runRead(…, false), or ok false when the program has several
// outputs or rows whose length is not a multiple of chunk.
func (d *dispatcher) outputRows(chunk int) (h shim.HalfRows, ok bool, err error) {
	outs := d.sess.Program().Outputs
	if len(outs) != 1 {
		return h, false, nil
	}
	if outs[0].RowLen()%chunk != 0 {
		return h, false, nil
	}
	h, err = d.sess.OutputRows(outs[0].Name)
	return h, err == nil, err
}

// readAll reads every output into d.outs, as run does.
func (d *dispatcher) readAll() error {
	for i, o := range d.sess.Program().Outputs {
		if err := d.sess.Read(o.Name, d.outs[i]); err != nil {
			return fmt.Errorf("output %q: %w", o.Name, err)
		}
	}
	return nil
}
