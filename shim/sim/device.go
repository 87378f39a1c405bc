package sim

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// Numerics selects the accumulation model of matmul and conv: the engine
// contract's Accumulator.
type Numerics = engine.Accumulator

const (
	// Wide sums the fp16-rounded products in float32 and rounds the sum to
	// fp16, as the engine is measured to do.
	Wide = engine.Wide
	// Narrow also rounds every partial sum to fp16: a pessimistic model.
	Narrow = engine.Narrow
)

func init() {
	shim.Register("sim", func() (shim.Device, error) { return New(Wide), nil })
	shim.Register("sim-narrow", func() (shim.Device, error) { return New(Narrow), nil })
	for name, t := range Families {
		shim.Register(name, func() (shim.Device, error) { return NewFamily(name, t), nil })
	}
}

// Families are the per-family variants, by device name: each simulates one
// engine family's target (engine.M1, M3, M5) with the rules reported for
// it — M1's inner-dimension multiple of 32, M3's products rounded ties
// away, subnormal products flushed and sums reaching 2¹⁵ returned as zero,
// M5's ties-away products and 65536-element rows — and refuses surfaces
// below the family's minimum size. The default "sim" is the strictest
// union of every family's limits with the measured numerics.
var Families = map[string]engine.Target{"sim-m1": engine.M1, "sim-m3": engine.M3, "sim-m5": engine.M5}

// Device is the simulator. It is safe for concurrent use; Runs of its
// executables are serialized, as on the engine.
type Device struct {
	num       Numerics
	target    lower.Target
	runMu     sync.Mutex // one program runs at a time
	reference bool       // compile without fast paths: the generic kernels only (tests)
	closed    atomic.Bool

	headroom atomic.Bool // record each op's largest output magnitude
	last     *executable // the last run that recorded; guarded by runMu

	budget *shim.Budget // the engine's compile budget, per device
	name   string       // set for a family variant
}

// NewFamily returns the simulator of one engine family: target t's limits
// and rules, under the name name (see Families).
func NewFamily(name string, t engine.Target) *Device {
	return &Device{num: Wide, target: t, budget: shim.NewBudget(t.CompileBudget), name: name}
}

// New returns a simulator device with the given numerics and the
// simulator's target limits (lower.TargetSim).
func New(n Numerics) *Device {
	t := lower.TargetSim
	if n == Narrow {
		t = engine.Pessimistic(t)
	}
	return &Device{num: n, target: t, budget: shim.NewBudget(t.CompileBudget)}
}

// Budget returns the device's compile budget: shim.DefaultCompileBudget
// compiles, as the engine allows a process. Every Compile attempt counts,
// refused programs included, as on the engine; a fresh device has a fresh
// budget, so a test that needs many programs opens its own.
func (d *Device) Budget() *shim.Budget { return d.budget }

// Info describes the device.
func (d *Device) Info() shim.Info {
	in := shim.Info{Name: "sim", Target: d.target, Hardware: false}
	cliffs := "matmul/conv output above 32752 in magnitude (the sum before rounding) becomes ±Inf; " +
		"reduce_sum/reduce_mean: fp16 running sum"
	if d.target.WidthSliceClamp {
		cliffs += "; slice_by_size at a nonzero last-axis offset turns |x| > 4094 into ±Inf"
	}
	in.Numerics = "fp16 storage (round to nearest even, overflow to ±Inf, subnormals kept); " +
		"elementwise ops correctly rounded to fp16; transcendentals float32 then fp16; " +
		"matmul/conv: fp16 products summed in float32, sum rounded to fp16; " + cliffs
	if d.name != "" {
		in.Name = d.name
		in.Numerics += "; family " + d.target.Name + ": products rounded " + d.target.Rounding.String()
		if d.target.FlushSubnormalProducts {
			in.Numerics += ", subnormal products flushed"
		}
		if d.target.PartialSumZero {
			in.Numerics += ", a matmul/conv sum reaching 2^15 returns zero"
		}
		if d.target.InnerMultiple > 1 {
			in.Numerics += fmt.Sprintf(", a matmul whose contraction is not a multiple of %d returns zeros", d.target.InnerMultiple)
		}
		if d.target.MinSurfaceBytes > 0 {
			in.Numerics += fmt.Sprintf("; surfaces below %d bytes refused", d.target.MinSurfaceBytes)
		}
	}
	if d.num == Narrow {
		in.Name = "sim-narrow"
		in.Numerics = "fp16 storage (round to nearest even, overflow to ±Inf), subnormal operands and results of every op flushed to zero; " +
			"elementwise ops correctly rounded to fp16; sqrt, pow, exp, log, tanh, sigmoid, gelu with a deterministic relative error of up to 2^-10 before fp16 rounding; " +
			"matmul/conv: fp16 products with an fp16 running sum (narrow accumulation); " + cliffs
	}
	return in
}

// Numerics returns the device's accumulation model.
func (d *Device) Numerics() Numerics { return d.num }

// Compile parses, checks and plans p. Errors are *Error values wrapping
// ErrInvalid, shim.ErrUnsupported or shim.ErrRange (see the package doc).
func (d *Device) Compile(p *lower.Program) (shim.Executable, error) {
	if d.closed.Load() {
		return nil, errAt(zeroPos, shim.ErrClosed, "device is closed")
	}
	if p == nil {
		return nil, errAt(zeroPos, ErrInvalid, "nil program")
	}
	if err := d.budget.Take(); err != nil {
		return nil, fmt.Errorf("sim: compiling program %.12s: %w", p.Hash, err)
	}
	pl, err := compile(d.target, p, d.reference)
	if err != nil {
		return nil, err
	}
	e := &executable{dev: d, prog: p, plan: pl}
	e.instrument()
	return e, nil
}

// Close releases the device; its executables stop running. It is
// idempotent.
func (d *Device) Close() error {
	d.closed.Store(true)
	return nil
}

// executable is a compiled program.
type executable struct {
	dev     *Device
	prog    *lower.Program
	plan    *plan
	closed  atomic.Bool
	scratch [][]float32 // slot buffers reused across runs; guarded by dev.runMu

	// The headroom of the last recorded run, per step; guarded by dev.runMu.
	recording bool
	peaks     []float64
}

func (e *executable) Program() *lower.Program { return e.prog }

func (e *executable) Close() error {
	e.closed.Store(true)
	e.dev.runMu.Lock()
	e.scratch = nil
	e.dev.runMu.Unlock()
	return nil
}

// Run executes the program on inputs given in their logical shapes.
func (e *executable) Run(inputs [][]float32) ([][]float32, error) {
	if e.closed.Load() || e.dev.closed.Load() {
		return nil, errAt(zeroPos, shim.ErrClosed, "run on a closed executable")
	}
	specs := e.prog.Inputs
	if len(inputs) != len(specs) {
		return nil, errAt(zeroPos, shim.ErrShape, "got %d inputs, program takes %d", len(inputs), len(specs))
	}
	for i, s := range specs {
		if len(inputs[i]) != s.Size() {
			return nil, errAt(zeroPos, shim.ErrShape, "input %q has %d values, its shape %s needs %d", s.Name, len(inputs[i]), shapeString(s.Shape), s.Size())
		}
	}

	e.dev.runMu.Lock()
	defer e.dev.runMu.Unlock()
	if e.closed.Load() {
		return nil, errAt(zeroPos, shim.ErrClosed, "run on a closed executable")
	}
	pl := e.plan
	if e.scratch == nil {
		e.scratch = pl.buffers()
	}
	b := e.scratch
	for _, slot := range pl.inputs {
		clear(b[slot]) // rows no tensor covers read as zero
	}
	for i, s := range specs {
		if err := packRounded(s, b[pl.inputs[s.Surface]], inputs[i]); err != nil {
			return nil, err
		}
	}
	narrow := e.dev.num == Narrow
	for _, st := range pl.steps {
		st.run(b, b[st.out], narrow)
	}
	outs := make([][]float32, len(e.prog.Outputs))
	var rangeErr error
	for i, s := range e.prog.Outputs {
		outs[i] = make([]float32, s.Size())
		s.Unpack(outs[i], b[pl.outputs[s.Surface]])
		if rangeErr == nil {
			for j, v := range outs[i] {
				if !isHalfFinite(v) {
					rangeErr = errAt(zeroPos, shim.ErrRange, "output %q element %d is %g: fp16 overflow", s.Name, j, v)
					break
				}
			}
		}
	}
	return outs, rangeErr
}

// RunHalf executes the program on packed fp16 surfaces (shim.HalfRunner):
// the surfaces are the device's buffers, read and written as they are.
func (e *executable) RunHalf(in, out [][]uint16) error {
	if e.closed.Load() || e.dev.closed.Load() {
		return errAt(zeroPos, shim.ErrClosed, "run on a closed executable")
	}
	pl := e.plan
	if len(in) != len(pl.inputs) || len(out) != len(pl.outputs) {
		return errAt(zeroPos, shim.ErrShape, "got %d input and %d output surfaces, program binds %d and %d", len(in), len(out), len(pl.inputs), len(pl.outputs))
	}
	for i, slot := range pl.inputs {
		if len(in[i]) != pl.sizes[slot] {
			return errAt(zeroPos, shim.ErrShape, "input surface %d has %d elements, want %d", i, len(in[i]), pl.sizes[slot])
		}
	}
	for i, slot := range pl.outputs {
		if len(out[i]) != pl.sizes[slot] {
			return errAt(zeroPos, shim.ErrShape, "output surface %d has %d elements, want %d", i, len(out[i]), pl.sizes[slot])
		}
	}
	e.dev.runMu.Lock()
	defer e.dev.runMu.Unlock()
	if e.closed.Load() {
		return errAt(zeroPos, shim.ErrClosed, "run on a closed executable")
	}
	if e.scratch == nil {
		e.scratch = pl.buffers()
	}
	b := e.scratch
	for i, slot := range pl.inputs {
		fp16.DecodeFloat32(b[slot], in[i])
	}
	narrow := e.dev.num == Narrow
	for _, st := range pl.steps {
		st.run(b, b[st.out], narrow)
	}
	for i, slot := range pl.outputs {
		// Every value is an fp16 value already: the encoding is exact.
		fp16.EncodeFloat32(out[i], b[slot])
	}
	return nil
}

// packRounded lays src out in its band of the surface dst as s.Pack does,
// rounding each value to fp16 on the way; a value that rounds to ±Inf or
// is NaN is an error naming its logical index.
func packRounded(s lower.IOSpec, dst, src []float32) error {
	clear(s.Band(dst))
	var bad error
	engine.EachRow(s, dst, func(row []float32, off int) {
		if c := roundRow(row, src[off:off+len(row)]); c >= 0 && bad == nil {
			bad = errAt(zeroPos, shim.ErrRange, "input %q element %d is %g, beyond fp16's range ±%g", s.Name, off+c, src[off+c], fp16.MaxValue)
		}
	})
	return bad
}

// roundRow writes r16(src[i]) to dst[i] and returns the index of the first
// value that rounds to ±Inf or is NaN, −1 if none does.
func roundRow(dst, src []float32) int {
	src = src[:len(dst)]
	bad := -1
	for i, v := range src {
		var h float32
		if math.Float32bits(v)&0x7fffffff-minNormalBits < fastSpan || v == 0 { // r16, written out
			t := float32(v * 8193)
			h = t - float32(t-v)
		} else {
			h = r16(v)
			if !isHalfFinite(h) && bad < 0 {
				bad = i
			}
		}
		dst[i] = h
	}
	return bad
}
