package linalg_test

import (
	"fmt"

	"github.com/anemone-go/anemone/linalg"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
	"gonum.org/v1/gonum/mat"
)

// ExampleMatMul multiplies two small matrices on the simulator in each
// mode and prints which relative error bounds (1-norm, against gonum's
// float64 product) each mode meets.
func ExampleMatMul() {
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	a := mat.NewDense(2, 3, []float64{1.0 / 3, 2.0 / 3, 1, 0.1, 0.2, 0.3})
	b := mat.NewDense(3, 2, []float64{1, 2, 3, 4, 5, 6})
	var want mat.Dense
	want.Mul(a, b)
	for _, mode := range []precision.Mode{precision.FP16, precision.Compensated, precision.Float64} {
		c, err := linalg.MatMul(a, b, &linalg.Settings{Device: dev, Precision: mode})
		if err != nil {
			fmt.Println(err)
			return
		}
		var d mat.Dense
		d.Sub(c, &want)
		e := mat.Norm(&d, 1) / mat.Norm(&want, 1)
		fmt.Printf("%-11v relative error below 1e-2: %v, 1e-6: %v, 1e-14: %v\n", mode, e < 1e-2, e < 1e-6, e < 1e-14)
	}
	// Output:
	// FP16        relative error below 1e-2: true, 1e-6: false, 1e-14: false
	// Compensated relative error below 1e-2: true, 1e-6: true, 1e-14: false
	// Float64     relative error below 1e-2: true, 1e-6: true, 1e-14: true
}

// ExampleSolve solves a 3×3 system whose solution is (1, 2, 3) to float64
// accuracy: the device inverts and corrects, the host computes residuals.
func ExampleSolve() {
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	a := mat.NewDense(3, 3, []float64{
		4, 1, 0,
		1, 3, 1,
		0, 1, 2,
	})
	b := []float64{6, 10, 8} // A·(1, 2, 3)
	var st linalg.Stats
	x, err := linalg.Solve(a, b, &linalg.Settings{Device: dev, Stats: &st})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("x = %.15f\n", x)
	fmt.Println("backward error ≤ 1e-15:", st.History[len(st.History)-1] <= 1e-15)
	// Output:
	// x = [1.000000000000000 2.000000000000000 3.000000000000000]
	// backward error ≤ 1e-15: true
}

// ExampleSolveMany solves for two right-hand sides at once.
func ExampleSolveMany() {
	dev, err := shim.Open("sim")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	a := mat.NewDense(3, 3, []float64{
		4, 1, 0,
		1, 3, 1,
		0, 1, 2,
	})
	b := mat.NewDense(3, 2, []float64{ // A·(1, 2, 3) and A·(1, 1, 1)
		6, 5,
		10, 5,
		8, 3,
	})
	x, err := linalg.SolveMany(a, b, &linalg.Settings{Device: dev})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("x = %.15f\n", mat.Formatted(x.T(), mat.FormatMATLAB()))
	// Output:
	// x = [1.000000000000000 2.000000000000000 3.000000000000000; 1.000000000000000 1.000000000000000 1.000000000000000]
}

// Example_readme is the README's first program: a 3×3 system solved on the
// default device and refined to float64 accuracy. Its exact solution is
// (1, 1, 1), which the refinement reaches to the last bit.
func Example_readme() {
	a := mat.NewDense(3, 3, []float64{4, 1, 0, 1, 4, 1, 0, 1, 4})
	x, err := linalg.Solve(a, []float64{5, 6, 5}, nil) // on the device, refined to float64
	fmt.Println(x, err)
	// Output:
	// [1 1 1] <nil>
}
