package figure

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Grid is an NX×NY field on the interior points ((i+1)/(nx+1), (j+1)/(ny+1))
// of the unit square, stored with x fastest (index j·nx + i), as a
// plotter.GridXYZ.
type Grid struct {
	NX, NY int
	Values []float64 // x fastest
}

func (g Grid) Dims() (c, r int)   { return g.NX, g.NY }
func (g Grid) Z(c, r int) float64 { return g.Values[r*g.NX+c] }
func (g Grid) X(c int) float64    { return float64(c+1) / float64(g.NX+1) }
func (g Grid) Y(r int) float64    { return float64(r+1) / float64(g.NY+1) }

// Figure describes the two panels written by WritePNG.
type Figure struct {
	Field      string    // title of the heat map
	Curve      string    // title of the convergence plot
	U          Grid      // the solution
	History    []float64 // relative residual before the first and after every dispatch
	Tol        float64   // drawn as a dashed line
	CurveLabel string    // legend entry of the convergence curve
}

// WritePNG draws the solution as a heat map with a colour bar (left) and the
// convergence history as log₁₀ of the relative residual per dispatch
// (right), and writes them to path as one PNG.
func WritePNG(path string, f Figure) error {
	const width, height = 30 * vg.Centimeter, 12 * vg.Centimeter
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range f.U.Values {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if !(hi > lo) {
		hi = lo + 1 // a constant field still needs a colour range
	}
	cm := moreland.ExtendedBlackBody()
	cm.SetMin(lo)
	cm.SetMax(hi)

	heat := plot.New()
	heat.Title.Text = f.Field
	heat.X.Label.Text = "x"
	heat.Y.Label.Text = "y"
	hm := plotter.NewHeatMap(f.U, cm.Palette(256))
	hm.Min, hm.Max = lo, hi
	hm.Rasterized = true
	heat.Add(hm)
	heat.X.Min, heat.X.Max, heat.Y.Min, heat.Y.Max = 0, 1, 0, 1

	bar := plot.New()
	bar.Title.Text = "u"
	bar.HideX()
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})

	conv := plot.New()
	conv.Title.Text = f.Curve
	conv.X.Label.Text = "dispatch"
	conv.Y.Label.Text = "log10 of ‖b − A·x‖₂ / ‖b‖₂ (float64, host)"
	conv.Add(plotter.NewGrid())
	pts := make(plotter.XYs, len(f.History))
	for k, r := range f.History {
		pts[k].X = float64(k)
		pts[k].Y = math.Log10(math.Max(r, 1e-300))
	}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("convergence curve: %w", err)
	}
	line.Color = color.RGBA{B: 200, A: 255}
	points.Color = line.Color
	points.Shape = draw.CircleGlyph{}
	conv.Add(line, points)
	conv.Legend.Add(f.CurveLabel, line, points)
	target := plotter.NewFunction(func(float64) float64 { return math.Log10(f.Tol) })
	target.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	target.Color = color.RGBA{R: 200, A: 255}
	conv.Add(target)
	conv.Legend.Add(fmt.Sprintf("Tol = %.0e", f.Tol), target)
	conv.Legend.Left = true
	conv.Legend.XOffs, conv.Legend.YOffs = vg.Centimeter/2, 1.2*vg.Centimeter
	conv.X.Min, conv.X.Max = 0, math.Max(1, float64(len(f.History)-1))

	img := vgimg.New(width, height)
	dc := draw.New(img)
	dc = draw.Crop(dc, vg.Millimeter*2, -vg.Millimeter*2, vg.Millimeter*2, -vg.Millimeter*3)
	heat.Draw(draw.Crop(dc, 0, -0.55*width, 0, 0))
	bar.Draw(draw.Crop(dc, 0.455*width, -0.475*width, vg.Centimeter, -vg.Centimeter/2))
	conv.Draw(draw.Crop(dc, 0.56*width, 0, 0, 0))

	return SavePNG(path, img)
}

// SavePNG writes a drawn canvas to path as a PNG file.
func SavePNG(path string, img *vgimg.Canvas) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
