//go:build darwin && arm64

package ane

import (
	"fmt"
	"runtime"
	"sort"
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// Every function here must run inside rtFns.withPool: the objects they
// return are autoreleased.

// maxNSDepth bounds recursion when converting nested collections.
const maxNSDepth = 32

func (r *rtFns) isKind(id, cls objc.ID) bool {
	return id != 0 && r.sendBool(id, r.sel.isKindOfClass, cls)
}

// nsString returns an autoreleased NSString holding s (up to a NUL byte).
func (r *rtFns) nsString(s string) objc.ID {
	return r.clsNSString.Send(r.sel.stringWithUTF8String, s)
}

// goString returns the UTF-8 text of an NSString, or the description of any
// other object, or "" for nil.
func (r *rtFns) goString(id objc.ID) string {
	if id == 0 {
		return ""
	}
	if !r.isKind(id, r.clsNSString) {
		id = id.Send(r.sel.description)
		if id == 0 {
			return ""
		}
	}
	return r.sendString(id, r.sel.utf8String)
}

// nsData returns an autoreleased NSData holding a copy of b.
func (r *rtFns) nsData(b []byte) objc.ID {
	if len(b) == 0 {
		return r.clsNSData.Send(r.sel.dataWithBytesLength, unsafe.Pointer(nil), uint64(0))
	}
	id := r.clsNSData.Send(r.sel.dataWithBytesLength, unsafe.Pointer(&b[0]), uint64(len(b)))
	runtime.KeepAlive(b)
	return id
}

// goBytes copies the contents of an NSData.
func (r *rtFns) goBytes(id objc.ID) []byte {
	n := r.sendUint(id, r.sel.length)
	if n == 0 {
		return []byte{}
	}
	p := r.sendPtr(id, r.sel.bytes)
	if p == nil {
		return []byte{}
	}
	return append([]byte(nil), unsafe.Slice((*byte)(p), int(n))...)
}

func (r *rtFns) newAutoreleased(cls objc.ID) objc.ID {
	id := cls.Send(r.sel.new)
	if id == 0 {
		return 0
	}
	return id.Send(r.sel.autorelease)
}

// toNS converts Go data to autoreleased Foundation objects: map[string]any
// to NSDictionary, []any and []string to NSArray, string to NSString,
// []byte to NSData, integers and bools and floats to NSNumber, and an
// objc.ID as itself.
func (r *rtFns) toNS(v any, depth int) (objc.ID, error) {
	if depth > maxNSDepth {
		return 0, fmt.Errorf("ane: value nested deeper than %d", maxNSDepth)
	}
	s := &r.sel
	switch x := v.(type) {
	case objc.ID:
		return x, nil
	case string:
		return r.nsString(x), nil
	case []byte:
		return r.nsData(x), nil
	case bool:
		return r.clsNSNumber.Send(s.numberWithBool, x), nil
	case float32:
		return r.clsNSNumber.Send(s.numberWithDouble, float64(x)), nil
	case float64:
		return r.clsNSNumber.Send(s.numberWithDouble, x), nil
	case map[string]any:
		d := r.newAutoreleased(r.clsNSMutableDictionary)
		if d == 0 {
			return 0, fmt.Errorf("ane: cannot create an NSMutableDictionary")
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			val, err := r.toNS(x[k], depth+1)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", k, err)
			}
			r.sendVoid(d, s.setObjectForKey, val, r.nsString(k))
		}
		return d, nil
	case []string:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = e
		}
		return r.toNS(a, depth)
	case []any:
		a := r.newAutoreleased(r.clsNSMutableArray)
		if a == 0 {
			return 0, fmt.Errorf("ane: cannot create an NSMutableArray")
		}
		for i, e := range x {
			val, err := r.toNS(e, depth+1)
			if err != nil {
				return 0, fmt.Errorf("[%d]: %w", i, err)
			}
			r.sendVoid(a, s.addObject, val)
		}
		return a, nil
	}
	if n, ok := asInt(v); ok {
		return r.clsNSNumber.Send(s.numberWithLongLong, int64(n)), nil
	}
	return 0, fmt.Errorf("ane: cannot convert %T to a Foundation object", v)
}

// fromNS converts Foundation objects to Go data: NSDictionary to
// map[string]any (non-string keys by their description), NSArray to []any,
// NSString to string, NSNumber to int64 (float64 for float and double
// numbers), NSData to []byte, nil to nil, anything else to its description.
func (r *rtFns) fromNS(id objc.ID, depth int) any {
	if id == 0 {
		return nil
	}
	s := &r.sel
	if depth > maxNSDepth {
		return r.goString(id)
	}
	switch {
	case r.isKind(id, r.clsNSString):
		return r.goString(id)
	case r.isKind(id, r.clsNSNumber):
		switch r.sendString(id, s.objCType) {
		case "f", "d":
			return r.sendDouble(id, s.doubleValue)
		}
		return r.sendInt(id, s.longLongValue)
	case r.isKind(id, r.clsNSDictionary):
		keys := id.Send(s.allKeys)
		n := r.sendUint(keys, s.count)
		m := make(map[string]any, int(n))
		for i := range n {
			k := keys.Send(s.objectAtIndex, i)
			m[r.goString(k)] = r.fromNS(id.Send(s.objectForKey, k), depth+1)
		}
		return m
	case r.isKind(id, r.clsNSArray):
		n := r.sendUint(id, s.count)
		a := make([]any, int(n))
		for i := range n {
			a[i] = r.fromNS(id.Send(s.objectAtIndex, i), depth+1)
		}
		return a
	case r.isKind(id, r.clsNSData):
		return r.goBytes(id)
	}
	return r.goString(id)
}

// maxCauses bounds how far nsError follows a chain of underlying errors.
const maxCauses = 8

// nsError turns an NSError out-argument into an *Error, copying its fields
// and its chain of underlying errors (userInfo[NSUnderlyingErrorKey]) out
// before the pool drains.
func (r *rtFns) nsError(op string, errID objc.ID) *Error {
	e := &Error{Op: op}
	if errID == 0 {
		return e
	}
	s := &r.sel
	e.Code = int(r.sendInt(errID, s.code))
	e.Domain = r.goString(errID.Send(s.domain))
	e.Desc = r.goString(errID.Send(s.localizedDescription))
	key := r.nsString(nsUnderlyingErrorKey)
	for cur := errID; len(e.Causes) < maxCauses; {
		info := cur.Send(s.userInfo)
		if info == 0 || !r.isKind(info, r.clsNSDictionary) {
			break
		}
		next := info.Send(s.objectForKey, key)
		if next == 0 || !r.isKind(next, r.clsNSError) {
			break
		}
		e.Causes = append(e.Causes, Cause{
			Domain: r.goString(next.Send(s.domain)),
			Code:   int(r.sendInt(next, s.code)),
			Desc:   r.goString(next.Send(s.localizedDescription)),
		})
		cur = next
	}
	return e
}

// surfaceKeys are the IOSurfaceCreate property names, in SurfaceSpec order.
var surfaceKeys = [...]string{
	"IOSurfaceWidth",
	"IOSurfaceHeight",
	"IOSurfaceBytesPerElement",
	"IOSurfaceBytesPerRow",
	"IOSurfaceAllocSize",
	"IOSurfacePixelFormat",
}

// createSurface makes an IOSurface (+1; CFRelease it) from a CFDictionary of
// CFNumbers, and checks that it is at least as large as asked.
func (r *rtFns) createSurface(spec SurfaceSpec) (uintptr, error) {
	vals := [len(surfaceKeys)]int64{
		int64(spec.Width), int64(spec.Height), int64(spec.BytesPerElement),
		int64(spec.BytesPerRow), int64(spec.AllocSize), int64(spec.PixelFormat),
	}
	var ks, vs [len(surfaceKeys)]uintptr
	defer func() {
		for i := range ks {
			if ks[i] != 0 {
				r.cfRelease(ks[i])
			}
			if vs[i] != 0 {
				r.cfRelease(vs[i])
			}
		}
	}()
	for i, k := range surfaceKeys {
		ks[i] = r.cfStringCreateWithCString(0, k, cfStringEncodingUTF8)
		v := vals[i]
		vs[i] = r.cfNumberCreate(0, cfNumberSInt64Type, unsafe.Pointer(&v))
		if ks[i] == 0 || vs[i] == 0 {
			return 0, &Error{Op: "IOSurface properties", Desc: "cannot create " + k}
		}
	}
	dict := r.cfDictionaryCreate(0, unsafe.Pointer(&ks[0]), unsafe.Pointer(&vs[0]), len(ks), r.cfKeyCallBacks, r.cfValueCallBacks)
	if dict == 0 {
		return 0, &Error{Op: "IOSurface properties", Desc: "CFDictionaryCreate returned NULL"}
	}
	defer r.cfRelease(dict)
	ref := r.ioSurfaceCreate(dict)
	if ref == 0 {
		return 0, &Error{Op: "IOSurfaceCreate", Desc: fmt.Sprintf("returned NULL for %+v", spec)}
	}
	if got := r.ioSurfaceGetAllocSize(ref); got < uintptr(spec.AllocSize) {
		r.cfRelease(ref)
		return 0, &Error{Op: "IOSurfaceCreate", Desc: fmt.Sprintf("surface has %d bytes, asked for %d", got, spec.AllocSize)}
	}
	return ref, nil
}

// withSurface locks a surface, hands f its first size bytes, and unlocks it
// with the same options.
func (r *rtFns) withSurface(ref uintptr, size int, options uint32, f func([]byte) error) error {
	if rc := r.ioSurfaceLock(ref, options, nil); rc != 0 {
		return &Error{Op: "IOSurfaceLock", Code: int(rc), Domain: "kern_return_t"}
	}
	defer r.ioSurfaceUnlock(ref, options, nil)
	base := r.ioSurfaceGetBaseAddress(ref)
	if base == nil {
		return &Error{Op: "IOSurfaceGetBaseAddress", Desc: "returned NULL"}
	}
	return f(unsafe.Slice((*byte)(base), size))
}
