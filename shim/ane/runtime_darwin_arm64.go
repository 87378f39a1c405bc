//go:build darwin && arm64

package ane

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// Library paths. With CGO_ENABLED=0 the linker loads no
// framework, so Foundation must be opened before its classes resolve.
const (
	pathObjC           = "/usr/lib/libobjc.A.dylib"
	pathSystem         = "/usr/lib/libSystem.B.dylib"
	pathFoundation     = "/System/Library/Frameworks/Foundation.framework/Foundation"
	pathCoreFoundation = "/System/Library/Frameworks/CoreFoundation.framework/CoreFoundation"
	pathIOSurface      = "/System/Library/Frameworks/IOSurface.framework/IOSurface"
	pathIOSurfaceAlt   = "/usr/lib/libIOSurface.dylib"
	pathANE            = "/System/Library/PrivateFrameworks/AppleNeuralEngine.framework/AppleNeuralEngine"
)

// nsUnderlyingErrorKey is the value of Foundation's NSUnderlyingErrorKey.
const nsUnderlyingErrorKey = "NSUnderlyingError"

// IOSurface lock options.
const (
	lockWrite    uint32 = 0
	lockReadOnly uint32 = 1 // kIOSurfaceLockReadOnly
)

// CoreFoundation constants.
const (
	cfStringEncodingUTF8 uint32 = 0x08000100
	cfNumberSInt64Type          = 4
)

// rt holds everything resolved from the system libraries, once.
type rtFns struct {
	poolPush func() uintptr
	poolPop  func(uintptr)

	// Typed views of objc_msgSend, bound once (objc.Send[T] binds a new
	// function on every call). The ID-returning form is objc.ID.Send.
	sendBool   func(objc.ID, objc.SEL, ...any) bool
	sendInt    func(objc.ID, objc.SEL, ...any) int64
	sendUint   func(objc.ID, objc.SEL, ...any) uint64
	sendDouble func(objc.ID, objc.SEL, ...any) float64
	sendString func(objc.ID, objc.SEL, ...any) string
	sendPtr    func(objc.ID, objc.SEL, ...any) unsafe.Pointer
	sendVoid   func(objc.ID, objc.SEL, ...any)

	nsTemporaryDirectory func() objc.ID

	cfRelease                 func(uintptr)
	cfStringCreateWithCString func(alloc uintptr, s string, encoding uint32) uintptr
	cfNumberCreate            func(alloc uintptr, typ int, value unsafe.Pointer) uintptr
	cfDictionaryCreate        func(alloc uintptr, keys, values unsafe.Pointer, n int, keyCallBacks, valueCallBacks uintptr) uintptr
	cfKeyCallBacks            uintptr // &kCFTypeDictionaryKeyCallBacks
	cfValueCallBacks          uintptr // &kCFTypeDictionaryValueCallBacks

	ioSurfaceCreate         func(props uintptr) uintptr
	ioSurfaceLock           func(ref uintptr, options uint32, seed *uint32) int32
	ioSurfaceUnlock         func(ref uintptr, options uint32, seed *uint32) int32
	ioSurfaceGetBaseAddress func(ref uintptr) unsafe.Pointer
	ioSurfaceGetAllocSize   func(ref uintptr) uintptr

	sysctlbyname func(name string, oldp unsafe.Pointer, oldlenp *uintptr, newp unsafe.Pointer, newlen uintptr) int32

	// Classes, as receivers.
	clsDescriptor, clsInMemoryModel, clsRequest, clsSurfaceObject objc.ID
	clsNSString, clsNSData, clsNSNumber                           objc.ID
	clsNSDictionary, clsNSMutableDictionary                       objc.ID
	clsNSArray, clsNSMutableArray                                 objc.ID
	clsNSError                                                    objc.ID

	// Optional classes: 0 when this framework version lacks them.
	clsDeviceInfo, clsPerfStats objc.ID

	emptyDict objc.ID // a retained, immutable-in-practice empty NSDictionary

	sel selectors
}

// selectors are registered once: RegisterName takes the runtime's lock.
type selectors struct {
	alloc, new, retain, release, autorelease             objc.SEL
	respondsToSelector, isKindOfClass                    objc.SEL
	stringWithUTF8String, utf8String, description        objc.SEL
	dataWithBytesLength, bytes, length                   objc.SEL
	numberWithLongLong, numberWithDouble, numberWithBool objc.SEL
	numberWithInt, longLongValue, doubleValue, objCType  objc.SEL
	setObjectForKey, objectForKey, allKeys, dictionary   objc.SEL
	addObject, count, objectAtIndex                      objc.SEL
	code, domain, localizedDescription, userInfo         objc.SEL

	modelWithMILText, inMemoryModelWithDescriptor, hexStringIdentifier objc.SEL
	compileWithQoS, loadWithQoS, unloadWithQoS                         objc.SEL
	model, modelAttributes                                             objc.SEL
	objectWithIOSurface, requestWith7, validate                        objc.SEL
	mapIOSurfaces, unmapIOSurfaces, evaluateWithQoS                    objc.SEL

	hasANE, isVirtualMachine                                  objc.SEL
	setPerfStatsMask, statsWithHardwareExecutionNS, perfStats objc.SEL
	hwExecutionTime                                           objc.SEL
}

var (
	rtOnce sync.Once
	rt     *rtFns
	rtErr  error
)

// loadRuntime opens the libraries and resolves functions, classes and
// selectors. It runs once; its error is sticky.
func loadRuntime() (*rtFns, error) {
	rtOnce.Do(func() {
		r := &rtFns{}
		if err := r.load(); err != nil {
			rtErr = err
			return
		}
		rt = r
	})
	return rt, rtErr
}

func dlopen(paths ...string) (uintptr, error) {
	var errs []error
	for _, p := range paths {
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, nil
		}
		errs = append(errs, err)
	}
	return 0, fmt.Errorf("ane: dlopen %s: %w", paths[0], errors.Join(errs...))
}

// bind resolves name in lib and binds it to fptr, returning an error where
// purego.RegisterLibFunc would panic.
func bind(fptr any, lib uintptr, name string) error {
	sym, err := purego.Dlsym(lib, name)
	if err != nil || sym == 0 {
		return fmt.Errorf("ane: symbol %s not found: %v", name, err)
	}
	purego.RegisterFunc(fptr, sym)
	return nil
}

func (r *rtFns) load() error {
	libObjC, err := dlopen(pathObjC)
	if err != nil {
		return err
	}
	libSystem, err := dlopen(pathSystem)
	if err != nil {
		return err
	}
	libFoundation, err := dlopen(pathFoundation)
	if err != nil {
		return err
	}
	libCF, err := dlopen(pathCoreFoundation)
	if err != nil {
		return err
	}
	libIOSurface, err := dlopen(pathIOSurface, pathIOSurfaceAlt)
	if err != nil {
		return err
	}
	if _, err := dlopen(pathANE); err != nil {
		return err
	}

	msgSend, err := purego.Dlsym(libObjC, "objc_msgSend")
	if err != nil {
		return fmt.Errorf("ane: objc_msgSend: %w", err)
	}
	purego.RegisterFunc(&r.sendBool, msgSend)
	purego.RegisterFunc(&r.sendInt, msgSend)
	purego.RegisterFunc(&r.sendUint, msgSend)
	purego.RegisterFunc(&r.sendDouble, msgSend)
	purego.RegisterFunc(&r.sendString, msgSend)
	purego.RegisterFunc(&r.sendPtr, msgSend)
	purego.RegisterFunc(&r.sendVoid, msgSend)

	for _, b := range []struct {
		fptr any
		lib  uintptr
		name string
	}{
		{&r.poolPush, libObjC, "objc_autoreleasePoolPush"},
		{&r.poolPop, libObjC, "objc_autoreleasePoolPop"},
		{&r.nsTemporaryDirectory, libFoundation, "NSTemporaryDirectory"},
		{&r.cfRelease, libCF, "CFRelease"},
		{&r.cfStringCreateWithCString, libCF, "CFStringCreateWithCString"},
		{&r.cfNumberCreate, libCF, "CFNumberCreate"},
		{&r.cfDictionaryCreate, libCF, "CFDictionaryCreate"},
		{&r.ioSurfaceCreate, libIOSurface, "IOSurfaceCreate"},
		{&r.ioSurfaceLock, libIOSurface, "IOSurfaceLock"},
		{&r.ioSurfaceUnlock, libIOSurface, "IOSurfaceUnlock"},
		{&r.ioSurfaceGetBaseAddress, libIOSurface, "IOSurfaceGetBaseAddress"},
		{&r.ioSurfaceGetAllocSize, libIOSurface, "IOSurfaceGetAllocSize"},
		{&r.sysctlbyname, libSystem, "sysctlbyname"},
	} {
		if err := bind(b.fptr, b.lib, b.name); err != nil {
			return err
		}
	}
	// The callback structs are data symbols: their addresses are what
	// CFDictionaryCreate takes.
	if r.cfKeyCallBacks, err = purego.Dlsym(libCF, "kCFTypeDictionaryKeyCallBacks"); err != nil {
		return fmt.Errorf("ane: kCFTypeDictionaryKeyCallBacks: %w", err)
	}
	if r.cfValueCallBacks, err = purego.Dlsym(libCF, "kCFTypeDictionaryValueCallBacks"); err != nil {
		return fmt.Errorf("ane: kCFTypeDictionaryValueCallBacks: %w", err)
	}

	for _, c := range []struct {
		dst  *objc.ID
		name string
	}{
		{&r.clsDescriptor, "_ANEInMemoryModelDescriptor"},
		{&r.clsInMemoryModel, "_ANEInMemoryModel"},
		{&r.clsRequest, "_ANERequest"},
		{&r.clsSurfaceObject, "_ANEIOSurfaceObject"},
		{&r.clsNSString, "NSString"},
		{&r.clsNSData, "NSData"},
		{&r.clsNSNumber, "NSNumber"},
		{&r.clsNSDictionary, "NSDictionary"},
		{&r.clsNSMutableDictionary, "NSMutableDictionary"},
		{&r.clsNSArray, "NSArray"},
		{&r.clsNSMutableArray, "NSMutableArray"},
		{&r.clsNSError, "NSError"},
	} {
		cls := objc.GetClass(c.name)
		if cls == 0 {
			return fmt.Errorf("ane: Objective-C class %s not found", c.name)
		}
		*c.dst = objc.ID(cls)
	}

	r.clsDeviceInfo = objc.ID(objc.GetClass("_ANEDeviceInfo"))
	r.clsPerfStats = objc.ID(objc.GetClass("_ANEPerformanceStats"))

	s := &r.sel
	for _, x := range []struct {
		dst  *objc.SEL
		name string
	}{
		{&s.alloc, "alloc"}, {&s.new, "new"}, {&s.retain, "retain"}, {&s.release, "release"}, {&s.autorelease, "autorelease"},
		{&s.respondsToSelector, "respondsToSelector:"}, {&s.isKindOfClass, "isKindOfClass:"},
		{&s.stringWithUTF8String, "stringWithUTF8String:"}, {&s.utf8String, "UTF8String"}, {&s.description, "description"},
		{&s.dataWithBytesLength, "dataWithBytes:length:"}, {&s.bytes, "bytes"}, {&s.length, "length"},
		{&s.numberWithLongLong, "numberWithLongLong:"}, {&s.numberWithDouble, "numberWithDouble:"}, {&s.numberWithBool, "numberWithBool:"},
		{&s.numberWithInt, "numberWithInt:"}, {&s.longLongValue, "longLongValue"}, {&s.doubleValue, "doubleValue"}, {&s.objCType, "objCType"},
		{&s.setObjectForKey, "setObject:forKey:"}, {&s.objectForKey, "objectForKey:"}, {&s.allKeys, "allKeys"}, {&s.dictionary, "dictionary"},
		{&s.addObject, "addObject:"}, {&s.count, "count"}, {&s.objectAtIndex, "objectAtIndex:"},
		{&s.code, "code"}, {&s.domain, "domain"}, {&s.localizedDescription, "localizedDescription"}, {&s.userInfo, "userInfo"},
		{&s.modelWithMILText, "modelWithMILText:weights:optionsPlist:"},
		{&s.inMemoryModelWithDescriptor, "inMemoryModelWithDescriptor:"},
		{&s.hexStringIdentifier, "hexStringIdentifier"},
		{&s.compileWithQoS, "compileWithQoS:options:error:"},
		{&s.loadWithQoS, "loadWithQoS:options:error:"},
		{&s.unloadWithQoS, "unloadWithQoS:error:"},
		{&s.model, "model"}, {&s.modelAttributes, "modelAttributes"},
		{&s.objectWithIOSurface, "objectWithIOSurface:"},
		{&s.requestWith7, "requestWithInputs:inputIndices:outputs:outputIndices:weightsBuffer:perfStats:procedureIndex:"},
		{&s.validate, "validate"},
		{&s.mapIOSurfaces, "mapIOSurfacesWithRequest:cacheInference:error:"},
		{&s.unmapIOSurfaces, "unmapIOSurfacesWithRequest:"},
		{&s.evaluateWithQoS, "evaluateWithQoS:options:request:error:"},
		{&s.hasANE, "hasANE"}, {&s.isVirtualMachine, "isVirtualMachine"},
		{&s.setPerfStatsMask, "setPerfStatsMask:"},
		{&s.statsWithHardwareExecutionNS, "statsWithHardwareExecutionNS:"},
		{&s.perfStats, "perfStats"}, {&s.hwExecutionTime, "hwExecutionTime"},
	} {
		*x.dst = objc.RegisterName(x.name)
	}

	// The framework selectors must exist, or this is not the framework
	// version this package was written against.
	for _, c := range []struct {
		cls  objc.ID
		sel  objc.SEL
		name string
	}{
		{r.clsDescriptor, s.modelWithMILText, "+[_ANEInMemoryModelDescriptor modelWithMILText:weights:optionsPlist:]"},
		{r.clsInMemoryModel, s.inMemoryModelWithDescriptor, "+[_ANEInMemoryModel inMemoryModelWithDescriptor:]"},
		{r.clsRequest, s.requestWith7, "+[_ANERequest requestWithInputs:…procedureIndex:]"},
		{r.clsSurfaceObject, s.objectWithIOSurface, "+[_ANEIOSurfaceObject objectWithIOSurface:]"},
	} {
		if !r.sendBool(c.cls, s.respondsToSelector, c.sel) {
			return fmt.Errorf("ane: %s is missing", c.name)
		}
	}

	var err2 error
	r.withPool(func() {
		d := r.clsNSDictionary.Send(s.dictionary)
		if d == 0 {
			err2 = errors.New("ane: cannot create an empty NSDictionary")
			return
		}
		r.emptyDict = d.Send(s.retain)
	})
	return err2
}

// withPool runs f on a locked OS thread inside an autorelease pool: a pool
// is a per-thread stack, so its push and pop must happen on one thread.
// Anything kept past f must be retained inside it.
func (r *rtFns) withPool(f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pool := r.poolPush()
	defer r.poolPop(pool)
	f()
}

// brand reads machdep.cpu.brand_string, or "" if it cannot.
func (r *rtFns) brand() string { return r.sysctlString("machdep.cpu.brand_string") }

// osVersion reads kern.osproductversion ("15.3.2"), or "" if it cannot.
func (r *rtFns) osVersion() string { return r.sysctlString("kern.osproductversion") }

// probe asks _ANEDeviceInfo, when the framework has it, whether there is
// an engine and whether this is a virtual machine.
func (r *rtFns) probe() Probe {
	p := Probe{Brand: r.brand()}
	c, s := r.clsDeviceInfo, &r.sel
	if c != 0 && r.sendBool(c, s.respondsToSelector, s.hasANE) && r.sendBool(c, s.respondsToSelector, s.isVirtualMachine) {
		r.withPool(func() {
			p.DeviceInfo = true
			p.HasANE = r.sendBool(c, s.hasANE)
			p.VirtualMachine = r.sendBool(c, s.isVirtualMachine)
		})
	}
	return p
}

// sysctlString reads a string sysctl by name, or "" if it cannot.
func (r *rtFns) sysctlString(name string) string {
	var buf [256]byte
	n := uintptr(len(buf))
	if r.sysctlbyname(name, unsafe.Pointer(&buf[0]), &n, nil, 0) != 0 {
		return ""
	}
	if n > uintptr(len(buf)) {
		n = uintptr(len(buf))
	}
	b := buf[:n]
	for i, c := range b {
		if c == 0 {
			b = b[:i]
			break
		}
	}
	return string(b)
}
