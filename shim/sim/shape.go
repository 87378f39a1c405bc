package sim

import (
	"fmt"
	"strings"

	"github.com/anemone-go/anemone/lower/mil"
)

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// stridesOf returns the row-major strides of shape.
func stridesOf(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= shape[i]
	}
	return s
}

func equalShapes(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// broadcastShapes applies numpy's rule: align on the right, pad with 1s,
// each pair equal or one of them 1.
func broadcastShapes(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db, db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// broadcastStrides returns the strides with which an operand of shape in
// is read at each index of shape out (0 along broadcast dimensions).
func broadcastStrides(in, out []int) []int {
	st := stridesOf(in)
	s := make([]int, len(out))
	for i := range out {
		j := i - (len(out) - len(in))
		if j >= 0 && in[j] != 1 {
			s[i] = st[j]
		}
	}
	return s
}

// rowOffsets returns, for each row of shape (each index of all dimensions
// but the last, in row-major order), Σ index·strides over those dimensions.
// A rank-0 shape has one row at offset 0.
func rowOffsets(shape, strides []int) []int {
	if len(shape) == 0 {
		return []int{0}
	}
	return offsetsOver(shape[:len(shape)-1], strides[:len(shape)-1])
}

// offsetsOver lists Σ index·strides for every index of shape, row-major.
func offsetsOver(shape, strides []int) []int {
	n := numel(shape)
	out := make([]int, 0, n)
	idx := make([]int, len(shape))
	off := 0
	for range n {
		out = append(out, off)
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			off += strides[d]
			if idx[d] < shape[d] {
				break
			}
			off -= idx[d] * strides[d]
			idx[d] = 0
		}
	}
	return out
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func typeString(t mil.Type) string {
	if !t.Tensor && len(t.Shape) == 0 {
		return t.DType
	}
	return fmt.Sprintf("tensor<%s, %s>", t.DType, shapeString(t.Shape))
}

// normAxis maps an axis in [−rank, rank) to [0, rank).
func normAxis(a, rank int) (int, bool) {
	if a < -rank || a >= rank {
		return 0, false
	}
	if a < 0 {
		a += rank
	}
	return a, true
}
