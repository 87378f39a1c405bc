package krylov

import (
	"sync"

	"github.com/anemone-go/anemone/shim"
)

var (
	defaultOnce sync.Once
	defaultDev  shim.Device
	defaultErr  error
)

// defaultDevice opens shim.Open("") once per process and shares it: every
// solve then shares one compile cache.
func defaultDevice() (shim.Device, error) {
	defaultOnce.Do(func() { defaultDev, defaultErr = shim.Open("") })
	return defaultDev, defaultErr
}
