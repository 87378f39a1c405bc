package main

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/anemone-go/anemone/dataflow"
)

// kernel builds a small graph that `anemone mil` lowers and prints.
type kernel struct {
	doc   string
	build func(m, k, n int) (*dataflow.Graph, error)
}

var kernels = map[string]kernel{
	"matmul": {"C = A·B, both inputs: [m, k]·[k, n]", func(m, k, n int) (*dataflow.Graph, error) {
		if err := positive(m, k, n); err != nil {
			return nil, err
		}
		g := dataflow.New()
		g.Output("c", g.MatMul(g.Input("a", dataflow.Shape{m, k}), g.Input("b", dataflow.Shape{k, n}), false, false))
		return g, g.Err()
	}},
	"matvec": {"y = A·x with a constant [m, k] A (lowered to a 1×1 conv)", func(m, k, _ int) (*dataflow.Graph, error) {
		if err := positive(m, k); err != nil {
			return nil, err
		}
		rng := rand.New(rand.NewPCG(1, 2))
		a := make([]float64, m*k)
		for i := range a {
			a[i] = rng.Float64()*2 - 1
		}
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, k})
		g.Output("y", g.MatMul(x, g.Const("A", dataflow.Shape{m, k}, a), false, true))
		return g, g.Err()
	}},
	"dot": {"s = x·y for two length-k vectors (a matmul, never reduce_sum)", func(_, k, _ int) (*dataflow.Graph, error) {
		if err := positive(k); err != nil {
			return nil, err
		}
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, k})
		y := g.Input("y", dataflow.Shape{1, k})
		g.Output("s", g.ReduceSum(g.Mul(x, y), []int{-1}, true))
		return g, g.Err()
	}},
	"softmax": {"row softmax of an [m, n] input", func(m, _, n int) (*dataflow.Graph, error) {
		if err := positive(m, n); err != nil {
			return nil, err
		}
		g := dataflow.New()
		g.Output("y", g.Softmax(g.Input("x", dataflow.Shape{m, n}), -1))
		return g, g.Err()
	}},
}

func positive(xs ...int) error {
	for _, x := range xs {
		if x <= 0 {
			return fmt.Errorf("%w: sizes must be positive, got %d", errUsage, x)
		}
	}
	return nil
}

func kernelNames() []string {
	names := make([]string, 0, len(kernels))
	for n := range kernels {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
