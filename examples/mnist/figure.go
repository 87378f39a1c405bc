package main

import (
	"fmt"
	"image"
	"image/color"

	"github.com/anemone-go/anemone/examples/internal/figure"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// drawFigure writes the training loss (a moving mean over an epoch's
// twentieth), the test accuracy per epoch and up to eight misclassified
// test digits with their labels.
func drawFigure(path string, losses, refLosses, accs, refAccs []float64, steps int, test dataset, pred []int) error {
	const width, height = 30 * vg.Centimeter, 16 * vg.Centimeter
	smooth := func(xs []float64) plotter.XYs {
		k := max(1, steps/20)
		pts := make(plotter.XYs, 0, len(xs))
		sum := 0.0
		for i, v := range xs {
			sum += v
			if i >= k {
				sum -= xs[i-k]
			}
			if i >= k-1 {
				pts = append(pts, plotter.XY{X: float64(i+1) / float64(steps), Y: sum / float64(k)})
			}
		}
		return pts
	}
	lp := plot.New()
	lp.Title.Text = "training loss (cross-entropy)"
	lp.X.Label.Text = "epoch"
	lp.Add(plotter.NewGrid())
	if err := addLine(lp, smooth(losses), "device (fp16)", color.RGBA{B: 200, A: 255}); err != nil {
		return err
	}
	if len(refLosses) > 0 {
		if err := addLine(lp, smooth(refLosses), "float64 twin", color.RGBA{R: 200, A: 255}); err != nil {
			return err
		}
	}
	ap := plot.New()
	ap.Title.Text = "test accuracy (%)"
	ap.X.Label.Text = "epoch"
	ap.Add(plotter.NewGrid())
	pts := func(a []float64) plotter.XYs {
		p := make(plotter.XYs, len(a))
		for i, v := range a {
			p[i] = plotter.XY{X: float64(i + 1), Y: 100 * v}
		}
		return p
	}
	if err := addLine(ap, pts(accs), "device (fp16)", color.RGBA{B: 200, A: 255}); err != nil {
		return err
	}
	if len(refAccs) > 0 {
		if err := addLine(ap, pts(refAccs), "float64 twin", color.RGBA{R: 200, A: 255}); err != nil {
			return err
		}
	}
	ap.Legend.Top, lp.Legend.Top = false, true

	img := vgimg.New(width, height)
	dc := draw.New(img)
	dc = draw.Crop(dc, vg.Millimeter*2, -vg.Millimeter*2, vg.Millimeter*2, -vg.Millimeter*2)
	top := draw.Crop(dc, 0, 0, 0.3*height, 0)
	lp.Draw(draw.Crop(top, 0, -0.5*width, 0, 0))
	ap.Draw(draw.Crop(top, 0.5*width, 0, 0, 0))
	// The misclassified digits, in a row along the bottom.
	var wrong []int
	for i, p := range pred {
		if p != test.Labels[i] && len(wrong) < 8 {
			wrong = append(wrong, i)
		}
	}
	bottom := draw.Crop(dc, 0, 0, 0, -0.72*height)
	cell := (bottom.Max.X - bottom.Min.X) / 8
	for j, i := range wrong {
		d := plot.New()
		d.Title.Text = fmt.Sprintf("label %d, said %d", test.Labels[i], pred[i])
		d.HideAxes()
		g := image.NewGray(image.Rect(0, 0, 28, 28))
		for p := range 784 {
			g.Pix[p] = 255 - uint8(255*test.X[i*784+p]+0.5)
		}
		d.Add(plotter.NewImage(g, 0, 0, 28, 28))
		d.Draw(draw.Crop(bottom, vg.Length(j)*cell, vg.Length(j+1)*cell-(bottom.Max.X-bottom.Min.X), 0, 0))
	}
	return figure.SavePNG(path, img)
}

func addLine(p *plot.Plot, pts plotter.XYs, label string, c color.Color) error {
	l, g, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, g.Color = c, c
	if len(pts) > 40 {
		g.Radius = 0 // a dense curve needs no glyphs
	}
	p.Add(l, g)
	p.Legend.Add(label, l)
	return nil
}
