package shim

import (
	"errors"

	"github.com/anemone-go/anemone/lower"
)

// Errors wrapped by devices and executables.
var (
	// ErrNoDevice reports that the requested device is not present.
	ErrNoDevice = errors.New("shim: no such device")
	// ErrRange reports a value that does not fit fp16 (|x| > 65504 after
	// rounding, or NaN), on the way in or out.
	ErrRange = errors.New("shim: value out of fp16 range")
	// ErrShape reports inputs of the wrong count or length.
	ErrShape = errors.New("shim: shape mismatch")
	// ErrUnsupported reports a program the device cannot run.
	ErrUnsupported = errors.New("shim: unsupported")
	// ErrClosed reports use of a closed device or executable.
	ErrClosed = errors.New("shim: closed")
)

// Device compiles lowered programs. Implementations are safe for concurrent
// use; Runs on one device are serialized, as on the engine.
type Device interface {
	Info() Info
	// Compile checks p against the device's target and prepares it to run.
	Compile(p *lower.Program) (Executable, error)
	// Close releases every program compiled on the device.
	Close() error
}

// Executable is a compiled program.
type Executable interface {
	// Program returns the program this executable runs.
	Program() *lower.Program
	// Run takes one float32 slice per program input, in signature order,
	// each in the input's logical row-major shape, and returns one slice per
	// output. Inputs are rounded to fp16 (nearest even); a value that
	// overflows fp16 is an error wrapping ErrRange, never a silent Inf.
	Run(inputs [][]float32) ([][]float32, error)
	// Close releases the program.
	Close() error
}

// Info describes a device.
type Info struct {
	Name     string       // "sim", "sim-narrow", "ane"
	Target   lower.Target // the limits programs are lowered for
	Numerics string       // the numerics model, in words
	Hardware bool         // true for a real Neural Engine
}
