package shimtest_test

import (
	"fmt"

	"github.com/anemone-go/anemone/shim"
	"github.com/anemone-go/anemone/shim/shimtest"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// A device's conformance is one call; here its results are counted.
func ExampleCheck() {
	dev, err := shim.Open("sim-narrow")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	failed := 0
	results := shimtest.Check(dev)
	for _, r := range results {
		if !r.Pass {
			failed++
		}
	}
	fmt.Println(len(results) > 30, failed)
	// Output: true 0
}
