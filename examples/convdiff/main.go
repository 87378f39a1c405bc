// Command convdiff solves a convection–diffusion problem on the unit square
// by flexible restarted GMRES with a device preconditioner (krylov.GMRES),
// and writes a PNG with the solution and the convergence history.
//
// The equation is −Δu + Pe·(w·∇u) = 1 with wind w = (1, 1)/√2 and zero
// Dirichlet boundary, discretized by the five-point Laplacian and first-order
// upwind differences on an n×n interior grid (h = 1/(n+1)): a nonsymmetric
// M-matrix, a constant 3×3 stencil on the device. For large Péclet numbers
// the solution develops a boundary layer at the outflow corner (1, 1). The
// host runs FGMRES(m) in float64; each step is one dispatch in which the
// device applies a Chebyshev polynomial in A of degree 16 (sixteen 3×3
// convs) for the ellipse that holds A's field of values, so the host's
// work per step is one float64 stencil application and the Gram–Schmidt
// bookkeeping, and it recomputes the residual after every cycle.
//
//	go run ./examples/convdiff -pe 100 -out convdiff.png
package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"time"

	"github.com/anemone-go/anemone/examples/internal/figure"
	"github.com/anemone-go/anemone/krylov"
	"github.com/anemone-go/anemone/shim"
)

func main() {
	n := flag.Int("n", 64, "interior grid points per side (n² ≤ 16384 on the simulator)")
	pe := flag.Float64("pe", 100, "Péclet number: wind speed relative to diffusion")
	restart := flag.Int("restart", 30, "FGMRES restart length m (steps per cycle, one dispatch each; at most 32)")
	tol := flag.Float64("tol", 1e-10, "relative residual to reach")
	devName := flag.String("device", "", `device: "ane", "sim", "sim-narrow" ("" picks the engine when present)`)
	out := flag.String("out", "convdiff.png", "PNG file to write (empty: none)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("convdiff: ")
	if err := run(*n, *pe, *restart, *tol, *devName, *out); err != nil {
		log.Fatal(err)
	}
}

// stencil returns the coefficients c[dy+1][dx+1] of neighbour (x+dx, y+dy):
// (1/h²)·(4u − Σ neighbours) + Pe·w·(upwind differences)/h.
func stencil(n int, pe float64) [3][3]float64 {
	ih := float64(n + 1) // 1/h
	d := ih * ih
	v := pe / math.Sqrt2 * ih // each wind component, over h
	c := [3][3]float64{
		{0, -d, 0},
		{-d, 4*d + 2*math.Abs(v), -d},
		{0, -d, 0},
	}
	if v > 0 { // backward differences: from the west and the south
		c[1][0] -= v
		c[0][1] -= v
	} else { // forward differences: from the east and the north
		c[1][2] += v
		c[2][1] += v
	}
	return c
}

func run(n int, pe float64, restart int, tol float64, devName, out string) error {
	if n < 1 {
		return fmt.Errorf("grid size %d must be positive", n)
	}
	dev, err := shim.Open(devName)
	if err != nil {
		return err
	}
	defer dev.Close()
	a, err := krylov.Stencil2D(n, n, stencil(n, pe))
	if err != nil {
		return err
	}
	b := make([]float64, n*n)
	for i := range b {
		b[i] = 1 // f = 1
	}

	fmt.Printf("convection–diffusion %d×%d (n = %d), Pe = %g, by FGMRES(%d) on %s, Tol %.0e\n", n, n, n*n, pe, restart, dev.Info().Name, tol)
	fmt.Printf("%8s %10s %16s %12s\n", "dispatch", "iterations", "rel. residual", "elapsed")
	start := time.Now()
	// GMRES's History has one entry per restart cycle; the trace has every
	// dispatch (one GMRES step each), which is what the curve shows.
	perStep := []float64{1} // the relative residual of x = 0
	res, err := krylov.GMRES(a, b, &krylov.Settings{
		Device:  dev,
		Tol:     tol,
		Restart: restart,
		Trace: func(s krylov.Step) {
			perStep = append(perStep, s.Residual)
			fmt.Printf("%8d %10d %16.3e %12v\n", s.Dispatch, s.Iterations, s.Residual, s.Elapsed.Round(time.Millisecond))
		},
	})
	total := time.Since(start)
	if err != nil {
		return err
	}
	fmt.Printf("converged: %v after %d steps (one dispatch each) in %d cycles\n", res.Converged, res.Iterations, len(res.History)-1)
	fmt.Printf("relative residual %.3e (float64, host)\n", res.Residual)
	fmt.Printf("time %v (build %v, device %v, host %v)\n", total.Round(time.Millisecond),
		res.Build.Round(time.Millisecond), res.Device.Round(time.Millisecond), res.Host.Round(time.Millisecond))

	if out == "" {
		return nil
	}
	err = figure.WritePNG(out, figure.Figure{
		Field:      fmt.Sprintf("−Δu + Pe·(w·grad u) = 1, Pe = %g, %d×%d: GMRES solution", pe, n, n),
		Curve:      fmt.Sprintf("FGMRES(%d) on %s, residual after every step", restart, dev.Info().Name),
		U:          figure.Grid{NX: n, NY: n, Values: res.X},
		History:    perStep,
		XLabel:     "GMRES step (one dispatch each)",
		Tol:        tol,
		CurveLabel: "relative residual",
	})
	if err != nil {
		return err
	}
	fmt.Println("wrote", out)
	return nil
}
