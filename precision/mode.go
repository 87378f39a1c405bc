package precision

import "fmt"

// Mode selects how much accuracy an operation buys with device work.
//
// The zero Mode means "the operation's default"; each function documents
// its default and what every mode reaches. For the products of this package
// (MatVec, MatMulPlan, MatMul) the default is Compensated.
type Mode int

// Modes.
const (
	// FP16 is one pass on the device with power-of-two scaling: the result
	// has fp16-class error, a few units of u16 = 2⁻¹¹ normwise.
	FP16 Mode = 1
	// Compensated splits the operands into limbs of small integer digits
	// whose products the device computes exactly, and adds the partial
	// results on the host in float64: error about 40·2^(−bits·limbs),
	// fp32-class or better (see NewMatVec).
	Compensated Mode = 2
	// Float64 is refined on the host to float64-class error, where the
	// operation admits it; for the products it is Compensated with enough
	// limbs to cover float64's 53-bit significand.
	Float64 Mode = 3
)

// String returns "FP16", "Compensated", "Float64", "default" for the zero
// Mode and "Mode(n)" otherwise.
func (m Mode) String() string {
	switch m {
	case 0:
		return "default"
	case FP16:
		return "FP16"
	case Compensated:
		return "Compensated"
	case Float64:
		return "Float64"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// valid reports whether m is the zero Mode or one of the constants.
func (m Mode) valid() bool { return m >= 0 && m <= Float64 }
