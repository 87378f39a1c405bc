package train

import (
	"math/rand/v2"
	"testing"

	"github.com/anemone-go/anemone/shim"
)

func TestSmoke(t *testing.T) {
	m := MLP{Sizes: []int{20, 32, 4}}
	cfg := Config{Network: m.Network(), Weights: m.Init(1), Batch: 16, Loss: SoftmaxCrossEntropy, Optimizer: Adam{LR: 1e-2}}
	dev, err := shim.Open("sim")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(cfg, dev)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := NewReference(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// a linearly separable toy: label = argmax of the first 4 features
	mk := func() Batch {
		x := make([]float64, 16*20)
		labels := make([]int, 16)
		for i := range 16 {
			best := 0
			for j := range 20 {
				x[i*20+j] = rng.Float64()
				if j < 4 && x[i*20+j] > x[i*20+best] {
					best = j
				}
			}
			labels[i] = best
		}
		return Batch{X: x, Y: OneHot(labels, 4)}
	}
	for s := range 200 {
		b := mk()
		l1, err := tr.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		l2, err := ref.Step(b)
		if err != nil {
			t.Fatal(err)
		}
		if s%20 == 0 {
			t.Logf("step %d: device %.4f ref %.4f scale %g/%g", s, l1, l2, tr.Stats().LossScale, ref.LossScale())
		}
	}
	t.Logf("%+v", tr.Stats())
}
