// Command heat2d solves the periodic heat equation u_t = ν·Δu on
// [0, 2π)² by the spectral method on the device: one 2-D FFT of the
// initial field (fft.Plan.Forward), a multiplication of every coefficient
// by exp(−ν·|k|²·t) on the host, and the inverse 2-D FFTs of all requested
// times in one dispatch (fft.Plan.InverseMany). It compares the result with
// the exact solution, a sum of Fourier modes that each decay as
// exp(−ν·|k|²·t), prints the error against time for FP16 and Compensated
// transforms, and writes a PNG with the field and the error curves.
//
//	go run ./examples/heat2d -out heat2d.png
package main

import (
	"flag"
	"fmt"
	"image/color"
	"log"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/anemone-go/anemone/examples/internal/figure"
	"github.com/anemone-go/anemone/fft"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// mode is one Fourier mode a·cos(kx·x + ky·y + φ) of the initial field.
type mode struct {
	a, kx, ky, phase float64
}

// initial is the initial field: a mean, two slow modes, two fast ones
// (|k|² = 41 and 225 decay within t = 0.1 to 0.5).
var initial = []mode{
	{1, 0, 0, 0},
	{1, 1, 2, -math.Pi / 2},
	{0.5, 3, 1, 0},
	{0.25, 5, -4, math.Pi / 2},
	{0.1, 12, 9, 0},
}

// exact is the solution at time t on the n×n grid x_i = 2π·i/n (row y,
// column x).
func exact(n int, nu, t float64) []float64 {
	u := make([]float64, n*n)
	for r := range n {
		for c := range n {
			x, y := 2*math.Pi*float64(c)/float64(n), 2*math.Pi*float64(r)/float64(n)
			v := 0.0
			for _, m := range initial {
				v += m.a * math.Exp(-nu*(m.kx*m.kx+m.ky*m.ky)*t) * math.Cos(m.kx*x+m.ky*y+m.phase)
			}
			u[r*n+c] = v
		}
	}
	return u
}

// wavenumber maps an FFT index to its signed frequency.
func wavenumber(i, n int) float64 {
	if i > n/2 {
		return float64(i - n)
	}
	return float64(i)
}

// result is one mode's solution: the fields at the requested times and
// their errors against the exact solution.
type result struct {
	mode   precision.Mode
	fields [][]float64
	errs   []float64 // max |u − u*| / max |u₀| at each time
}

// solve computes the field at every time with the given precision mode.
func solve(dev shim.Device, m precision.Mode, n int, nu float64, times []float64) (result, error) {
	p, err := fft.NewPlan2D(n, n, &fft.Settings{Device: dev, Precision: m})
	if err != nil {
		return result{}, err
	}
	defer p.Close()
	u0 := exact(n, nu, 0)
	x := make([]complex128, n*n)
	scale := 0.0
	for i, v := range u0 {
		x[i] = complex(v, 0)
		scale = math.Max(scale, math.Abs(v))
	}
	coef, err := p.Forward(x)
	if err != nil {
		return result{}, err
	}
	spectra := make([][]complex128, len(times))
	for k, t := range times {
		s := make([]complex128, n*n)
		for r := range n {
			ky := wavenumber(r, n)
			for c := range n {
				kx := wavenumber(c, n)
				s[r*n+c] = coef[r*n+c] * complex(math.Exp(-nu*(kx*kx+ky*ky)*t), 0)
			}
		}
		spectra[k] = s
	}
	us, err := p.InverseMany(spectra) // every time level in one dispatch
	if err != nil {
		return result{}, err
	}
	res := result{mode: m}
	for k, t := range times {
		want := exact(n, nu, t)
		field := make([]float64, n*n)
		worst := 0.0
		for i, v := range us[k] {
			field[i] = real(v)
			worst = math.Max(worst, math.Abs(real(v)-want[i]))
		}
		res.fields = append(res.fields, field)
		res.errs = append(res.errs, worst/scale)
	}
	return res, nil
}

func main() {
	n := flag.Int("n", 128, "grid points per side (a product of 2, 3 and 5)")
	nu := flag.Float64("nu", 1, "diffusivity ν")
	tEnd := flag.Float64("t", 1, "final time")
	steps := flag.Int("steps", 20, "time levels after t = 0")
	devName := flag.String("device", "", `device: "ane", "sim", "sim-narrow" ("" picks the engine when present)`)
	out := flag.String("out", "heat2d.png", "PNG file to write (empty: none)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("heat2d: ")
	if _, err := run(*n, *nu, *tEnd, *steps, *devName, *out); err != nil {
		log.Fatal(err)
	}
}

func run(n int, nu, tEnd float64, steps int, devName, out string) ([]result, error) {
	if steps < 1 || !(tEnd > 0) || !(nu > 0) {
		return nil, fmt.Errorf("need steps ≥ 1, t > 0 and ν > 0 (got %d, %g, %g)", steps, tEnd, nu)
	}
	dev, err := shim.Open(devName)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	times := make([]float64, steps+1)
	for k := range times {
		times[k] = tEnd * float64(k) / float64(steps)
	}
	fmt.Printf("heat equation on a periodic %d×%d grid, ν = %g, spectral method on %s\n", n, n, nu, dev.Info().Name)
	var results []result
	for _, m := range []precision.Mode{precision.FP16, precision.Compensated} {
		r, err := solve(dev, m, n, nu, times)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	fmt.Printf("%8s %22s %22s\n", "t", "FP16 max error", "Compensated max error")
	for k, t := range times {
		fmt.Printf("%8.3f %22.3e %22.3e\n", t, results[0].errs[k], results[1].errs[k])
	}
	if out == "" {
		return results, nil
	}
	show := len(times) / 10 // an early time, while the fast modes still show
	if err := writePNG(out, n, times, show, results); err != nil {
		return nil, err
	}
	fmt.Println("wrote", out)
	return results, nil
}

// grid is a field for plotter.HeatMap.
type grid struct {
	n int
	u []float64
}

func (g grid) Dims() (c, r int)   { return g.n, g.n }
func (g grid) Z(c, r int) float64 { return g.u[r*g.n+c] }
func (g grid) X(c int) float64    { return 2 * math.Pi * float64(c) / float64(g.n) }
func (g grid) Y(r int) float64    { return 2 * math.Pi * float64(r) / float64(g.n) }

// writePNG draws the Compensated field at times[show] (left) and log₁₀ of
// each mode's error against time (right).
func writePNG(path string, n int, times []float64, show int, results []result) error {
	const width, height = 30 * vg.Centimeter, 12 * vg.Centimeter
	field := results[len(results)-1].fields[show]
	errs := plot.New()
	errs.Title.Text = "error against the exact decay of the modes"
	errs.X.Label.Text = "t"
	errs.Y.Label.Text = "log10 of max |u − u*| / max |u₀|"
	errs.Add(plotter.NewGrid())
	colors := []color.Color{color.RGBA{R: 200, A: 255}, color.RGBA{B: 200, A: 255}}
	for i, r := range results {
		pts := make(plotter.XYs, len(times))
		for k, t := range times {
			pts[k].X, pts[k].Y = t, math.Log10(math.Max(r.errs[k], 1e-17))
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		line.Color, points.Color = colors[i%2], colors[i%2]
		points.Shape = draw.CircleGlyph{}
		errs.Add(line, points)
		errs.Legend.Add(r.mode.String(), line, points)
	}
	errs.Legend.Top = true

	img := vgimg.New(width, height)
	dc := draw.New(img)
	figure.DrawField(draw.Crop(dc, 0, -0.5*width, 0, 0), figure.Field{
		Title:  fmt.Sprintf("u(x, y, t = %.2f) on %d×%d", times[show], n, n),
		Unit:   "u",
		Values: grid{n, field}, XMax: 2 * math.Pi, YMax: 2 * math.Pi,
		ColorMap: moreland.SmoothBlueRed(),
	})
	errs.Draw(draw.Crop(dc, 0.52*width, 0, 0, 0))
	return figure.SavePNG(path, img)
}
