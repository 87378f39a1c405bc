//go:build !darwin

package selftest

import "runtime"

// readHostInfo reports GOOS and GOARCH: only darwin has a chip name to read.
func readHostInfo() HostInfo {
	return HostInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, Chip: runtime.GOOS + "/" + runtime.GOARCH, OSVersion: runtime.GOOS}
}
