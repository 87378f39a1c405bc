package mil

// dtypeClass says which Literal slice holds a dtype's values.
type dtypeClass uint8

const (
	classNone dtypeClass = iota
	classFloat
	classInt
	classUint
	classBool
	classString
)

type dtypeInfo struct {
	class dtypeClass
	bits  uint // width of the integer types
}

var dtypes = map[string]dtypeInfo{
	"bool":      {class: classBool},
	"string":    {class: classString},
	"fp16":      {class: classFloat},
	"fp32":      {class: classFloat},
	"fp64":      {class: classFloat},
	"bf16":      {class: classFloat},
	"fp8e4m3fn": {class: classFloat},
	"fp8e5m2":   {class: classFloat},
	"int4":      {class: classInt, bits: 4},
	"int8":      {class: classInt, bits: 8},
	"int16":     {class: classInt, bits: 16},
	"int32":     {class: classInt, bits: 32},
	"int64":     {class: classInt, bits: 64},
	"uint1":     {class: classUint, bits: 1},
	"uint2":     {class: classUint, bits: 2},
	"uint3":     {class: classUint, bits: 3},
	"uint4":     {class: classUint, bits: 4},
	"uint6":     {class: classUint, bits: 6},
	"uint8":     {class: classUint, bits: 8},
	"uint16":    {class: classUint, bits: 16},
	"uint32":    {class: classUint, bits: 32},
	"uint64":    {class: classUint, bits: 64},
}

// KnownDType reports whether s is a MIL dtype spelling: bool, string, fp16,
// fp32, fp64, bf16, fp8e4m3fn, fp8e5m2, int4/8/16/32/64 or
// uint1/2/3/4/6/8/16/32/64.
func KnownDType(s string) bool {
	_, ok := dtypes[s]
	return ok
}

func classOf(dtype string) dtypeClass { return dtypes[dtype].class }

// elementCount is t's element count, or -1 if it overflows an int or a
// dimension is negative.
func elementCount(t Type) int {
	const limit = 1 << 62
	n := 1
	for _, d := range t.Shape {
		if d < 0 {
			return -1
		}
		if d == 0 {
			return 0
		}
		if n > limit/d {
			// Keep scanning: a later zero makes the count 0.
			for _, e := range t.Shape {
				if e == 0 {
					return 0
				}
			}
			return -1
		}
		n *= d
	}
	return n
}

// valueCount is the number of values a literal holds, in the slice its dtype
// selects (or in whichever slice is set, if that one is empty).
func (l *Literal) valueCount() int {
	switch classOf(l.Type.DType) {
	case classFloat:
		return len(l.Floats)
	case classInt, classUint:
		return len(l.Ints)
	case classBool:
		return len(l.Bools)
	case classString:
		return len(l.Strings)
	}
	return len(l.Floats) + len(l.Ints) + len(l.Bools) + len(l.Strings)
}
