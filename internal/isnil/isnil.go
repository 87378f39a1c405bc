// Package isnil tells a nil operand from a usable one for the packages
// that take gonum matrices (precision, linalg, krylov): a mat.Matrix
// holding a nil pointer, such as (*mat.Dense)(nil), is not == nil, and
// its Dims panics.
package isnil

import (
	"reflect"

	"gonum.org/v1/gonum/mat"
)

// Matrix reports whether a is nil: a nil interface, or one holding a nil
// pointer, interface, map, slice or func.
func Matrix(a mat.Matrix) bool {
	if a == nil {
		return true
	}
	switch v := reflect.ValueOf(a); v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func:
		return v.IsNil()
	}
	return false
}
