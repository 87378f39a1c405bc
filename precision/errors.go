package precision

import "errors"

// Errors wrapped by the functions of this package. Every error message
// starts with "precision: ".
var (
	// ErrRange reports a value that no power-of-two scaling brings into
	// fp16's range: NaN or ±Inf input, an fp16 overflow, or a dynamic range
	// wider than a split can cover. Device overflow (shim.ErrRange) is
	// reported wrapping both ErrRange and the device's error.
	ErrRange = errors.New("precision: value out of fp16 range")
	// ErrShape reports operands whose lengths or dimensions do not fit.
	ErrShape = errors.New("precision: shape mismatch")
	// ErrInvalid reports an option or argument outside its supported range:
	// a limb count or digit width the products cannot keep exact, an
	// unknown Mode, a nil function.
	ErrInvalid = errors.New("precision: invalid argument")
	// ErrStagnated reports an iterative refinement whose residual stopped
	// decreasing (RefineSettings.StagnationFactor over StagnationWindow
	// steps) before it reached the tolerance.
	ErrStagnated = errors.New("precision: refinement stagnated")
	// ErrDiverged reports an iterative refinement whose residual grew by
	// more than RefineSettings.DivergenceFactor over the best one seen, or
	// became NaN or ±Inf.
	ErrDiverged = errors.New("precision: refinement diverged")
	// ErrBudget reports an iterative refinement that used
	// RefineSettings.MaxDispatches corrections without reaching the
	// tolerance.
	ErrBudget = errors.New("precision: dispatch budget exhausted")
)
