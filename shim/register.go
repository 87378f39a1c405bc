package shim

import (
	"fmt"
	"os"
	"sort"
	"sync"
)

// Opener creates a backend device. Backends (shim/sim, shim/ane) register
// theirs from init functions.
type Opener func() (Device, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Opener{}
)

// Register makes a backend available to Open under name. Registering a name
// twice panics: it is a programming error in a backend's init.
func Register(name string, open Opener) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("shim: device " + name + " registered twice")
	}
	registry[name] = open
}

// Registered returns the names of the registered backends, sorted.
func Registered() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookup(name string) (Opener, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	o, ok := registry[name]
	return o, ok
}

// EnvDevice is the environment variable that picks the default device.
const EnvDevice = "ANEMONE_DEVICE"

// Open opens the named device, one of Registered(): "ane", "sim",
// "sim-narrow" or a family's simulator, "sim-m1", "sim-m3", "sim-m5". The
// empty name means $ANEMONE_DEVICE if set, otherwise the ANE when one is
// present and the simulator when not. Asking for "ane" where there is none gives an
// error wrapping ErrNoDevice. The device comes wrapped in a Cache.
func Open(name string) (Device, error) {
	if name == "" {
		name = os.Getenv(EnvDevice)
	}
	if name == "" {
		if o, ok := lookup("ane"); ok {
			if d, err := o(); err == nil {
				return NewCache(d), nil
			}
		}
		name = "sim"
	}
	o, ok := lookup(name)
	if !ok {
		return nil, fmt.Errorf("shim: device %q is not available (registered: %v): %w", name, Registered(), ErrNoDevice)
	}
	d, err := o()
	if err != nil {
		return nil, fmt.Errorf("shim: opening %q: %w", name, err)
	}
	return NewCache(d), nil
}

// Default opens the default device: Open("").
func Default() (Device, error) { return Open("") }

var shared struct {
	once sync.Once
	dev  Device
	err  error
}

// Shared returns the process's default device, opened once by Open("").
// The packages that run on a device (krylov, fft, linalg) use it when their
// settings name none, so that they share one compile cache and together
// stay within the engine's per-process program budget. Do not close it.
func Shared() (Device, error) {
	shared.once.Do(func() { shared.dev, shared.err = Open("") })
	return shared.dev, shared.err
}
