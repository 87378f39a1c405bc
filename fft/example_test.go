package fft_test

import (
	"fmt"
	"math"
	"math/cmplx"

	"github.com/anemone-go/anemone/fft"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim" // registers the simulator
)

// Example transforms a tone of frequency 3 on 16 points: all of its energy
// lands in bin 3, with magnitude 16.
func Example() {
	dev, err := shim.Open("sim")
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	x := make([]complex128, 16)
	for j := range x {
		x[j] = cmplx.Exp(complex(0, 2*math.Pi*3*float64(j)/16))
	}
	y, err := fft.Forward(x, &fft.Settings{Device: dev})
	if err != nil {
		panic(err)
	}
	for k, v := range y {
		if cmplx.Abs(v) > 1e-2 {
			fmt.Printf("bin %d: |X| = %.2f\n", k, cmplx.Abs(v))
		}
	}
	// Output:
	// bin 3: |X| = 16.00
}

// ExampleNewPlan compiles a 4096-point transform once (64·64 stages) and
// runs it forward and back in Compensated mode.
func ExampleNewPlan() {
	dev, err := shim.Open("sim")
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	p, err := fft.NewPlan(4096, &fft.Settings{Device: dev, Precision: precision.Compensated})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	x := make([]complex128, p.Len())
	for j := range x {
		x[j] = complex(math.Sin(float64(j)), math.Cos(float64(j*j)))
	}
	y, err := p.Forward(x)
	if err != nil {
		panic(err)
	}
	back, err := p.Inverse(y)
	if err != nil {
		panic(err)
	}
	worst := 0.0
	for j := range x {
		worst = max(worst, cmplx.Abs(back[j]-x[j]))
	}
	fmt.Println("round trip within 1e-6:", worst < 1e-6)
	// Output:
	// round trip within 1e-6: true
}

// ExampleRealForward returns the n/2+1 coefficients of a real sequence, as
// gonum's fourier.FFT.Coefficients does.
func ExampleRealForward() {
	dev, err := shim.Open("sim")
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	c, err := fft.RealForward(x, &fft.Settings{Device: dev})
	if err != nil {
		panic(err)
	}
	for _, v := range c {
		fmt.Printf("(%.2f %+.2fi) ", real(v), imag(v))
	}
	fmt.Println()
	// Output:
	// (36.00 +0.00i) (-4.00 +9.66i) (-4.00 +4.00i) (-4.00 +1.66i) (-4.00 +0.00i)
}

// ExampleForward2D transforms a 4×8 array holding one 2-D wave: its
// energy lands in the bin of its two frequencies.
func ExampleForward2D() {
	dev, err := shim.Open("sim")
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	const rows, cols = 4, 8
	x := make([]complex128, rows*cols)
	for r := range rows {
		for c := range cols {
			x[r*cols+c] = cmplx.Exp(complex(0, 2*math.Pi*(float64(r)/rows+2*float64(c)/cols)))
		}
	}
	y, err := fft.Forward2D(x, rows, cols, &fft.Settings{Device: dev})
	if err != nil {
		panic(err)
	}
	for i, v := range y {
		if cmplx.Abs(v) > 1e-2 {
			fmt.Printf("bin (%d, %d): |X| = %.2f\n", i/cols, i%cols, cmplx.Abs(v))
		}
	}
	// Output:
	// bin (1, 2): |X| = 32.00
}
