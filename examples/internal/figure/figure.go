package figure

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
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
	Unit       string    // what the colour bar measures ("u" when empty)
	Curve      string    // title of the convergence plot
	U          Grid      // the solution
	History    []float64 // relative residual before the first and after every step
	XLabel     string    // what one step of History is ("dispatch" when empty)
	Tol        float64   // drawn as a dashed line
	CurveLabel string    // legend entry of the convergence curve
}

// Field is a heat map with its colour bar.
type Field struct {
	Title, Unit string
	Values      plotter.GridXYZ
	XMin, XMax  float64
	YMin, YMax  float64
	ColorMap    palette.ColorMap // its range is set from the values
}

// DrawField draws f's heat map into c, with a vertical colour bar labelled
// with f.Unit at its right.
func DrawField(c draw.Canvas, f Field) {
	lo, hi := math.Inf(1), math.Inf(-1)
	cols, rows := f.Values.Dims()
	for i := range cols {
		for j := range rows {
			v := f.Values.Z(i, j)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if !(hi > lo) {
		hi = lo + 1 // a constant field still needs a colour range
	}
	cm := f.ColorMap
	cm.SetMin(lo)
	cm.SetMax(hi)

	heat := plot.New()
	heat.Title.Text = f.Title
	heat.X.Label.Text = "x"
	heat.Y.Label.Text = "y"
	hm := plotter.NewHeatMap(f.Values, cm.Palette(256))
	hm.Min, hm.Max = lo, hi
	hm.Rasterized = true
	heat.Add(hm)
	heat.X.Min, heat.X.Max, heat.Y.Min, heat.Y.Max = f.XMin, f.XMax, f.YMin, f.YMax

	bar := plot.New()
	bar.Title.Text = f.Unit
	bar.HideX()
	bar.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})

	w := c.Max.X - c.Min.X
	barW := 2.2 * vg.Centimeter
	heat.Draw(draw.Crop(c, 0, -barW, 0, 0))
	bar.Draw(draw.Crop(c, w-barW+vg.Millimeter*3, 0, vg.Centimeter/2, -vg.Centimeter/2))
}

// WritePNG draws the solution as a heat map with a colour bar (left) and the
// convergence history as log₁₀ of the relative residual per step (right),
// and writes them to path as one PNG.
func WritePNG(path string, f Figure) error {
	const width, height = 30 * vg.Centimeter, 12 * vg.Centimeter
	unit := f.Unit
	if unit == "" {
		unit = "u"
	}
	xlabel := f.XLabel
	if xlabel == "" {
		xlabel = "dispatch"
	}
	conv := plot.New()
	conv.Title.Text = f.Curve
	conv.X.Label.Text = xlabel
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
	// The curve falls from the top left to the Tol line at the bottom: the
	// top right is clear of data.
	conv.Legend.Top = true
	conv.Legend.YOffs = -vg.Millimeter * 2
	conv.X.Min, conv.X.Max = 0, math.Max(1, float64(len(f.History)-1))

	img := vgimg.New(width, height)
	dc := draw.New(img)
	dc = draw.Crop(dc, vg.Millimeter*2, -vg.Millimeter*2, vg.Millimeter*2, -vg.Millimeter*3)
	DrawField(draw.Crop(dc, 0, -0.47*width, 0, 0), Field{
		Title: f.Field, Unit: unit, Values: f.U, XMax: 1, YMax: 1, ColorMap: moreland.ExtendedBlackBody(),
	})
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
