package reference_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/anemone-go/anemone/reference"
)

// CG on the 2-D Poisson problem with a manufactured solution: the discrete
// solution is known exactly, so the error can be measured directly.
func ExampleCG() {
	a, b, xExact, err := reference.ManufacturedPoisson2D(32, 32)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := reference.CG(a, b, reference.CGSettings{Tol: 1e-12})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("unknowns:", a.Dims())
	fmt.Println("converged:", res.Converged)
	fmt.Println("iterations between 100 and 150:", res.Iterations >= 100 && res.Iterations <= 150)
	fmt.Println("true residual below 1e-11:", res.Residual < 1e-11)
	fmt.Println("error below 1e-10:", reference.RelErr(res.X, xExact) < 1e-10)
	// Output:
	// unknowns: 1024
	// converged: true
	// iterations between 100 and 150: true
	// true residual below 1e-11: true
	// error below 1e-10: true
}

// The forward FFT is unnormalized with exponent −2πi·jk/n.
func ExampleFFT() {
	x := []complex128{1, 2, 3, 4}
	for _, c := range reference.FFT(x) {
		// Round away the last-bit noise (and −0) for printing.
		re := math.Round(real(c)*1e9)/1e9 + 0
		im := math.Round(imag(c)*1e9)/1e9 + 0
		fmt.Printf("%g%+gi\n", re, im)
	}
	y := reference.IFFT(reference.FFT(x))
	fmt.Printf("round trip error below 1e-15: %v\n", reference.RelErrComplex(y, x) < 1e-15)
	// Output:
	// 10+0i
	// -2+2i
	// -2+0i
	// -2-2i
	// round trip error below 1e-15: true
}

// Eigenvalues of the 1-D Poisson matrix are known in closed form.
func ExamplePoisson1DEigenvalues() {
	lam, err := reference.Poisson1DEigenvalues(3) // h = 1/4
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lam {
		fmt.Printf("%.4f\n", l)
	}
	// Output:
	// 9.3726
	// 32.0000
	// 54.6274
}

// The generators report impossible arguments as errors wrapping ErrInput
// (or ErrShape), naming the function and the bad value.
func ExampleRandSVD_badInput() {
	_, err := reference.RandSVD(4, 0.5, 3, true, rand.New(rand.NewPCG(1, 2)))
	fmt.Println(err)
	fmt.Println(errors.Is(err, reference.ErrInput))
	// Output:
	// reference: RandSVD: κ = 0.5, want finite and ≥ 1: reference: invalid input
	// true
}
