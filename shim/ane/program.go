package ane

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/lower/mil"
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
// of rows inside its surface consistent with its logical shape, a program
// target that fits the device's, and every tensor the MIL computes within
// the target on every axis (CheckTensors). Errors wrap ErrProgram (and so
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
	if err := p.CheckLayout(); err != nil {
		return fmt.Errorf("%w: %v", ErrProgram, err)
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
			if err := checkAxes(g.kind+" surface "+strconv.Quote(pt.Name), pt.Shape, dev); err != nil {
				return err
			}
		}
	}
	return CheckTensors(p.MIL, dev)
}

// MaxHeight bounds the height axis, the second to last, of every tensor on
// every family (docs/ENGINE.md §5): it is not the spatial axis, and does
// not share its limit.
const MaxHeight = engine.HeightLimit

// CheckTensors parses the MIL and checks every tensor main takes or
// computes against the device target, axis by axis: the rank, the last
// (spatial) axis against MaxSpatial, the second to last (height) against
// MaxHeight, and every other axis against MaxChannels. Constants are left
// to the compiler: they are data in the weight file, not tensors the
// engine lays out. The lowering checks only the last axis of each node, so
// a padded output band or a rank-2 intermediate [R, S] with R past the
// height limit is caught here, before the compiler sees it. A MIL text
// that does not parse, or any tensor out of bounds, is an error wrapping
// ErrProgram naming the tensor, the axis and the limit.
func CheckTensors(text []byte, dev lower.Target) error {
	prog, err := mil.Parse(text)
	if err != nil {
		return fmt.Errorf("%w: the MIL does not parse: %v", ErrProgram, err)
	}
	for _, fn := range prog.Functions {
		for _, v := range fn.Inputs {
			if err := checkVar(fn.Name, "input", v, dev); err != nil {
				return err
			}
		}
		for _, op := range fn.Ops {
			if op.Kind == "const" {
				continue
			}
			for _, v := range op.Outputs {
				if err := checkVar(fn.Name, op.Kind, v, dev); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkVar(fn, kind string, v mil.Var, dev lower.Target) error {
	if !v.Type.Tensor {
		return nil
	}
	return checkAxes(fmt.Sprintf("%s %q (%s at %s in %s)", "tensor", v.Name, kind, v.Pos, fn), v.Type.Shape, dev)
}

// checkAxes holds each axis of shape to its limit on dev; what names the
// tensor in the error.
func checkAxes(what string, shape []int, dev lower.Target) error {
	r := len(shape)
	if r > dev.MaxRank {
		return fmt.Errorf("%w: %s of shape %v has rank %d, over target %s's %d", ErrProgram, what, shape, r, dev.Name, dev.MaxRank)
	}
	for i, d := range shape {
		role, limit := "channel", dev.MaxChannels
		switch i {
		case r - 1:
			role, limit = "spatial", dev.MaxSpatial
		case r - 2:
			role, limit = "height", MaxHeight
		}
		if d > limit {
			return fmt.Errorf("%w: %s of shape %v: axis %d (%s) is %d, over target %s's %s limit of %d; lower it for this target, or split the work", ErrProgram, what, shape, i, role, d, dev.Name, role, limit)
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
