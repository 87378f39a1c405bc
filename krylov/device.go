package krylov

import (
	"errors"
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"

	"github.com/anemone-go/anemone/shim"
)

// compile lowers and compiles g on dev. A program the target cannot run (too
// long a vector, say) is an error wrapping ErrUnsupported as well as the
// lowering or device error; what names the program in the message.
func compile(dev shim.Device, g *dataflow.Graph, what string) (shim.Executable, shim.CompileReport, error) {
	exe, rep, err := shim.BuildReported(dev, g)
	if err == nil {
		return exe, rep, nil
	}
	if errors.Is(err, lower.ErrUnsupported) || errors.Is(err, shim.ErrUnsupported) {
		return nil, rep, fmt.Errorf("krylov: %s: %w", what, errors.Join(ErrUnsupported, err))
	}
	return nil, rep, fmt.Errorf("krylov: %s: %w", what, err)
}
