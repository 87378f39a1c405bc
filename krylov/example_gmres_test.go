package krylov_test

import (
	"fmt"

	"github.com/anemone-go/anemone/krylov"
)

// ExampleGMRES solves a convection–diffusion problem on a 32×32 grid: the
// five-point Laplacian (scaled by 1/h²) plus a first-order upwind
// derivative for the wind (20, 0), a nonsymmetric operator.
func ExampleGMRES() {
	const nx = 32
	ih := float64(nx + 1) // 1/h
	d, w := ih*ih, 20*ih
	a, err := krylov.Stencil2D(nx, nx, [3][3]float64{
		{0, -d, 0},
		{-d - w, 4*d + w, -d},
		{0, -d, 0},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := make([]float64, nx*nx)
	for i := range b {
		b[i] = 1
	}
	res, err := krylov.GMRES(a, b, &krylov.Settings{Restart: 20, Tol: 1e-10})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("converged:", res.Converged)
	fmt.Println("residual below 1e-10:", res.Residual <= 1e-10)
	fmt.Println("one dispatch per step:", res.Dispatches == res.Iterations)
	// Output:
	// converged: true
	// residual below 1e-10: true
	// one dispatch per step: true
}
