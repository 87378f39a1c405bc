package ane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/anemone-go/anemone/shim"
)

// MinMacOS is the oldest macOS major version this package drives: every
// emitted program is a MIL function of the ios18 opset, which needs the
// compiler of macOS 15, and the public drivers with hardware results all
// state macOS 15 or later (docs/ENGINE.md §3).
const MinMacOS = 15

// OpsetForMacOS decides, from the macOS version (sysctl
// kern.osproductversion, e.g. "15.3.2" or "26.1"), which MIL opset the
// device compiles: "ios18" from macOS 15 on. An older version, or one that
// cannot be read, is an error wrapping shim.ErrNoDevice that says macOS 15
// is needed.
func OpsetForMacOS(version string) (string, error) {
	major, err := macOSMajor(version)
	if err != nil {
		return "", fmt.Errorf("ane: cannot read the macOS version %q (%v); the device needs macOS %d or later, as its programs use the MIL ios18 opset: %w", version, err, MinMacOS, shim.ErrNoDevice)
	}
	if major < MinMacOS {
		return "", fmt.Errorf("ane: macOS %s is too old; the device needs macOS %d or later, as its programs use the MIL ios18 opset (update macOS, or use the simulator): %w", version, MinMacOS, shim.ErrNoDevice)
	}
	return "ios18", nil
}

// macOSMajor parses "M", "M.m" or "M.m.p" (decimal components only) and
// returns M.
func macOSMajor(version string) (int, error) {
	parts := strings.Split(version, ".")
	if len(parts) > 3 {
		return 0, fmt.Errorf("%d components", len(parts))
	}
	var major int
	for i, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" || len(p) > 4 {
			return 0, fmt.Errorf("component %d is %q, not a number", i+1, p)
		}
		if i == 0 {
			major, _ = strconv.Atoi(p)
		}
	}
	if major == 0 {
		return 0, fmt.Errorf("major version 0")
	}
	return major, nil
}

// Probe is what the darwin code learns about the machine before opening the
// device.
type Probe struct {
	// DeviceInfo reports that _ANEDeviceInfo answers +hasANE and
	// +isVirtualMachine; HasANE and VirtualMachine are its answers.
	DeviceInfo     bool
	HasANE         bool
	VirtualMachine bool
	// Brand is sysctl machdep.cpu.brand_string ("Apple M2 Pro"; "Apple M1
	// (Virtual)" in a macOS virtual machine).
	Brand string
}

// CheckDevice decides from a Probe whether there is a Neural Engine to
// drive. In a macOS virtual machine the framework and its classes load but
// there is no engine, and compiles fail: a virtual machine, or a framework
// that reports no engine, is an error wrapping shim.ErrNoDevice. Without
// _ANEDeviceInfo the brand string decides: an Apple M chip not marked
// virtual.
func CheckDevice(p Probe) error {
	virtual := strings.Contains(strings.ToLower(p.Brand), "virtual")
	switch {
	case p.DeviceInfo && p.VirtualMachine, virtual:
		return fmt.Errorf("ane: this is a macOS virtual machine (CPU %q): the Neural Engine is not passed through to guests; run on the host Mac, or use the simulator: %w", p.Brand, shim.ErrNoDevice)
	case p.DeviceInfo && !p.HasANE:
		return fmt.Errorf("ane: the framework reports no Neural Engine on this Mac (CPU %q): %w", p.Brand, shim.ErrNoDevice)
	case p.DeviceInfo:
		return nil
	case strings.HasPrefix(p.Brand, "Apple M"):
		return nil
	}
	return fmt.Errorf("ane: cannot tell whether this Mac has a Neural Engine: no _ANEDeviceInfo, and the CPU %q is not an Apple M chip: %w", p.Brand, shim.ErrNoDevice)
}
