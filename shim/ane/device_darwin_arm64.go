//go:build darwin && arm64

package ane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/ebitengine/purego/objc"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

func init() {
	shim.Register("ane", Open)
}

// loadRetryDelay is the pause before the one retry of a failed load.
const loadRetryDelay = 100 * time.Millisecond

// perfStatsMask is the statistics mask set on the model when hardware time
// is asked for: every bit, as tmc/apple's benchmarks set it.
const perfStatsMask = ^uint32(0)

// framework serializes every sequence of framework calls in the process,
// whichever device makes it: the framework is one per process, and nothing
// says it may be entered from several threads at once. A device's own mu,
// when both are held, is taken first.
var framework sync.Mutex

// withFramework runs f under the process-wide lock, on a locked OS thread
// inside an autorelease pool.
func (r *rtFns) withFramework(f func()) {
	framework.Lock()
	defer framework.Unlock()
	r.withPool(f)
}

// Available reports whether this Mac has a Neural Engine this package can
// drive: macOS 15 or later, an engine that _ANEDeviceInfo (or, without it,
// the CPU brand) reports and that is not a virtual machine's, and the
// framework classes loaded. It does not compile anything, so a true result
// does not prove that programs will run.
func Available() bool {
	_, _, err := openRuntime()
	return err == nil
}

// openRuntime loads the framework and decides whether it may be driven: the
// macOS version (OpsetForMacOS) and the engine's presence (CheckDevice).
func openRuntime() (*rtFns, lower.Target, error) {
	r, err := loadRuntime()
	if err != nil {
		return nil, lower.Target{}, fmt.Errorf("ane: Neural Engine unavailable: %v: %w", err, shim.ErrNoDevice)
	}
	version := r.osVersion()
	opset, err := OpsetForMacOS(version)
	if err != nil {
		return nil, lower.Target{}, err
	}
	framework.Lock()
	probe := r.probe()
	framework.Unlock()
	if err := CheckDevice(probe); err != nil {
		return nil, lower.Target{}, err
	}
	t := TargetForBrand(probe.Brand)
	if t.Opset != opset {
		return nil, lower.Target{}, fmt.Errorf("ane: target %s emits the %s opset, macOS %s compiles %s: %w", t.Name, t.Opset, version, opset, shim.ErrNoDevice)
	}
	return r, t, nil
}

// Open opens the Neural Engine with DefaultOptions. It fails with an error
// wrapping shim.ErrNoDevice, saying why, below macOS 15, in a virtual
// machine, without an engine, or if the framework or its classes cannot be
// loaded.
func Open() (shim.Device, error) { return OpenWith(DefaultOptions()) }

// OpenWith opens the Neural Engine with the given options. It fails as Open
// does.
func OpenWith(opts Options) (shim.Device, error) {
	r, t, err := openRuntime()
	if err != nil {
		return nil, err
	}
	return &device{
		rt:     r,
		info:   InfoFor(t),
		budget: ProcessBudget(),
		opts:   opts,
		execs:  map[*execState]struct{}{},
	}, nil
}

type device struct {
	rt     *rtFns
	info   shim.Info
	budget *Budget
	opts   Options

	// mu guards closed and execs, and orders the calls made through this
	// device; the framework calls themselves hold the process-wide lock.
	mu     sync.Mutex
	closed bool
	execs  map[*execState]struct{}
}

func (d *device) Info() shim.Info { return d.info }

func (d *device) Compile(p *lower.Program) (shim.Executable, error) {
	if err := CheckProgram(p, d.info.Target); err != nil {
		return nil, err
	}
	layout := WeightLayoutFor(d.info.Target, d.opts.Weights)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("ane: compile on a closed device: %w", shim.ErrClosed)
	}
	// A concat-packed program the compiler refuses is compiled once more
	// with one output surface per output.
	st, built, warning, err := compileFallback(p, func(q *lower.Program) (*execState, error) {
		return d.build(p, q, layout)
	})
	if err != nil {
		return nil, err
	}
	st.built = built
	if warning != "" {
		// The refused compile came before the binding's warnings.
		st.warn(warning)
		st.warnings = slices.Insert(st.warnings[:len(st.warnings)-1], 0, warning)
	}
	d.execs[st] = struct{}{}
	e := &executable{st: st}
	e.cleanup = guard(e, &st.rel, func(err error) { st.log("releasing an executable dropped without Close failed", err) })
	return e, nil
}

// build compiles q (p itself, or its split-output variant) for p's
// executable. It runs with d.mu held.
func (d *device) build(p, q *lower.Program, layout WeightLayout) (*execState, error) {
	model, err := PlanModel(q, layout)
	if err != nil {
		return nil, err
	}
	files, err := model.Files()
	if err != nil {
		return nil, err
	}
	if err := d.budget.Take(); err != nil {
		return nil, err
	}
	st := &execState{dev: d, rt: d.rt, prog: p, built: q, timer: hwTimer{on: !d.opts.NoHardwareTime}}
	st.rel.release = st.close
	d.rt.withFramework(func() {
		if err = st.build(model, files); err != nil {
			if terr := st.teardown(); terr != nil {
				err = errors.Join(err, terr)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (d *device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for st := range d.execs {
		errs = append(errs, st.closeLocked())
	}
	return errors.Join(errs...)
}

type surface struct {
	ref  uintptr // IOSurfaceRef, +1
	spec SurfaceSpec
}

var _ Executable = (*executable)(nil)

// executable is what Compile returns. Everything it holds of the framework
// is in st, which does not refer back to it: an executable dropped without
// Close becomes unreachable, and its cleanup releases st.
type executable struct {
	st      *execState
	cleanup runtime.Cleanup
}

// execState is one compiled program's framework state. Its fields are
// guarded by dev.mu.
type execState struct {
	dev   *device
	rt    *rtFns
	prog  *lower.Program // as given to Compile
	built *lower.Program // as compiled: prog, or its split-output variant
	rel   releaser       // runs close, once

	model    objc.ID // _ANEInMemoryModel, retained
	request  objc.ID // _ANERequest without statistics, retained
	requestS objc.ID // _ANERequest with statistics, retained; 0 if none
	perf     objc.ID // _ANEPerformanceStats of requestS, retained
	id       string  // the model's identifier, once claimed in modelIDs
	dir      string  // the model's temporary directory, once written
	loaded   bool
	closed   bool
	mapping  Mapping
	warnings []string
	timer    hwTimer

	// inputs and outputs are the request's surfaces in request order:
	// position i holds the surface of symbol position i.
	inputs, outputs []Port
	inSurf, outSurf []surface
}

// warn records a warning and logs it when a logger is set.
func (st *execState) warn(w string) {
	st.warnings = append(st.warnings, w)
	if l := st.dev.opts.Logger; l != nil {
		l.Warn("ane: "+w, "program", st.prog.Hash)
	}
}

func (st *execState) log(msg string, err error) {
	if l := st.dev.opts.Logger; l != nil {
		l.Warn("ane: "+msg, "program", st.prog.Hash, "err", err)
	}
}

// Mapping reports what became of the optional surface mapping
// (Options.MapSurfaces).
func (e *executable) Mapping() Mapping {
	e.st.dev.mu.Lock()
	defer e.st.dev.mu.Unlock()
	return e.st.mapping
}

// Warnings returns what the device assumed to compile and bind this
// program: a surface bound by position, an entry without a Type taken for
// fp16, the fallback to one output surface per output, performance
// statistics turned off after a failed run.
func (e *executable) Warnings() []string {
	e.st.dev.mu.Lock()
	defer e.st.dev.mu.Unlock()
	return slices.Clone(e.st.warnings)
}

// HardwareTime returns the engine's own execution time of the last Run, as
// the framework's performance statistics report it (hwExecutionTime), and
// false when there is none: statistics off (Options.NoHardwareTime), not
// offered by this framework, or not reported for this run.
func (e *executable) HardwareTime() (time.Duration, bool) {
	e.st.dev.mu.Lock()
	defer e.st.dev.mu.Unlock()
	return e.st.timer.time()
}

func (e *executable) Program() *lower.Program { return e.st.prog }

func (e *executable) Run(inputs [][]float32) ([][]float32, error) {
	st := e.st
	d := st.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	defer runtime.KeepAlive(e)
	if st.closed {
		return nil, fmt.Errorf("ane: run on a closed executable: %w", shim.ErrClosed)
	}
	if len(inputs) != len(st.prog.Inputs) {
		return nil, fmt.Errorf("ane: %d inputs, program takes %d: %w", len(inputs), len(st.prog.Inputs), shim.ErrShape)
	}
	for i, s := range st.prog.Inputs {
		if len(inputs[i]) != s.Size() {
			return nil, fmt.Errorf("ane: input %q has %d values, want %d: %w", s.Name, len(inputs[i]), s.Size(), shim.ErrShape)
		}
	}
	outs := make([][]float32, len(st.prog.Outputs))
	for i, s := range st.prog.Outputs {
		outs[i] = make([]float32, s.Size())
	}
	var err error
	st.rt.withFramework(func() { err = st.run(inputs, outs) })
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// RunHalf runs the program on the session's fp16 surfaces
// (shim.HalfRunner): their rows are copied into the IOSurfaces at the
// reported strides and back, bits unchanged.
func (e *executable) RunHalf(in, out [][]uint16) error {
	st := e.st
	d := st.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	defer runtime.KeepAlive(e)
	if st.closed {
		return fmt.Errorf("ane: run on a closed executable: %w", shim.ErrClosed)
	}
	var err error
	st.rt.withFramework(func() { err = st.runHalf(in, out) })
	return err
}

func (e *executable) Close() error {
	e.cleanup.Stop()
	return e.st.rel.Release()
}

// close is the releaser's function: it takes dev.mu.
func (st *execState) close() error {
	st.dev.mu.Lock()
	defer st.dev.mu.Unlock()
	return st.closeLocked()
}

// closeLocked runs with dev.mu held.
func (st *execState) closeLocked() error {
	if st.closed {
		return nil
	}
	st.closed = true
	delete(st.dev.execs, st)
	var err error
	st.rt.withFramework(func() { err = st.teardown() })
	return err
}

// build runs the compile pipeline: descriptor, model, files, compile,
// load, layout, surfaces, request. On error the caller
// runs teardown, which undoes whatever part was done.
func (st *execState) build(m *Model, files []File) error {
	r, s := st.rt, &st.rt.sel

	weights, err := r.toNS(m.WeightsDict(), 0)
	if err != nil {
		return err
	}
	desc := r.clsDescriptor.Send(s.modelWithMILText, r.nsData(m.MIL), weights, objc.ID(0))
	if desc == 0 {
		return &Error{Op: "descriptor", Desc: "modelWithMILText:weights:optionsPlist: returned nil"}
	}
	model := r.clsInMemoryModel.Send(s.inMemoryModelWithDescriptor, desc)
	if model == 0 {
		return &Error{Op: "descriptor", Desc: "inMemoryModelWithDescriptor: returned nil"}
	}
	st.model = model.Send(s.retain)

	hex, err := ModelDirName(r.goString(st.model.Send(s.hexStringIdentifier)))
	if err != nil {
		return err
	}
	// The weight file's name carries the program hash, so a different
	// program should never get this identifier; if the framework gives it
	// one anyway, refuse rather than share its directory and compilation.
	if err := modelIDs.claim(hex, m.Hash); err != nil {
		return err
	}
	st.id = hex
	tmp := r.goString(r.nsTemporaryDirectory())
	if tmp == "" {
		tmp = os.TempDir()
	}
	st.dir = filepath.Join(tmp, hex)
	if err := WriteFiles(st.dir, files); err != nil {
		return err
	}

	// Hardware time needs the statistics mask on the model; tmc/apple sets
	// it before compile and before and after load, which it reports
	// clearing it.
	if st.dev.opts.MapSurfaces || !r.sendBool(st.model, s.respondsToSelector, s.setPerfStatsMask) {
		st.timer.on = false
	}
	setMask := func(inner bool) {
		if !st.timer.on {
			return
		}
		r.sendVoid(st.model, s.setPerfStatsMask, perfStatsMask)
		if inner && r.sendBool(st.model, s.respondsToSelector, s.model) {
			if m := st.model.Send(s.model); m != 0 && r.sendBool(m, s.respondsToSelector, s.setPerfStatsMask) {
				r.sendVoid(m, s.setPerfStatsMask, perfStatsMask)
			}
		}
	}

	setMask(false)
	var nserr objc.ID
	if !r.sendBool(st.model, s.compileWithQoS, QoS, r.emptyDict, &nserr) {
		return r.nsError("compile", nserr)
	}
	nserr = 0
	setMask(false)
	if !r.sendBool(st.model, s.loadWithQoS, QoS, r.emptyDict, &nserr) {
		time.Sleep(loadRetryDelay)
		nserr = 0
		setMask(false)
		if !r.sendBool(st.model, s.loadWithQoS, QoS, r.emptyDict, &nserr) {
			return r.nsError("load", nserr)
		}
	}
	st.loaded = true
	setMask(true)

	// The attributes: from the inner _ANEModel when there is one, else from
	// the in-memory model itself.
	attrsOf := func(obj objc.ID) any {
		if obj == 0 || !r.sendBool(obj, s.respondsToSelector, s.modelAttributes) {
			return nil
		}
		return r.fromNS(obj.Send(s.modelAttributes), 0)
	}
	attrs, _, err := ChooseAttributes(func() any {
		if !r.sendBool(st.model, s.respondsToSelector, s.model) {
			return nil
		}
		return attrsOf(st.model.Send(s.model))
	}, func() any { return attrsOf(st.model) })
	if err != nil {
		return err
	}
	layout, err := ParseLayout(attrs)
	if err != nil {
		return err
	}
	b, err := Bind(layout, st.built)
	if err != nil {
		return err
	}
	for _, w := range b.Warnings {
		st.warn(w)
	}
	for _, g := range []struct {
		ports []Port
		dst   *[]Port
	}{{b.Inputs, &st.inputs}, {b.Outputs, &st.outputs}} {
		order, err := RequestOrder(g.ports)
		if err != nil {
			return err
		}
		*g.dst = Reorder(g.ports, order)
	}

	sizes := st.dev.opts.Surfaces
	if len(st.built.OutputSurfaces) > 1 {
		// Several surfaces of unequal sizes are reported to fail
		// evaluation (docs/ENGINE.md §3): pad them alike.
		sizes.PadToLargest = true
	}
	inSpecs, outSpecs := PlanSurfaces(PortTensors(st.inputs), PortTensors(st.outputs), sizes)
	inArr, inIdx := r.newAutoreleased(r.clsNSMutableArray), r.newAutoreleased(r.clsNSMutableArray)
	outArr, outIdx := r.newAutoreleased(r.clsNSMutableArray), r.newAutoreleased(r.clsNSMutableArray)
	if inArr == 0 || inIdx == 0 || outArr == 0 || outIdx == 0 {
		return &Error{Op: "request", Desc: "cannot create NSMutableArray"}
	}
	for _, g := range []struct {
		specs      []SurfaceSpec
		dst        *[]surface
		arr, index objc.ID
	}{
		{inSpecs, &st.inSurf, inArr, inIdx},
		{outSpecs, &st.outSurf, outArr, outIdx},
	} {
		// Request order: the surface at position i has symbol position i,
		// and i is the index passed for it.
		for i, spec := range g.specs {
			ref, err := r.createSurface(spec)
			if err != nil {
				return err
			}
			*g.dst = append(*g.dst, surface{ref: ref, spec: spec})
			if err := r.withSurface(ref, spec.AllocSize, lockWrite, func(b []byte) error { clear(b); return nil }); err != nil {
				return err
			}
			w := r.clsSurfaceObject.Send(s.objectWithIOSurface, ref)
			if w == 0 {
				return &Error{Op: "request", Desc: "objectWithIOSurface: returned nil"}
			}
			r.sendVoid(g.arr, s.addObject, w)
			r.sendVoid(g.index, s.addObject, r.clsNSNumber.Send(s.numberWithInt, int32(i)))
		}
	}
	procedure := r.clsNSNumber.Send(s.numberWithInt, int32(0))
	req := r.clsRequest.Send(s.requestWith7, inArr, inIdx, outArr, outIdx, objc.ID(0), objc.ID(0), procedure)
	if req == 0 {
		return &Error{Op: "request", Desc: "requestWithInputs:…procedureIndex: returned nil"}
	}
	st.request = req.Send(s.retain)
	if r.sendBool(st.request, s.respondsToSelector, s.validate) && !r.sendBool(st.request, s.validate) {
		return &Error{Op: "request", Desc: "-[_ANERequest validate] returned NO"}
	}
	// A second request over the same surfaces carries the statistics
	// object the framework fills in (created by +statsWithHardwareExecutionNS:,
	// as the public drivers that read hardware time do). Without it the
	// plain request serves and HardwareTime reports none.
	if st.timer.on {
		st.timer.on = false
		c := r.clsPerfStats
		if c != 0 && r.sendBool(c, s.respondsToSelector, s.statsWithHardwareExecutionNS) {
			if perf := c.Send(s.statsWithHardwareExecutionNS, uint64(0)); perf != 0 {
				if arr := r.newAutoreleased(r.clsNSMutableArray); arr != 0 {
					r.sendVoid(arr, s.addObject, perf)
					st.perf = perf.Send(s.retain)
					if req := r.clsRequest.Send(s.requestWith7, inArr, inIdx, outArr, outIdx, objc.ID(0), arr, procedure); req != 0 {
						if !r.sendBool(req, s.respondsToSelector, s.validate) || r.sendBool(req, s.validate) {
							st.requestS = req.Send(s.retain)
							st.timer.on = true
						}
					}
				}
			}
		}
	}

	// Mapping is opt-in (Options.MapSurfaces); its failure is recorded,
	// not returned.
	st.mapping = tryMap(st.dev.opts.MapSurfaces, func(cache bool) error {
		var nserr objc.ID
		if r.sendBool(st.model, s.mapIOSurfaces, st.request, cache, &nserr) {
			return nil
		}
		return r.nsError("map", nserr)
	})
	return nil
}

func (st *execState) run(inputs, outs [][]float32) error {
	r := st.rt
	for i, p := range st.inputs {
		sf := st.inSurf[i]
		if err := r.withSurface(sf.ref, sf.spec.AllocSize, lockWrite, func(b []byte) error { return p.Pack(b, inputs) }); err != nil {
			return err
		}
	}
	if err := st.evaluate(); err != nil {
		return err
	}
	var errs []error
	for i, p := range st.outputs {
		sf := st.outSurf[i]
		errs = append(errs, r.withSurface(sf.ref, sf.spec.AllocSize, lockReadOnly, func(b []byte) error { return p.Unpack(outs, b) }))
	}
	return errors.Join(errs...)
}

// runHalf is run on fp16 surfaces in the lowering's layout.
func (st *execState) runHalf(in, out [][]uint16) error {
	r := st.rt
	for i, p := range st.inputs {
		sf := st.inSurf[i]
		if err := r.withSurface(sf.ref, sf.spec.AllocSize, lockWrite, func(b []byte) error { return p.PackHalf(b, in, st.prog.Inputs) }); err != nil {
			return err
		}
	}
	if err := st.evaluate(); err != nil {
		return err
	}
	var errs []error
	for i, p := range st.outputs {
		sf := st.outSurf[i]
		errs = append(errs, r.withSurface(sf.ref, sf.spec.AllocSize, lockReadOnly, func(b []byte) error { return p.UnpackHalf(out, b, st.prog.Outputs) }))
	}
	return errors.Join(errs...)
}

// evaluate dispatches the request once, with performance statistics while
// the engine accepts them.
func (st *execState) evaluate() error {
	r, s := st.rt, &st.rt.sel
	wasOn := st.timer.on
	err := st.timer.run(func(withStats bool) error {
		req := st.request
		if withStats {
			req = st.requestS
		}
		var nserr objc.ID
		if !r.sendBool(st.model, s.evaluateWithQoS, QoS, r.emptyDict, req, &nserr) {
			return r.nsError("evaluate", nserr)
		}
		return nil
	}, st.hardwareNS)
	if err != nil {
		return err
	}
	if wasOn && !st.timer.on {
		st.warn(fmt.Sprintf("evaluation with performance statistics failed (%v); evaluating without them from now on", st.timer.off))
	}
	return nil
}

// hardwareNS reads the statistics of the last evaluation of requestS: the
// request's own statistics object if it reports one, else the one it was
// given; 0 when neither answers.
func (st *execState) hardwareNS() uint64 {
	r, s := st.rt, &st.rt.sel
	obj := objc.ID(0)
	if r.sendBool(st.requestS, s.respondsToSelector, s.perfStats) {
		obj = st.requestS.Send(s.perfStats)
	}
	if obj == 0 {
		obj = st.perf
	}
	if obj == 0 || !r.sendBool(obj, s.respondsToSelector, s.hwExecutionTime) {
		return 0
	}
	return r.sendUint(obj, s.hwExecutionTime)
}

// teardown undoes build, in reverse: unmap, release the request, unload,
// release the model, release the surfaces, remove the temporary directory.
// It runs inside a pool.
func (st *execState) teardown() error {
	r, s := st.rt, &st.rt.sel
	var errs []error
	if st.mapping.Mapped {
		r.sendVoid(st.model, s.unmapIOSurfaces, st.request)
		st.mapping.Mapped = false
	}
	for _, id := range []*objc.ID{&st.request, &st.requestS, &st.perf} {
		if *id != 0 {
			r.sendVoid(*id, s.release)
			*id = 0
		}
	}
	if st.loaded {
		var nserr objc.ID
		if !r.sendBool(st.model, s.unloadWithQoS, QoS, &nserr) {
			errs = append(errs, r.nsError("unload", nserr))
		}
		st.loaded = false
	}
	if st.model != 0 {
		r.sendVoid(st.model, s.release)
		st.model = 0
	}
	for _, sf := range append(st.inSurf, st.outSurf...) {
		r.cfRelease(sf.ref)
	}
	st.inSurf, st.outSurf = nil, nil
	if st.id != "" {
		// The directory is shared by every executable of one program and
		// removed with the last of them.
		if modelIDs.release(st.id) && st.dir != "" {
			if err := os.RemoveAll(st.dir); err != nil {
				errs = append(errs, fmt.Errorf("ane: removing %s: %w", st.dir, err))
			}
		}
		st.id, st.dir = "", ""
	}
	return errors.Join(errs...)
}
