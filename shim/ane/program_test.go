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
			MIL:     []byte("program(1.3)"),
			Inputs:  []lower.IOSpec{spec("x", []int{4, 30}, 4, 32)},
			Outputs: []lower.IOSpec{spec("y", []int{4}, 1, 32)},
			Target:  "ane-m1",
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
