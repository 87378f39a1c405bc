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

// Every layer of package nn on the wide simulator: each passes within its
// bound, and each catches a relative error of 10 % (attention's bound is
// the loosest).
func ExampleCheckLayers() {
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	failed, layers := 0, map[string]bool{}
	catches := true
	for _, r := range shimtest.CheckLayers(dev) {
		layers[r.Op] = true
		if !r.Pass {
			failed++
		}
		catches = catches && r.Detects < 0.1
	}
	fmt.Println(len(layers), failed, catches)
	// Output: 15 0 true
}
