package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/nn"
)

// MLP is a multilayer perceptron on rows of features: Sizes[0] inputs,
// a ReLU after every hidden layer, Sizes[len−1] outputs. Layer i has the
// parameters "fc<i+1>_weight" [out, in] (PyTorch's layout) and
// "fc<i+1>_bias" [out].
type MLP struct {
	Sizes []int
}

// Network returns the MLP's builder: input "x" [batch, Sizes[0]], each
// layer y = x·Wᵀ + b with the matmul's output saturated at the cliff.
func (m MLP) Network() Network {
	return func(g *dataflow.Graph, batch int) (dataflow.Value, dataflow.Value) {
		if len(m.Sizes) < 2 {
			g.Fail(fmt.Errorf("train: MLP sizes %v, want at least input and output: %w", m.Sizes, ErrConfig))
			return dataflow.Value{}, dataflow.Value{}
		}
		x := g.Input("x", dataflow.Shape{batch, m.Sizes[0]})
		h := x
		for i := 1; i < len(m.Sizes); i++ {
			w := g.Input(fmt.Sprintf("fc%d_weight", i), dataflow.Shape{m.Sizes[i], m.Sizes[i-1]})
			b := g.Input(fmt.Sprintf("fc%d_bias", i), dataflow.Shape{m.Sizes[i]})
			h = g.Add(saturate(g, g.MatMul(h, w, false, true)), b)
			if i < len(m.Sizes)-1 {
				h = g.Relu(h)
			}
		}
		return x, h
	}
}

// Init returns seeded initial weights, PyTorch's default for a linear
// layer: weight and bias uniform in ±1/√in.
func (m MLP) Init(seed uint64) nn.Weights {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ws := nn.Weights{}
	for i := 1; i < len(m.Sizes); i++ {
		in, out := m.Sizes[i-1], m.Sizes[i]
		bound := 1 / math.Sqrt(float64(in))
		u := func(name string, shape ...int) {
			t := nn.Tensor{Name: name, DType: nn.F32, Shape: shape}
			t.Data = make([]float64, t.Size())
			for j := range t.Data {
				t.Data[j] = bound * (2*rng.Float64() - 1)
			}
			ws.Add(t)
		}
		u(fmt.Sprintf("fc%d_weight", i), out, in)
		u(fmt.Sprintf("fc%d_bias", i), out)
	}
	return ws
}
