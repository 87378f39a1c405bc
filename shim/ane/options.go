package ane

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/anemone-go/anemone/shim"
)

// Options configure a device opened with OpenWith.
type Options struct {
	// Surfaces sizes the request's IOSurfaces beyond what the layout needs.
	Surfaces SurfaceOptions
	// MapSurfaces asks the framework, once per executable, to map the
	// request's surfaces (mapIOSurfacesWithRequest:cacheInference:error:,
	// with caching first, then without). It is off by default: two of the
	// three public drivers never map and still evaluate, and the third
	// reports that mapping fails on this (MIL) route with code 13. A failed
	// mapping is not an error; it is recorded in the executable's Mapping.
	MapSurfaces bool
	// Weights chooses how a program's constants are split into weight
	// files; WeightsAuto (the zero value) is one file per constant on M1
	// and the lowering's one shared file elsewhere.
	Weights WeightLayout
	// NoHardwareTime leaves the framework's performance statistics off:
	// by default each run asks for the engine's own execution time
	// (Executable.HardwareTime) where the framework offers it, except
	// with MapSurfaces, whose mapping covers one request only.
	NoHardwareTime bool
	// Logger, if set, receives each executable's warnings (the
	// assumptions behind its binding, a fallback compile) as they are
	// made. They are kept in the executable's Warnings either way.
	Logger *slog.Logger
}

// DefaultOptions are the options Open uses: DefaultSurfaceOptions and no
// surface mapping.
func DefaultOptions() Options { return Options{Surfaces: DefaultSurfaceOptions} }

// Executable is what the executables an ANE device compiles implement
// beyond shim.Executable.
type Executable interface {
	shim.Executable
	// Mapping reports what became of Options.MapSurfaces.
	Mapping() Mapping
	// Warnings lists what the device assumed to compile and bind the
	// program (Binding.Warnings, a fallback compile, statistics turned
	// off), oldest first.
	Warnings() []string
	// HardwareTime is the engine's own execution time of the last Run,
	// from the framework's performance statistics, and false when it
	// reported none.
	HardwareTime() (time.Duration, bool)
}

// Mapping records what became of the optional surface mapping of one
// executable (Executable.Mapping), so a caller can see whether
// MapSurfaces took effect.
type Mapping struct {
	Tried  bool  // Options.MapSurfaces was set
	Mapped bool  // the framework accepted a mapping
	Cached bool  // ... with cacheInference:YES
	Err    error // every failed attempt, joined; nil if none failed
}

func (m Mapping) String() string {
	switch {
	case !m.Tried:
		return "not mapped (not requested)"
	case m.Mapped && m.Cached:
		return "mapped, with cached inference"
	case m.Mapped:
		return fmt.Sprintf("mapped without cached inference (with it: %v)", m.Err)
	}
	return fmt.Sprintf("not mapped: %v", m.Err)
}

// tryMap runs the optional mapping: nothing unless enabled, else attempt
// with caching, then without, recording each failure. attempt returns nil
// on success.
func tryMap(enabled bool, attempt func(cache bool) error) Mapping {
	m := Mapping{Tried: enabled}
	if !enabled {
		return m
	}
	var errs []error
	for _, cache := range []bool{true, false} {
		err := attempt(cache)
		if err == nil {
			m.Mapped, m.Cached = true, cache
			break
		}
		errs = append(errs, fmt.Errorf("cacheInference:%v: %w", yesNo(cache), err))
	}
	m.Err = errors.Join(errs...)
	return m
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// ChooseAttributes picks the compiled model's attributes dictionary: the
// inner _ANEModel's modelAttributes when that model exists and reports a
// non-empty dictionary, else the _ANEInMemoryModel's own. Public drivers
// read it from one or the other. Each function returns the dictionary
// converted to Go data, or nil when the object or its attributes are
// missing; outer is called only when inner does not serve. It returns the
// dictionary and which object it came from, or an error wrapping ErrLayout.
func ChooseAttributes(inner, outer func() any) (map[string]any, string, error) {
	var got []string
	for _, c := range []struct {
		from string
		get  func() any
	}{{"the inner _ANEModel", inner}, {"the _ANEInMemoryModel", outer}} {
		if c.get == nil {
			got = append(got, c.from+": absent")
			continue
		}
		v := c.get()
		m, ok := v.(map[string]any)
		if ok && len(m) > 0 {
			return m, c.from, nil
		}
		got = append(got, fmt.Sprintf("%s: %T of %d entries", c.from, v, len(m)))
	}
	return nil, "", fmt.Errorf("%w: no modelAttributes dictionary (%v)", ErrLayout, got)
}
