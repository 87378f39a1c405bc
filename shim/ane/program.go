package ane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// QoS is the quality-of-service value every public driver passes to
// compile, load, evaluate and unload.
const QoS uint32 = 21

// TargetForBrand picks the device target from the CPU brand string
// (sysctl machdep.cpu.brand_string, e.g. "Apple M2 Pro"): M1, M2, M3, M4,
// and M5 (the A16 family) for M5 and later. Anything it does not recognise
// gets TargetM1, the most restrictive family.
func TargetForBrand(brand string) lower.Target {
	_, rest, ok := strings.Cut(brand, "Apple M")
	if !ok {
		return lower.TargetM1
	}
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	gen, err := strconv.Atoi(rest[:end])
	if err != nil {
		return lower.TargetM1
	}
	switch {
	case gen <= 1:
		return lower.TargetM1
	case gen == 2:
		return lower.TargetM2
	case gen == 3:
		return lower.TargetM3
	case gen == 4:
		return lower.TargetM4
	default:
		return lower.TargetM5
	}
}

// InfoFor is the device description for a target.
func InfoFor(t lower.Target) shim.Info {
	return shim.Info{Name: "ane", Target: t, Numerics: "hardware fp16", Hardware: true}
}

// Fits reports whether a program lowered for pt can run on a device with
// target dt: same opset, no limit of pt beyond dt's, rows padded at least
// as coarsely, and no reliance on the absence of a width-slice clamp that
// dt has.
func Fits(pt, dt lower.Target) error {
	var why []string
	if pt.Opset != dt.Opset {
		why = append(why, fmt.Sprintf("opset %q, device %q", pt.Opset, dt.Opset))
	}
	for _, c := range []struct {
		what    string
		got, to int
	}{
		{"rank", pt.MaxRank, dt.MaxRank},
		{"spatial extent", pt.MaxSpatial, dt.MaxSpatial},
		{"channels", pt.MaxChannels, dt.MaxChannels},
		{"kernel extent", pt.MaxKernel, dt.MaxKernel},
	} {
		if c.got > c.to {
			why = append(why, fmt.Sprintf("%s up to %d, device %d", c.what, c.got, c.to))
		}
	}
	if dt.RowAlign > 0 && (pt.RowAlign <= 0 || pt.RowAlign%dt.RowAlign != 0) {
		why = append(why, fmt.Sprintf("rows aligned to %d, device needs a multiple of %d", pt.RowAlign, dt.RowAlign))
	}
	// A program lowered for a family without the width-slice clamp may
	// slice large values at a nonzero last-axis offset, which a clamping
	// family saturates to ±Inf.
	if dt.WidthSliceClamp && !pt.WidthSliceClamp {
		why = append(why, "lowered without the width-slice clamp, which the device has")
	}
	if pt.MinRow < dt.MinRow {
		why = append(why, fmt.Sprintf("rows of at least %d, device needs %d", pt.MinRow, dt.MinRow))
	}
	if len(why) > 0 {
		return fmt.Errorf("%w: lowered for %q, which exceeds device target %q: %s", ErrProgram, pt.Name, dt.Name, strings.Join(why, "; "))
	}
	return nil
}

// CheckProgram checks a program before anything is handed to the framework:
// MIL present, at least one input and one output (the request needs both),
// unique non-empty names for the logical tensors and for the surfaces, every
// surface [1, C, 1, S] within the device target, every logical tensor a band
// of rows inside its surface consistent with its logical shape, and a
// program target that fits the device's. Errors wrap ErrProgram (and so
// shim.ErrUnsupported).
func CheckProgram(p *lower.Program, dev lower.Target) error {
	if p == nil {
		return fmt.Errorf("%w: nil program", ErrProgram)
	}
	if len(p.MIL) == 0 {
		return fmt.Errorf("%w: empty MIL text", ErrProgram)
	}
	if len(p.Inputs) == 0 || len(p.Outputs) == 0 {
		return fmt.Errorf("%w: %d inputs and %d outputs; the device needs at least one of each", ErrProgram, len(p.Inputs), len(p.Outputs))
	}
	pt, err := lower.TargetByName(p.Target)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrProgram, err)
	}
	if err := Fits(pt, dev); err != nil {
		return err
	}
	for _, g := range []struct {
		kind  string
		specs []lower.IOSpec
	}{{"input", p.Inputs}, {"output", p.Outputs}} {
		names := make([]string, len(g.specs))
		for i, s := range g.specs {
			names[i] = s.Name
		}
		if err := uniqueNames(g.kind, names); err != nil {
			return err
		}
	}
	in, out, err := programPorts(p)
	if err != nil {
		return err
	}
	for _, g := range []struct {
		kind  string
		ports []Port
	}{{"input", in}, {"output", out}} {
		names := make([]string, len(g.ports))
		for i, pt := range g.ports {
			names[i] = pt.Name
		}
		if err := uniqueNames(g.kind+" surface", names); err != nil {
			return err
		}
		for _, pt := range g.ports {
			if err := checkShape(g.kind, pt); err != nil {
				return fmt.Errorf("%w: %v", ErrProgram, err)
			}
			if ds := pt.Shape; ds[1] > dev.MaxChannels || ds[3] > dev.MaxSpatial {
				return fmt.Errorf("%w: %s surface %q of shape %v exceeds the device's %d channels or %d spatial", ErrProgram, g.kind, pt.Name, ds, dev.MaxChannels, dev.MaxSpatial)
			}
		}
	}
	return nil
}

// uniqueNames refuses an empty or repeated name among a program's inputs,
// outputs or surfaces (what names them, "input" or "output surface").
func uniqueNames(what string, names []string) error {
	seen := map[string]bool{}
	for i, name := range names {
		if name == "" {
			return fmt.Errorf("%w: %s %d has no name", ErrProgram, what, i)
		}
		if seen[name] {
			return fmt.Errorf("%w: two %ss named %q", ErrProgram, what, name)
		}
		seen[name] = true
	}
	return nil
}
