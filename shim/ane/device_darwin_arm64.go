//go:build darwin && arm64

package ane

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// Available reports whether the Neural Engine framework and the classes
// this package drives can be loaded into this process. It does not compile
// anything, so a true result does not prove that programs will run.
func Available() bool {
	_, err := loadRuntime()
	return err == nil
}

// Open opens the Neural Engine with DefaultOptions. It fails with an error
// wrapping shim.ErrNoDevice if the framework or its classes cannot be
// loaded.
func Open() (shim.Device, error) { return OpenWith(DefaultOptions()) }

// OpenWith opens the Neural Engine with the given options. It fails with an
// error wrapping shim.ErrNoDevice if the framework or its classes cannot be
// loaded.
func OpenWith(opts Options) (shim.Device, error) {
	r, err := loadRuntime()
	if err != nil {
		return nil, fmt.Errorf("ane: Neural Engine unavailable: %v: %w", err, shim.ErrNoDevice)
	}
	return &device{
		rt:     r,
		info:   InfoFor(TargetForBrand(r.brand())),
		budget: ProcessBudget(),
		opts:   opts,
		execs:  map[*executable]struct{}{},
	}, nil
}

type device struct {
	rt     *rtFns
	info   shim.Info
	budget *Budget
	opts   Options

	// mu serializes every framework call sequence made through this device
	// and its executables, and guards closed and execs.
	mu     sync.Mutex
	closed bool
	execs  map[*executable]struct{}
}

func (d *device) Info() shim.Info { return d.info }

func (d *device) Compile(p *lower.Program) (shim.Executable, error) {
	if err := CheckProgram(p, d.info.Target); err != nil {
		return nil, err
	}
	model, err := PlanModel(p, WeightLayoutFor(d.info.Target, d.opts.Weights))
	if err != nil {
		return nil, err
	}
	files, err := model.Files()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("ane: compile on a closed device: %w", shim.ErrClosed)
	}
	if err := d.budget.Take(); err != nil {
		return nil, err
	}
	e := &executable{dev: d, rt: d.rt, prog: p}
	d.rt.withPool(func() {
		if err = e.build(model, files); err != nil {
			if terr := e.teardown(); terr != nil {
				err = errors.Join(err, terr)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	d.execs[e] = struct{}{}
	return e, nil
}

func (d *device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for e := range d.execs {
		errs = append(errs, e.closeLocked())
	}
	return errors.Join(errs...)
}

type surface struct {
	ref  uintptr // IOSurfaceRef, +1
	spec SurfaceSpec
}

type executable struct {
	dev  *device
	rt   *rtFns
	prog *lower.Program

	model   objc.ID // _ANEInMemoryModel, retained
	request objc.ID // _ANERequest, retained
	id      string  // the model's identifier, once claimed in modelIDs
	dir     string  // the model's temporary directory, once written
	loaded  bool
	closed  bool
	mapping Mapping

	// inputs and outputs are the request's surfaces in request order:
	// position i holds the surface of symbol position i.
	inputs, outputs []Port
	inSurf, outSurf []surface
}

// Mapping reports what became of the optional surface mapping
// (Options.MapSurfaces).
func (e *executable) Mapping() Mapping {
	e.dev.mu.Lock()
	defer e.dev.mu.Unlock()
	return e.mapping
}

func (e *executable) Program() *lower.Program { return e.prog }

// build runs the compile pipeline: descriptor, model, files, compile,
// load, layout, surfaces, request. On error the caller
// runs teardown, which undoes whatever part was done.
func (e *executable) build(m *Model, files []File) error {
	r, s := e.rt, &e.rt.sel

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
	e.model = model.Send(s.retain)

	hex, err := ModelDirName(r.goString(e.model.Send(s.hexStringIdentifier)))
	if err != nil {
		return err
	}
	// The weight file's name carries the program hash, so a different
	// program should never get this identifier; if the framework gives it
	// one anyway, refuse rather than share its directory and compilation.
	if err := modelIDs.claim(hex, m.Hash); err != nil {
		return err
	}
	e.id = hex
	tmp := r.goString(r.nsTemporaryDirectory())
	if tmp == "" {
		tmp = os.TempDir()
	}
	e.dir = filepath.Join(tmp, hex)
	if err := WriteFiles(e.dir, files); err != nil {
		return err
	}

	var nserr objc.ID
	if !r.sendBool(e.model, s.compileWithQoS, QoS, r.emptyDict, &nserr) {
		return r.nsError("compile", nserr)
	}
	nserr = 0
	if !r.sendBool(e.model, s.loadWithQoS, QoS, r.emptyDict, &nserr) {
		time.Sleep(loadRetryDelay)
		nserr = 0
		if !r.sendBool(e.model, s.loadWithQoS, QoS, r.emptyDict, &nserr) {
			return r.nsError("load", nserr)
		}
	}
	e.loaded = true

	// The attributes: from the inner _ANEModel when there is one, else from
	// the in-memory model itself.
	attrsOf := func(obj objc.ID) any {
		if obj == 0 || !r.sendBool(obj, s.respondsToSelector, s.modelAttributes) {
			return nil
		}
		return r.fromNS(obj.Send(s.modelAttributes), 0)
	}
	attrs, _, err := ChooseAttributes(func() any {
		if !r.sendBool(e.model, s.respondsToSelector, s.model) {
			return nil
		}
		return attrsOf(e.model.Send(s.model))
	}, func() any { return attrsOf(e.model) })
	if err != nil {
		return err
	}
	layout, err := ParseLayout(attrs)
	if err != nil {
		return err
	}
	b, err := Bind(layout, e.prog)
	if err != nil {
		return err
	}
	for _, g := range []struct {
		ports []Port
		dst   *[]Port
	}{{b.Inputs, &e.inputs}, {b.Outputs, &e.outputs}} {
		order, err := RequestOrder(g.ports)
		if err != nil {
			return err
		}
		*g.dst = Reorder(g.ports, order)
	}

	inSpecs, outSpecs := PlanSurfaces(PortTensors(e.inputs), PortTensors(e.outputs), e.dev.opts.Surfaces)
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
		{inSpecs, &e.inSurf, inArr, inIdx},
		{outSpecs, &e.outSurf, outArr, outIdx},
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
	e.request = req.Send(s.retain)
	if r.sendBool(e.request, s.respondsToSelector, s.validate) && !r.sendBool(e.request, s.validate) {
		return &Error{Op: "request", Desc: "-[_ANERequest validate] returned NO"}
	}

	// Mapping is opt-in (Options.MapSurfaces); its failure is recorded,
	// not returned.
	e.mapping = tryMap(e.dev.opts.MapSurfaces, func(cache bool) error {
		var nserr objc.ID
		if r.sendBool(e.model, s.mapIOSurfaces, e.request, cache, &nserr) {
			return nil
		}
		return r.nsError("map", nserr)
	})
	return nil
}

func (e *executable) Run(inputs [][]float32) ([][]float32, error) {
	d := e.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if e.closed {
		return nil, fmt.Errorf("ane: run on a closed executable: %w", shim.ErrClosed)
	}
	if len(inputs) != len(e.prog.Inputs) {
		return nil, fmt.Errorf("ane: %d inputs, program takes %d: %w", len(inputs), len(e.prog.Inputs), shim.ErrShape)
	}
	for i, s := range e.prog.Inputs {
		if len(inputs[i]) != s.Size() {
			return nil, fmt.Errorf("ane: input %q has %d values, want %d: %w", s.Name, len(inputs[i]), s.Size(), shim.ErrShape)
		}
	}
	outs := make([][]float32, len(e.prog.Outputs))
	for i, s := range e.prog.Outputs {
		outs[i] = make([]float32, s.Size())
	}
	var err error
	e.rt.withPool(func() { err = e.run(inputs, outs) })
	if err != nil {
		return nil, err
	}
	return outs, nil
}

func (e *executable) run(inputs, outs [][]float32) error {
	r, s := e.rt, &e.rt.sel
	for i, p := range e.inputs {
		sf := e.inSurf[i]
		if err := r.withSurface(sf.ref, sf.spec.AllocSize, lockWrite, func(b []byte) error { return p.Pack(b, inputs) }); err != nil {
			return err
		}
	}
	var nserr objc.ID
	if !r.sendBool(e.model, s.evaluateWithQoS, QoS, r.emptyDict, e.request, &nserr) {
		return r.nsError("evaluate", nserr)
	}
	var errs []error
	for i, p := range e.outputs {
		sf := e.outSurf[i]
		errs = append(errs, r.withSurface(sf.ref, sf.spec.AllocSize, lockReadOnly, func(b []byte) error { return p.Unpack(outs, b) }))
	}
	return errors.Join(errs...)
}

func (e *executable) Close() error {
	d := e.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	return e.closeLocked()
}

// closeLocked runs with d.mu held.
func (e *executable) closeLocked() error {
	if e.closed {
		return nil
	}
	e.closed = true
	delete(e.dev.execs, e)
	var err error
	e.rt.withPool(func() { err = e.teardown() })
	return err
}

// teardown undoes build, in reverse: unmap, release the request, unload,
// release the model, release the surfaces, remove the temporary directory.
// It runs inside a pool.
func (e *executable) teardown() error {
	r, s := e.rt, &e.rt.sel
	var errs []error
	if e.mapping.Mapped {
		r.sendVoid(e.model, s.unmapIOSurfaces, e.request)
		e.mapping.Mapped = false
	}
	if e.request != 0 {
		r.sendVoid(e.request, s.release)
		e.request = 0
	}
	if e.loaded {
		var nserr objc.ID
		if !r.sendBool(e.model, s.unloadWithQoS, QoS, &nserr) {
			errs = append(errs, r.nsError("unload", nserr))
		}
		e.loaded = false
	}
	if e.model != 0 {
		r.sendVoid(e.model, s.release)
		e.model = 0
	}
	for _, sf := range append(e.inSurf, e.outSurf...) {
		r.cfRelease(sf.ref)
	}
	e.inSurf, e.outSurf = nil, nil
	if e.id != "" {
		// The directory is shared by every executable of one program and
		// removed with the last of them.
		if modelIDs.release(e.id) && e.dir != "" {
			if err := os.RemoveAll(e.dir); err != nil {
				errs = append(errs, fmt.Errorf("ane: removing %s: %w", e.dir, err))
			}
		}
		e.id, e.dir = "", ""
	}
	return errors.Join(errs...)
}
