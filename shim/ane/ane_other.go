//go:build !(darwin && arm64)

package ane

import (
	"fmt"
	"runtime"

	"github.com/anemone-go/anemone/shim"
)

// Available reports whether a Neural Engine can be driven from this process.
// It is always false except on darwin/arm64.
func Available() bool { return false }

// Open opens the Neural Engine with DefaultOptions. Except on darwin/arm64
// it always fails with an error wrapping shim.ErrNoDevice.
func Open() (shim.Device, error) { return OpenWith(DefaultOptions()) }

// OpenWith opens the Neural Engine with the given options. Except on
// darwin/arm64 it always fails with an error wrapping shim.ErrNoDevice.
func OpenWith(Options) (shim.Device, error) {
	return nil, fmt.Errorf("ane: no Neural Engine on %s/%s: %w", runtime.GOOS, runtime.GOARCH, shim.ErrNoDevice)
}
