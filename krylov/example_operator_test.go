package krylov_test

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/krylov"
)

// diffusion is −∇·(k∇u) on an nx×ny grid of the unit square with zero
// Dirichlet boundary, by the 5-point finite-volume stencil: the coefficient
// of the face between two points is the harmonic mean of k there, times
// 1/h². It varies from point to point, so it is no Stencil2D.
type diffusion struct {
	nx, ny int
	// c[d][i] is the coefficient of point i's neighbour in direction d
	// (west, east, south, north; zero at the boundary), and c[4][i] the
	// centre: the sum of the other four.
	c [5][]float64
}

// The neighbour of (x, y) in each direction, as the offsets (dx, dy).
var directions = [4][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}

func newDiffusion(nx, ny int, k func(x, y float64) float64) *diffusion {
	n := nx * ny
	d := &diffusion{nx: nx, ny: ny}
	for j := range d.c {
		d.c[j] = make([]float64, n)
	}
	hx, hy := 1/float64(nx+1), 1/float64(ny+1)
	for y := range ny {
		for x := range nx {
			i := y*nx + x
			kc := k(float64(x+1)*hx, float64(y+1)*hy)
			for dir, o := range directions {
				kn := k(float64(x+1+o[0])*hx, float64(y+1+o[1])*hy)
				h := hx
				if o[1] != 0 {
					h = hy
				}
				face := 2 * kc * kn / (kc + kn) / (h * h) // harmonic mean, times 1/h²
				d.c[4][i] += face                         // the boundary's face too
				xn, yn := x+o[0], y+o[1]
				if xn >= 0 && xn < nx && yn >= 0 && yn < ny {
					d.c[dir][i] = -face
				}
			}
		}
	}
	return d
}

func (d *diffusion) Dims() int { return d.nx * d.ny }

func (d *diffusion) MulVecTo(dst, u []float64) {
	for y := range d.ny {
		for x := range d.nx {
			i := y*d.nx + x
			s := d.c[4][i] * u[i]
			for dir, o := range directions {
				if c := d.c[dir][i]; c != 0 {
					s += c * u[(y+o[1])*d.nx+x+o[0]]
				}
			}
			dst[i] = s
		}
	}
}

func (d *diffusion) NormInf() float64 {
	norm := 0.0
	for i := range d.c[4] {
		row := 0.0
		for _, c := range d.c {
			row += math.Abs(c[i])
		}
		norm = math.Max(norm, row)
	}
	return norm
}

func (d *diffusion) Diagonal() []float64 { return append([]float64(nil), d.c[4]...) }

// Grid makes diffusion a GridOperator: the solvers hand DeviceApply its
// vectors on the grid, [1, 1, ny, nx], so the grid is not limited to one
// device row of 16384 values.
func (d *diffusion) Grid() (nx, ny int) { return d.nx, d.ny }

// DeviceApply adds y = 2^scale·A·u to the graph, u and y of shape
// [1, 1, ny, nx]. One 3×3 conv with five
// one-hot kernels gathers every point's four neighbours and itself as five
// channels; an elementwise product weighs them by the point's coefficients
// (scaled by 2^scale, which keeps them inside fp16's range); a 1×1 conv
// with ones adds the five channels in the engine's wide accumulator. The
// constants are named, and looked up before they are made, so that the
// solver's many applications in one program share one copy.
func (d *diffusion) DeviceApply(g *dataflow.Graph, u dataflow.Value, scale int) dataflow.Value {
	gather, ok := g.Lookup("diffusion_gather")
	if !ok {
		w := make([]float64, 5*9) // [5 out, 1 in, 3, 3]
		for dir, o := range directions {
			w[dir*9+(1+o[1])*3+(1+o[0])] = 1
		}
		w[4*9+4] = 1 // the centre itself
		gather = g.Const("diffusion_gather", dataflow.Shape{5, 1, 3, 3}, w)
	}
	coef, ok := g.Lookup("diffusion_coef")
	if !ok {
		w := make([]float64, 0, 5*d.nx*d.ny)
		for _, c := range d.c {
			for _, v := range c {
				w = append(w, math.Ldexp(v, scale))
			}
		}
		coef = g.Const("diffusion_coef", dataflow.Shape{1, 5, d.ny, d.nx}, w)
	}
	sum, ok := g.Lookup("diffusion_sum")
	if !ok {
		sum = g.Const("diffusion_sum", dataflow.Shape{1, 5, 1, 1}, []float64{1, 1, 1, 1, 1})
	}
	near := g.Conv2D(u, gather, dataflow.Conv2DOptions{Pads: [4]int{1, 1, 1, 1}}) // [1, 5, ny, nx]
	return g.Conv2D(g.Mul(near, coef), sum, dataflow.Conv2DOptions{})             // [1, 1, ny, nx]
}

// A user-written Operator: diffusion whose coefficient jumps tenfold
// across the middle of the square, solved by CG on the device.
func ExampleOperator() {
	const nx, ny = 24, 24
	a := newDiffusion(nx, ny, func(x, _ float64) float64 {
		if x < 0.5 {
			return 1
		}
		return 10
	})
	b := make([]float64, nx*ny)
	for i := range b {
		b[i] = 1
	}
	res, err := krylov.CG(a, b, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The residual is the host's, in float64: recompute it independently.
	r := make([]float64, len(b))
	a.MulVecTo(r, res.X)
	rr, bb := 0.0, 0.0
	for i := range r {
		rr += (b[i] - r[i]) * (b[i] - r[i])
		bb += b[i] * b[i]
	}
	fmt.Println("converged:", res.Converged)
	fmt.Println("‖b − A·x‖/‖b‖ below 1e-10:", math.Sqrt(rr/bb) <= 1e-10)
	// Output:
	// converged: true
	// ‖b − A·x‖/‖b‖ below 1e-10: true
}
