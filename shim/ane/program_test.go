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
		{"Apple M5", lower.TargetM4},
		{"Apple M10", lower.TargetM4},
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
	}
	for _, c := range ok {
		require.NoError(t, Fits(c[0], c[1]), "%s on %s", c[0].Name, c[1].Name)
	}
	bad := [][2]lower.Target{
		{lower.TargetM3, lower.TargetM1}, // spatial 65536 > 16384
		{lower.TargetM2, lower.TargetM1}, // kernel 15 > 13
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
	require.NoError(t, CheckProgram(good(), lower.TargetM1))
	p := good()
	p.Target = "sim"
	require.NoError(t, CheckProgram(p, lower.TargetM1))

	tests := []struct {
		name string
		edit func(p *lower.Program)
	}{
		{"empty MIL", func(p *lower.Program) { p.MIL = nil }},
		{"no inputs", func(p *lower.Program) { p.Inputs = nil }},
		{"no outputs", func(p *lower.Program) { p.Outputs = nil }},
		{"unknown target", func(p *lower.Program) { p.Target = "ane-z9" }},
		{"empty target", func(p *lower.Program) { p.Target = "" }},
		{"target too large", func(p *lower.Program) { p.Target = "ane-m4" }},
		{"unnamed input", func(p *lower.Program) { p.Inputs[0].Name = "" }},
		{"duplicate output", func(p *lower.Program) { p.Outputs = append(p.Outputs, p.Outputs[0]) }},
		{"rank-3 device shape", func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{4, 1, 32} }},
		{"batch not 1", func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{2, 4, 1, 32} }},
		{"height not 1", func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{1, 4, 2, 32} }},
		{"zero channels", func(p *lower.Program) { p.Inputs[0].DeviceShape = []int{1, 0, 1, 32} }},
		{"row longer than stride", func(p *lower.Program) { p.Inputs[0].Shape = []int{4, 40} }},
		{"rows disagree", func(p *lower.Program) { p.Inputs[0].Shape = []int{5, 30} }},
		{"negative dimension", func(p *lower.Program) { p.Inputs[0].Shape = []int{-4, -30} }},
		{"spatial past the device", func(p *lower.Program) { p.Inputs[0] = spec("x", []int{1, 20000}, 1, 20000) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := good()
			tc.edit(p)
			err := CheckProgram(p, lower.TargetM1)
			require.ErrorIs(t, err, ErrProgram)
			require.ErrorIs(t, err, shim.ErrUnsupported)
		})
	}
	require.ErrorIs(t, CheckProgram(nil, lower.TargetM1), ErrProgram)
}
