package ane

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

func TestTargetForBrand(t *testing.T) {
	tests := []struct {
		brand string
		want  lower.Target
	}{
		{"Apple M1", lower.TargetM1},
		{"Apple M1 Max", lower.TargetM1},
		{"Apple M2 Pro", lower.TargetM2},
		{"Apple M3", lower.TargetM3},
		{"Apple M3 Ultra", lower.TargetM3},
		{"Apple M4 Max", lower.TargetM4},
		{"Apple M4", lower.TargetM4},
		{"Apple M5", lower.TargetM5},
		{"Apple M5 Max", lower.TargetM5},
		{"Apple M10", lower.TargetM5},
		{"Apple M", lower.TargetM1},
		{"Apple A14 Bionic", lower.TargetM1},
		{"Intel(R) Core(TM) i9", lower.TargetM1},
		{"", lower.TargetM1},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want.Name, TargetForBrand(tc.brand).Name, "%q", tc.brand)
	}
	info := InfoFor(lower.TargetM2)
	require.Equal(t, shim.Info{Name: "ane", Target: lower.TargetM2, Numerics: "hardware fp16", Hardware: true}, info)
}

func TestFits(t *testing.T) {
	ok := [][2]lower.Target{
		{lower.TargetM1, lower.TargetM1},
		{lower.TargetSim, lower.TargetM1},
		{lower.TargetSim, lower.TargetM4},
		{lower.TargetM1, lower.TargetM3},
		{lower.TargetM2, lower.TargetM4},
		{lower.TargetM5, lower.TargetM5},
	}
	for _, c := range ok {
		require.NoError(t, Fits(c[0], c[1]), "%s on %s", c[0].Name, c[1].Name)
	}
	bad := [][2]lower.Target{
		{func() lower.Target { x := lower.TargetM1; x.MaxSpatial = 65536; return x }(), lower.TargetM1}, // spatial 65536 > 16384
		{lower.TargetM2, lower.TargetM1},  // kernel 15 > 13
		{lower.TargetM5, lower.TargetM4},  // M4 clamps width slices; M5 programs may rely on it not
		{lower.TargetM5, lower.TargetM1},  // and spatial 65536 > 16384
		{lower.TargetSim, lower.TargetM5}, // rows of 32 elements (64 bytes); M5 needs 128 bytes
		{func() lower.Target { x := lower.TargetM1; x.Opset = "ios17"; return x }(), lower.TargetM1},
		{func() lower.Target { x := lower.TargetM1; x.RowAlign = 16; return x }(), lower.TargetM1},
		{func() lower.Target { x := lower.TargetM1; x.MinRow = 16; return x }(), lower.TargetM1},
	}
	for _, c := range bad {
		err := Fits(c[0], c[1])
		require.ErrorIs(t, err, ErrProgram, "%+v on %s", c[0], c[1].Name)
		require.ErrorIs(t, err, shim.ErrUnsupported)
	}
}

func TestCheckProgram(t *testing.T) {
	good := func() *lower.Program {
		return &lower.Program{
			MIL:            []byte("program(1.3) { }"),
			Inputs:         []lower.IOSpec{spec("x", []int{4, 30}, 4, 32)},
			Outputs:        []lower.IOSpec{spec("y", []int{4}, 1, 32)},
			InputSurfaces:  []lower.Surface{{Name: "x", Shape: []int{1, 4, 1, 32}}},
			OutputSurfaces: []lower.Surface{{Name: "y", Shape: []int{1, 1, 1, 32}}},
			Target:         "ane-m1",
		}
	}
	// The same program lowered with packed I/O: x in rows 0–3 and b in
	// row 4 of surface "input".
	packed := func() *lower.Program {
		p := good()
		p.Inputs = append(p.Inputs, band("b", []int{32}, 1, 32, 4))
		p.InputSurfaces = []lower.Surface{{Name: "input", Shape: []int{1, 5, 1, 32}}}
		p.OutputSurfaces = []lower.Surface{{Name: "output", Shape: []int{1, 1, 1, 32}}}
		return p
	}
	require.NoError(t, CheckProgram(good(), lower.TargetM1))
	require.NoError(t, CheckProgram(packed(), lower.TargetM1))
	p := good()
	p.Target = "sim"
	require.NoError(t, CheckProgram(p, lower.TargetM1))

	tests := []struct {
		name string
		p    func() *lower.Program
		edit func(p *lower.Program)
	}{
		{"empty MIL", good, func(p *lower.Program) { p.MIL = nil }},
		{"no inputs", good, func(p *lower.Program) { p.Inputs = nil }},
		{"no outputs", good, func(p *lower.Program) { p.Outputs = nil }},
		{"unknown target", good, func(p *lower.Program) { p.Target = "ane-z9" }},
		{"empty target", good, func(p *lower.Program) { p.Target = "" }},
		{"target too large", good, func(p *lower.Program) { p.Target = "ane-m5" }},
		{"unnamed input", good, func(p *lower.Program) { p.Inputs[0].Name = "" }},
		{"duplicate output", good, func(p *lower.Program) { p.Outputs = append(p.Outputs, p.Outputs[0]) }},
		{"rank-3 device shape", good, func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{4, 1, 32} }},
		{"batch not 1", good, func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{2, 4, 1, 32} }},
		{"height not 1", good, func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{1, 4, 2, 32} }},
		{"zero channels", good, func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{1, 0, 1, 32} }},
		{"row longer than stride", good, func(p *lower.Program) { p.Inputs[0].Shape = []int{4, 40} }},
		{"rows disagree", good, func(p *lower.Program) { p.Inputs[0].Shape = []int{5, 30} }},
		{"negative dimension", good, func(p *lower.Program) { p.Inputs[0].Shape = []int{-4, -30} }},
		{"spatial past the device", good, func(p *lower.Program) { p.Inputs[0] = spec("x", []int{1, 20000}, 1, 20000) }},
		{"packed: unnamed surface", packed, func(p *lower.Program) { p.InputSurfaces[0].Name = "" }},
		{"packed: two outputs surfaces of one name", packed, func(p *lower.Program) {
			p.OutputSurfaces = append(p.OutputSurfaces, p.OutputSurfaces[0])
			p.Outputs = append(p.Outputs, band("z", []int{32}, 1, 32, 0))
			p.Outputs[1].Surface = 1
		}},
		{"packed: surface not [1, C, 1, S]", packed, func(p *lower.Program) { p.InputSurfaces[0].Shape = []int{1, 5, 32} }},
		{"packed: band past the surface", packed, func(p *lower.Program) { p.Inputs[1].Channel = 5 }},
		{"packed: negative channel", packed, func(p *lower.Program) { p.Inputs[1].Channel = -1 }},
		{"packed: overlapping inputs", packed, func(p *lower.Program) { p.Inputs[1].Channel = 3 }},
		{"packed: no such surface", packed, func(p *lower.Program) { p.Inputs[1].Surface = 1 }},
		{"packed: band stride differs", packed, func(p *lower.Program) { p.Inputs[1].DeviceShape = []int{1, 1, 1, 64} }},
		{"packed: surface without members", packed, func(p *lower.Program) {
			p.InputSurfaces = append(p.InputSurfaces, lower.Surface{Name: "spare", Shape: []int{1, 1, 1, 32}})
		}},
		{"packed: surface past the device", packed, func(p *lower.Program) { p.OutputSurfaces[0].Shape = []int{1, 1, 1, 32768} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p()
			tc.edit(p)
			err := CheckProgram(p, lower.TargetM1)
			require.ErrorIs(t, err, ErrProgram)
			require.ErrorIs(t, err, shim.ErrUnsupported)
		})
	}
	require.ErrorIs(t, CheckProgram(nil, lower.TargetM1), ErrProgram)
}

// tensorMIL is a program whose pad writes an output band of shape out from
// an intermediate of shape mid, the way the lowering pads rows.
func tensorMIL(mid, out string) []byte {
	return []byte(`program(1.3)
{
    func main<ios18>(tensor<fp16, [1, 1, 1, 32]> x) {
        tensor<int32, [2]> s = const()[name = string("s"), val = tensor<int32, [2]>([20000, 32])];
        tensor<fp16, [20000, 32]> w = const()[name = string("w"), val = tensor<fp16, [20000, 32]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), offset = uint64(64)))];
        tensor<fp16, ` + mid + `> m = reshape(shape = s, x = x)[name = string("m")];
        tensor<fp16, ` + out + `> y = pad(x = m)[name = string("y")];
    } -> (y);
}
`)
}

// TestCheckTensors holds every axis of every computed tensor to the
// target: a rank-2 intermediate's rows to the height limit, a padded band's
// width to the spatial one, and channels and rank to theirs. Constants,
// here a [20000, 32] weight, are the compiler's business.
func TestCheckTensors(t *testing.T) {
	require.NoError(t, CheckTensors(tensorMIL("[16384, 32]", "[1, 1, 1, 16384]"), lower.TargetM1))
	require.NoError(t, CheckTensors(tensorMIL("[1, 65536, 1, 32]", "[1, 1, 1, 65536]"), lower.TargetM4))
	bad := []struct {
		mid, out string
		target   lower.Target
		want     string
	}{
		{"[20000, 32]", "[1, 1, 1, 32]", lower.TargetM1, `tensor "m" (reshape at 6:35 in main) of shape [20000 32]: axis 0 (height) is 20000, over target ane-m1's height limit of 16384`},
		{"[20000, 32]", "[1, 1, 1, 32]", lower.TargetM4, "axis 0 (height) is 20000"},
		{"[1, 1, 20000, 32]", "[1, 1, 1, 32]", lower.TargetM4, "axis 2 (height) is 20000"},
		{"[1, 1, 1, 32]", "[1, 1, 1, 20000]", lower.TargetM1, `tensor "y" (pad at 7:40 in main) of shape [1 1 1 20000]: axis 3 (spatial) is 20000, over target ane-m1's spatial limit of 16384`},
		{"[1, 70000, 1, 32]", "[1, 1, 1, 32]", lower.TargetM4, "axis 1 (channel) is 70000, over target ane-m4's channel limit of 65536"},
		{"[1, 1, 1, 1, 1, 32]", "[1, 1, 1, 32]", lower.TargetM1, "has rank 6, over target ane-m1's 5"},
	}
	for _, tc := range bad {
		err := CheckTensors(tensorMIL(tc.mid, tc.out), tc.target)
		require.ErrorIs(t, err, ErrProgram, "%s %s", tc.mid, tc.out)
		require.ErrorContains(t, err, tc.want)
	}
	err := CheckTensors([]byte("program(1.3)"), lower.TargetM1)
	require.ErrorIs(t, err, ErrProgram)
	require.ErrorContains(t, err, "does not parse")

	// CheckProgram applies it, and to the surfaces' every axis.
	p := &lower.Program{
		MIL:            tensorMIL("[20000, 32]", "[1, 1, 1, 32]"),
		Inputs:         []lower.IOSpec{spec("x", []int{32}, 1, 32)},
		Outputs:        []lower.IOSpec{spec("y", []int{32}, 1, 32)},
		InputSurfaces:  []lower.Surface{{Name: "x", Shape: []int{1, 1, 1, 32}}},
		OutputSurfaces: []lower.Surface{{Name: "y", Shape: []int{1, 1, 1, 32}}},
		Target:         "ane-m1",
	}
	require.ErrorContains(t, CheckProgram(p, lower.TargetM1), "axis 0 (height) is 20000")
	p.MIL = tensorMIL("[16, 32]", "[1, 1, 1, 32]")
	require.NoError(t, CheckProgram(p, lower.TargetM1))
	p.Outputs[0] = spec("y", []int{70000, 32}, 70000, 32)
	p.OutputSurfaces[0].Shape = []int{1, 70000, 1, 32}
	require.ErrorContains(t, CheckProgram(p, lower.TargetM1), `output surface "y" of shape [1 70000 1 32]: axis 1 (channel) is 70000`)
}
