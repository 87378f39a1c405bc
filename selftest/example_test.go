package selftest_test

import (
	"fmt"

	"github.com/anemone-go/anemone/selftest"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
)

// Run the short selftest on the simulator: every probe agrees with the
// simulator's own model, and the rounding probe names its behaviour.
func Example() {
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	rep := selftest.Run(dev, selftest.Options{Short: true})
	fmt.Printf("%s on %s: simulated %v, %d probes depart from the model\n",
		rep.Schema, rep.Device.Name, rep.Simulated, len(rep.Departures()))
	for _, p := range rep.Probes {
		if p.Name == "tie-rounding" {
			fmt.Printf("%s: %s\n", p.Name, p.Values["behaviour"])
		}
	}
	// Output:
	// anemone-selftest/1 on sim: simulated true, 0 probes depart from the model
	// tie-rounding: ties to even
}
