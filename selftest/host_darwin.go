//go:build darwin

package selftest

import (
	"runtime"
	"syscall"
)

// readHostInfo names the chip and the macOS version from sysctl.
func readHostInfo() HostInfo {
	h := HostInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, Chip: "unknown chip", OSVersion: "unknown macOS"}
	if s, err := syscall.Sysctl("machdep.cpu.brand_string"); err == nil && s != "" {
		h.Chip = s
	}
	if s, err := syscall.Sysctl("kern.osproductversion"); err == nil && s != "" {
		h.OSVersion, h.MacOS = "macOS "+s, s
	}
	return h
}
