package train

import (
	"fmt"

	"github.com/anemone-go/anemone/dataflow"
)

// Loss adds a scalar loss (shape [1, 1], the mean over the batch) of the
// network output out [B, C] against target [B, C] to g. Every sum is a
// matmul against ones (the wide accumulator), never a reduce_sum.
type Loss func(g *dataflow.Graph, out, target dataflow.Value) dataflow.Value

// ones adds a constant of ones·v under a fresh name.
func onesConst(g *dataflow.Graph, base string, shape dataflow.Shape, v float64) dataflow.Value {
	d := make([]float64, shape.Size())
	for i := range d {
		d[i] = v
	}
	name := base
	for i := 1; ; i++ {
		if _, taken := g.Lookup(name); !taken {
			break
		}
		name = fmt.Sprintf("%s_%d", base, i)
	}
	return g.Const(name, shape, d)
}

func rows(g *dataflow.Graph, out dataflow.Value) (b, c int, ok bool) {
	s := out.Shape()
	if len(s) != 2 {
		g.Fail(fmt.Errorf("train: loss: output of shape %v, want [batch, classes]: %w", s, ErrConfig))
		return 0, 0, false
	}
	return s[0], s[1], true
}

// SoftmaxCrossEntropy is the mean over the batch of −Σ_c t_c·log softmax(z)_c
// for logits z and target distributions t (one-hot labels): with the row
// maximum m subtracted first, log Σ exp(z − m) − Σ_c t_c·(z_c − m), so
// exp never overflows.
func SoftmaxCrossEntropy(g *dataflow.Graph, z, t dataflow.Value) dataflow.Value {
	b, c, ok := rows(g, z)
	if !ok {
		return dataflow.Value{}
	}
	zc := g.Sub(z, g.ReduceMax(z, []int{1}, true))
	col := onesConst(g, "loss_ones", dataflow.Shape{c, 1}, 1)
	lse := g.Log(g.MatMul(g.Exp(zc), col, false, false))
	zt := g.MatMul(g.Mul(t, zc), col, false, false)
	ce := g.Sub(lse, zt) // [B, 1]
	return g.MatMul(onesConst(g, "loss_mean", dataflow.Shape{1, b}, 1/float64(b)), ce, false, false)
}

// MeanSquaredError is the mean over the batch of Σ_c (z_c − t_c)²/C.
func MeanSquaredError(g *dataflow.Graph, z, t dataflow.Value) dataflow.Value {
	b, c, ok := rows(g, z)
	if !ok {
		return dataflow.Value{}
	}
	d := g.Sub(z, t)
	per := g.MatMul(g.Square(d), onesConst(g, "loss_mean_c", dataflow.Shape{c, 1}, 1/float64(c)), false, false)
	return g.MatMul(onesConst(g, "loss_mean", dataflow.Shape{1, b}, 1/float64(b)), per, false, false)
}
