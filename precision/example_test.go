package precision_test

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
	"gonum.org/v1/gonum/mat"
)

// ExampleNewMatVec computes y = A·x on the simulator, once as one plain fp16
// pass and once compensated (4 limbs of 6-bit digits, the default).
func ExampleNewMatVec() {
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	a := mat.NewDense(2, 3, []float64{
		1.0 / 3, 2.0 / 3, 1,
		math.Pi, math.E, -1,
	})
	x := []float64{0.1, 0.2, 0.3}
	var want mat.VecDense
	want.MulVec(a, mat.NewVecDense(3, x))

	for _, mode := range []precision.Mode{precision.FP16, precision.Compensated} {
		mv, err := precision.NewMatVec(dev, a, precision.MatVecOptions{Mode: mode})
		if err != nil {
			fmt.Println(err)
			return
		}
		y := make([]float64, 2)
		if err := mv.Apply(y, x); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-11v passes %2d: y = %.9f, error %.0e\n", mode, mv.Passes(), y,
			precision.RelErr(y, want.RawVector().Data))
		mv.Close()
	}
	fmt.Printf("float64:               y = %.9f\n", want.RawVector().Data)
	// Output:
	// FP16        passes  1: y = [0.466796875 0.557617188], error 3e-04
	// Compensated passes  8: y = [0.466666639 0.557815723], error 1e-07
	// float64:               y = [0.466666667 0.557815631]
}

// ExampleRefine solves an SPD system to float64 accuracy with corrections
// that are only fp16-accurate: here a float64 solve rounded to fp16 stands
// in for a device solver.
func ExampleRefine() {
	a := mat.NewSymDense(3, []float64{
		4, 1, 0,
		1, 3, 1,
		0, 1, 2,
	})
	b := []float64{1, 2, 3}
	var chol mat.Cholesky
	chol.Factorize(a)

	residual := func(r, x []float64) error { // float64, on the host
		var ax mat.VecDense
		ax.MulVec(a, mat.NewVecDense(3, x))
		for i := range r {
			r[i] = b[i] - ax.AtVec(i)
		}
		return nil
	}
	correct := func(d, r []float64) error { // r arrives scaled into [1, 2)
		if err := chol.SolveVecTo(mat.NewVecDense(3, d), mat.NewVecDense(3, r)); err != nil {
			return err
		}
		for i := range d {
			d[i] = fp16.Round64(d[i]) // only fp16-accurate
		}
		return nil
	}
	res, err := precision.Refine(make([]float64, 3), residual, correct, precision.RefineSettings{Tol: 1e-15})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("converged %v after %d corrections, residual %.0e\n", res.Converged, res.Dispatches, res.Residual)
	fmt.Printf("x = %.15f\n", res.X)
	// Output:
	// converged true after 5 corrections, residual 0e+00
	// x = [0.222222222222222 0.111111111111111 1.444444444444444]
}

// ExampleSplitToFP16 moves values 43 binades apart through fp16 as three
// limbs, each with its own power-of-two exponent.
func ExampleSplitToFP16() {
	x := []float64{1e6, 1.234567e-7, -3.5}
	limbs, exps, err := precision.SplitToFP16(x, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	y, _ := precision.JoinFP16(limbs, exps) // after a trip through a device
	for i := range x {
		fmt.Printf("%.7g → %.7g\n", x[i], y[i])
	}
	_, _, err = precision.SplitToFP16(x, 1)
	fmt.Println(err != nil)
	// Output:
	// 1000000 → 1000000
	// 1.234567e-07 → 1.234002e-07
	// -3.5 → -3.5
	// true
}
