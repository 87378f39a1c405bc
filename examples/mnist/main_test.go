package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/nn"
)

// TestShortRun trains MLP 784-128-10 for 80 steps (the first 10240
// training images, one epoch) on the simulator beside its float64 twin and
// scores both on the first 2000 test images. The device must match the
// twin within three binomial standard errors of an accuracy on 2000
// images (σ = √(p(1−p)/2000), about 0.7 points at p = 0.9; the twins share
// weights, batches and seed, so their difference is far smaller than two
// independent models'), and the twin must have learned: above 50%, five
// times chance.
func TestShortRun(t *testing.T) {
	dir := t.TempDir()
	png := filepath.Join(dir, "mnist.png")
	var out bytes.Buffer
	res, err := run(&out, options{epochs: 1, hidden: 128, batch: 128, model: "mlp", out: png, device: "sim",
		update: "compensated", reference: true, trainN: 10240, testN: 2000, seed: 1, lr: 1e-3})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	p := res.refAccuracy
	sigma := math.Sqrt(p * (1 - p) / 2000)
	if p < 0.5 {
		t.Errorf("the float64 twin reached %.2f%%: it did not learn", 100*p)
	}
	if d := math.Abs(res.accuracy - p); d > 3*sigma+1.0/2000 {
		t.Errorf("device %.2f%%, float64 twin %.2f%%: beyond 3σ = %.2f points", 100*res.accuracy, 100*p, 300*sigma)
	}
	if res.compiles > 3 {
		t.Errorf("%d compiles for the run, want ≤ 3", res.compiles)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !regexp.MustCompile(`^test accuracy: \d+\.\d\d%$`).MatchString(lines[len(lines)-1]) {
		t.Errorf("last line %q, want \"test accuracy: NN.NN%%\"", lines[len(lines)-1])
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("figure: %v", err)
	}
	f, err := os.Open(weightsPath(png))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ws, err := nn.ReadSafetensors(f)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := ws.Get("fc1_weight", 128, 784); err != nil || len(w.Data) != 128*784 {
		t.Errorf("weights file: %v", err)
	}
}

func TestBadFlags(t *testing.T) {
	for _, o := range []options{
		{epochs: 1, hidden: 8, batch: 8, model: "rnn", update: "compensated"},
		{epochs: 1, hidden: 8, batch: 8, model: "cnn", widths: "8", update: "compensated"},
		{epochs: 0, hidden: 8, batch: 8, model: "mlp", update: "compensated"},
		{epochs: 1, hidden: 8, batch: 8, model: "mlp", update: "stochastic"},
		{epochs: 1, hidden: 8, batch: 8, model: "mlp", update: "compensated", data: "/nonexistent"},
	} {
		if _, err := run(&bytes.Buffer{}, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
