//go:build !darwin

package main

import "runtime"

// readHostInfo reports GOOS and GOARCH: only darwin has a chip name to read.
func readHostInfo() hostInfo {
	return hostInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, Chip: runtime.GOOS + "/" + runtime.GOARCH, OSVersion: runtime.GOOS}
}
