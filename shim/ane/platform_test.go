package ane

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/shim"
)

func TestOpsetForMacOS(t *testing.T) {
	for _, v := range []string{"15.0", "15.3.2", "15", "26.1", "26.4.1"} {
		op, err := OpsetForMacOS(v)
		require.NoError(t, err, v)
		require.Equal(t, "ios18", op, v)
	}
	for _, v := range []string{"14.6.1", "13.0", "11.7.10"} {
		_, err := OpsetForMacOS(v)
		require.ErrorIs(t, err, shim.ErrNoDevice, v)
		require.ErrorContains(t, err, "needs macOS 15 or later", v)
		require.ErrorContains(t, err, "ios18", v)
		require.ErrorContains(t, err, "too old", v)
	}
	for _, v := range []string{"", "garbage", "15.x", "v15.0", "15..1", ".15", "15.0.1.2", " 15.0", "15.0\x00", "0.1", "99999.0", "-15.0"} {
		_, err := OpsetForMacOS(v)
		require.ErrorIs(t, err, shim.ErrNoDevice, "%q", v)
		require.ErrorContains(t, err, "cannot read the macOS version", "%q", v)
	}
}

func TestCheckDevice(t *testing.T) {
	ok := []Probe{
		{DeviceInfo: true, HasANE: true, Brand: "Apple M3 Pro"},
		{DeviceInfo: true, HasANE: true, Brand: ""}, // the framework's word is enough
		{Brand: "Apple M1"}, // no _ANEDeviceInfo: the brand decides
	}
	for _, p := range ok {
		require.NoError(t, CheckDevice(p), "%+v", p)
	}
	bad := []struct {
		p    Probe
		want string
	}{
		// A macOS guest on an M2 host: the classes load, the VM flag is set.
		{Probe{DeviceInfo: true, HasANE: true, VirtualMachine: true, Brand: "Apple M2 (Virtual)"}, "virtual machine"},
		{Probe{DeviceInfo: true, HasANE: false, VirtualMachine: true, Brand: "Apple M2 (Virtual)"}, "virtual machine"},
		// The brand alone gives a guest away when _ANEDeviceInfo is missing.
		{Probe{Brand: "Apple M1 (Virtual)"}, "virtual machine"},
		{Probe{DeviceInfo: true, HasANE: false, Brand: "Apple M1"}, "reports no Neural Engine"},
		{Probe{Brand: ""}, "cannot tell"},
		{Probe{Brand: "VirtualApple @ 2.50GHz"}, "virtual machine"},
		{Probe{Brand: "Intel(R) Core(TM) i9"}, "cannot tell"},
	}
	for _, tc := range bad {
		err := CheckDevice(tc.p)
		require.ErrorIs(t, err, shim.ErrNoDevice, "%+v", tc.p)
		require.ErrorContains(t, err, tc.want, "%+v", tc.p)
	}
}
