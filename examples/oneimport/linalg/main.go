// Command linalg solves a small dense system on the default device with
// nothing imported from anemone but package linalg: the package links
// the default devices itself (the engine on a Mac, the simulator
// elsewhere).
//
//	go run ./examples/oneimport/linalg
package main

import (
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"time"

	"github.com/anemone-go/anemone/linalg"
	"gonum.org/v1/gonum/mat"
)

func main() {
	if _, err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run solves the 1-D Laplacian system A·x = b for x = (1, 2, …, n) and
// returns the largest error of x.
func run(w io.Writer) (float64, error) {
	const n = 8
	a := mat.NewDense(n, n, nil)
	want := make([]float64, n)
	for i := range n {
		a.Set(i, i, 2)
		if i > 0 {
			a.Set(i, i-1, -1)
		}
		if i < n-1 {
			a.Set(i, i+1, -1)
		}
		want[i] = float64(i + 1)
	}
	b := make([]float64, n)
	mat.NewVecDense(n, b).MulVec(a, mat.NewVecDense(n, want))
	var st linalg.Stats
	x, err := linalg.Solve(a, b, &linalg.Settings{Stats: &st})
	if err != nil {
		return 0, err
	}
	worst := 0.0
	for i := range x {
		worst = math.Max(worst, math.Abs(x[i]-want[i]))
	}
	unit := "dispatches"
	if st.Dispatches == 1 {
		unit = "dispatch"
	}
	fmt.Fprintf(w, "x = %.15g\nlargest error %.3g after %d %s (modeled end to end: %v)\n", x, worst, st.Dispatches, unit, st.ModeledTotal.Round(time.Microsecond))
	return worst, nil
}
