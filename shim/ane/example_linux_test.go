package ane_test

import (
	"errors"
	"fmt"

	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/ane"
)

// ExampleAvailable runs only on linux (the file name says so), where there
// is never a Neural Engine. On a Mac the same calls report true and open
// the device.
func ExampleAvailable() {
	fmt.Println(ane.Available())
	_, err := ane.Open()
	fmt.Println(errors.Is(err, shim.ErrNoDevice))
	// Output:
	// false
	// true
}
