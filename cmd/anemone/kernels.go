package main

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
)

// kernel builds a small graph that `anemone mil` lowers and prints (and
// `anemone cost` prices) for target t. Sizes are checked before anything
// is allocated, as usage errors that name their flag: a vector longer
// than t.MaxSpatial (which Lower also refuses from the shapes, as
// ErrUnsupported, but after matvec has built its m×k constant) and a
// constant past the machine's memory.
type kernel struct {
	doc   string
	build func(t lower.Target, m, k, n int) (*dataflow.Graph, error)
}

var kernels = map[string]kernel{
	"matmul": {"C = A·B, both inputs: [m, k]·[k, n]", func(_ lower.Target, m, k, n int) (*dataflow.Graph, error) {
		if err := positive(size{"m", m}, size{"k", k}, size{"n", n}); err != nil {
			return nil, err
		}
		g := dataflow.New()
		g.Output("c", g.MatMul(g.Input("a", dataflow.Shape{m, k}), g.Input("b", dataflow.Shape{k, n}), false, false))
		return g, g.Err()
	}},
	"matvec": {"y = A·x with a constant [m, k] A (lowered to a 1×1 conv)", func(t lower.Target, m, k, _ int) (*dataflow.Graph, error) {
		if err := positive(size{"m", m}, size{"k", k}); err != nil {
			return nil, err
		}
		if err := withinRow(t, size{"m", m}, size{"k", k}); err != nil {
			return nil, err
		}
		if err := constantFits(m, k); err != nil {
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
	"dot": {"s = x·y for two length-k vectors (a matmul, never reduce_sum)", func(t lower.Target, _, k, _ int) (*dataflow.Graph, error) {
		if err := positive(size{"k", k}); err != nil {
			return nil, err
		}
		if err := withinRow(t, size{"k", k}); err != nil {
			return nil, err
		}
		g := dataflow.New()
		x := g.Input("x", dataflow.Shape{1, k})
		y := g.Input("y", dataflow.Shape{1, k})
		g.Output("s", g.ReduceSum(g.Mul(x, y), []int{-1}, true))
		return g, g.Err()
	}},
	"softmax": {"row softmax of an [m, n] input", func(_ lower.Target, m, _, n int) (*dataflow.Graph, error) {
		if err := positive(size{"m", m}, size{"n", n}); err != nil {
			return nil, err
		}
		g := dataflow.New()
		g.Output("y", g.Softmax(g.Input("x", dataflow.Shape{m, n}), -1))
		return g, g.Err()
	}},
}

// size is a flag's value, named for the error that refuses it.
type size struct {
	flag string
	v    int
}

// positive refuses a size below 1, naming its flag.
func positive(xs ...size) error {
	for _, x := range xs {
		if x.v <= 0 {
			return fmt.Errorf("%w: -%s must be positive, got %d", errUsage, x.flag, x.v)
		}
	}
	return nil
}

// withinRow refuses a vector length past t's last-dimension limit (one
// device row) as a usage error naming the flag; Lower would refuse the
// graph too (ErrUnsupported, from its shapes), but only once it is built.
func withinRow(t lower.Target, xs ...size) error {
	for _, x := range xs {
		if x.v > t.MaxSpatial {
			return fmt.Errorf("%w: -%s %d is a vector longer than target %s's last-dimension limit of %d", errUsage, x.flag, x.v, t.Name, t.MaxSpatial)
		}
	}
	return nil
}

// constBytesPerElement is the peak resident memory per element of
// matvec's constant: measured (/usr/bin/time -f %M, linux/amd64) as 16.8 GB
// for -m 16384 -k 16384, 62.6 bytes an element (the float64 values, the
// lowering's copies and the fp16 blob), rounded up.
const constBytesPerElement = 64

// constantFits refuses an m×k constant whose memory estimate exceeds what
// the machine has (memoryAvailable), before it is allocated.
func constantFits(m, k int) error {
	need := solveBaseBytes + constBytesPerElement*float64(m)*float64(k)
	avail, source := memoryAvailable()
	if need > avail {
		return fmt.Errorf("matvec: a constant of %d×%d elements needs an estimated %.0f bytes, more than the %.0f bytes available (%s)", m, k, need, avail, source)
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
