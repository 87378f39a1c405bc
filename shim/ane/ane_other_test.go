//go:build !(darwin && arm64)

package ane

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/shim"
)

func TestNoDeviceHere(t *testing.T) {
	require.False(t, Available())
	d, err := Open()
	require.Nil(t, d)
	require.ErrorIs(t, err, shim.ErrNoDevice)
	d, err = OpenWith(Options{MapSurfaces: true})
	require.Nil(t, d)
	require.ErrorIs(t, err, shim.ErrNoDevice)
	require.False(t, slices.Contains(shim.Registered(), "ane"), "the ane device registers only on darwin/arm64")
	_, err = shim.Open("ane")
	require.ErrorIs(t, err, shim.ErrNoDevice)
}
