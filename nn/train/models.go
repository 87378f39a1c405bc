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

// CNN is a small convolutional classifier of Size×Size single-channel
// images given as rows of Size² pixels: per entry of Widths a 3×3 conv
// (padding 1) with bias, a ReLU and a 2×2 max pool, then a linear layer to
// Classes outputs. Parameters: "conv<i>_weight" [w, in, 3, 3],
// "conv<i>_bias" [w], "fc_weight" [Classes, features], "fc_bias".
type CNN struct {
	Size, Classes int
	Widths        []int
}

func (c CNN) features() int {
	s := c.Size
	for range c.Widths {
		s /= 2
	}
	return c.Widths[len(c.Widths)-1] * s * s
}

// Network returns the CNN's builder: input "x" [batch, Size²].
func (c CNN) Network() Network {
	return func(g *dataflow.Graph, batch int) (dataflow.Value, dataflow.Value) {
		if c.Size < 1<<len(c.Widths) || c.Classes < 1 || len(c.Widths) == 0 {
			g.Fail(fmt.Errorf("train: CNN %+v: want a width per block and Size ≥ 2^blocks: %w", c, ErrConfig))
			return dataflow.Value{}, dataflow.Value{}
		}
		x := g.Input("x", dataflow.Shape{batch, c.Size * c.Size})
		h := g.Reshape(x, dataflow.Shape{batch, 1, c.Size, c.Size})
		in := 1
		for i, w := range c.Widths {
			wt := g.Input(fmt.Sprintf("conv%d_weight", i+1), dataflow.Shape{w, in, 3, 3})
			b := g.Input(fmt.Sprintf("conv%d_bias", i+1), dataflow.Shape{w})
			h = g.Conv2D(h, wt, dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}})
			h = g.Relu(g.Add(saturate(g, h), g.Reshape(b, dataflow.Shape{1, w, 1, 1})))
			h = nn.MaxPool2D(g, h, 2, 2, 0)
			in = w
		}
		f := c.features()
		h = g.Reshape(h, dataflow.Shape{batch, f})
		w := g.Input("fc_weight", dataflow.Shape{c.Classes, f})
		b := g.Input("fc_bias", dataflow.Shape{c.Classes})
		return x, g.Add(saturate(g, g.MatMul(h, w, false, true)), b)
	}
}

// Init returns seeded initial weights, PyTorch's default for convs and
// linear layers: uniform in ±1/√fan_in.
func (c CNN) Init(seed uint64) nn.Weights {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ws := nn.Weights{}
	u := func(name string, fanIn int, shape ...int) {
		bound := 1 / math.Sqrt(float64(fanIn))
		t := nn.Tensor{Name: name, DType: nn.F32, Shape: shape}
		t.Data = make([]float64, t.Size())
		for j := range t.Data {
			t.Data[j] = bound * (2*rng.Float64() - 1)
		}
		ws.Add(t)
	}
	in := 1
	for i, w := range c.Widths {
		u(fmt.Sprintf("conv%d_weight", i+1), 9*in, w, in, 3, 3)
		u(fmt.Sprintf("conv%d_bias", i+1), 9*in, w)
		in = w
	}
	u("fc_weight", c.features(), c.Classes, c.features())
	u("fc_bias", c.features(), c.Classes)
	return ws
}
