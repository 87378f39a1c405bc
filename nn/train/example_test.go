package train_test

import (
	"fmt"

	"github.com/anemone-go/anemone/nn/train"
)

// A classifier of two points trained on the default device: the weights
// and Adam's state stay on the device; each step streams the batch in and
// reads the loss back.
func Example() {
	mlp := train.MLP{Sizes: []int{2, 8, 2}}
	tr, err := train.New(train.Config{
		Network: mlp.Network(), Weights: mlp.Init(1), Batch: 2,
		Loss: train.SoftmaxCrossEntropy, Optimizer: train.Adam{LR: 0.05},
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	batch := train.Batch{X: []float64{1, 0, 0, 1}, Y: train.OneHot([]int{0, 1}, 2)}
	first, _ := tr.Step(batch)
	var last float64
	for range 50 {
		last, _ = tr.Step(batch)
	}
	m, _ := tr.Evaluate(batch.X, []int{0, 1})
	fmt.Printf("loss fell %v, accuracy %.0f%%\n", last < first/4, 100*m.Accuracy)
	// Output: loss fell true, accuracy 100%
}
