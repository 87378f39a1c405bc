// Command nn runs a small seeded convolutional network on the default
// device with nothing imported from anemone but package nn (and the graph
// it builds on): nn links the default devices itself.
//
//	go run ./examples/oneimport/nn
package main

import (
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
)

func main() {
	if _, err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run classifies one random image and returns the largest difference of
// the device's logits from the float64 evaluation of the same graph,
// relative to the largest logit.
func run(w io.Writer) (float64, error) {
	cfg := nn.SmallCNN
	g, err := nn.CNN(cfg.RandomWeights(1), cfg)
	if err != nil {
		return 0, err
	}
	m, err := nn.Compile(g, nil)
	if err != nil {
		return 0, err
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	img := make([]float64, cfg.InChannels*cfg.Size*cfg.Size)
	for i := range img {
		img[i] = rng.NormFloat64()
	}
	in := map[string][]float64{"image": img}
	out, err := m.Run(in)
	if err != nil {
		return 0, err
	}
	ref, err := dataflow.Eval(g, in)
	if err != nil {
		return 0, err
	}
	got, want := out["logits"], ref["logits"]
	diff, scale := 0.0, 0.0
	for i := range want {
		diff = math.Max(diff, math.Abs(got[i]-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	st := m.Stats()
	fmt.Fprintf(w, "logits %.4g\nlargest difference from float64: %.2g of the largest logit; modeled end to end %v\n", got, diff/scale, st.ModeledTotal.Round(time.Microsecond))
	return diff / scale, nil
}
