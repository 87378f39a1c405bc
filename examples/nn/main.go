// Command nn runs two neural networks on the device — a small CNN and a
// small pre-norm transformer encoder, with seeded weights written to and
// read back from safetensors files — prints how well the device output
// agrees with a float64 evaluation of the same graph and how long each
// step took, and prices the ResNet-18-shaped and MiniLM-shaped programs
// with the engine cost model (lower.Estimate) for M1 and M5.
//
//	go run ./examples/nn
//	go run ./examples/nn -device sim-narrow -big=false
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/shim"
	_ "github.com/anemone-go/anemone/shim/sim"
)

func main() {
	devName := flag.String("device", "", `device: "ane", "sim", "sim-narrow" ("" picks the engine when present)`)
	big := flag.Bool("big", true, "also lower and price the ResNet-18- and MiniLM-shaped programs (a few seconds each)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("nn: ")
	if err := run(os.Stdout, *devName, *big); err != nil {
		log.Fatal(err)
	}
}

func run(w io.Writer, devName string, big bool) error {
	dev, err := shim.Open(devName)
	if err != nil {
		return err
	}
	defer dev.Close()
	fmt.Fprintf(w, "device %s: %s\n\n", dev.Info().Name, dev.Info().Numerics)
	rng := rand.New(rand.NewPCG(1, 2))

	cnnWeights, err := viaFile(nn.SmallCNN.RandomWeights(1))
	if err != nil {
		return err
	}
	cnn, err := nn.CNN(cnnWeights, nn.SmallCNN)
	if err != nil {
		return err
	}
	img := make([]float64, 3*nn.SmallCNN.Size*nn.SmallCNN.Size)
	for i := range img {
		img[i] = rng.NormFloat64()
	}
	if err := report(w, dev, "CNN 3×32×32 (16-32-64, BN folded)", cnn, map[string][]float64{"image": img}); err != nil {
		return err
	}

	enc := nn.SmallEncoder
	encWeights, err := viaFile(enc.RandomWeights(2))
	if err != nil {
		return err
	}
	encoder, err := nn.Encoder(encWeights, enc)
	if err != nil {
		return err
	}
	ids := make([]int, enc.Seq)
	for i := range ids {
		ids[i] = rng.IntN(enc.Vocab)
	}
	oh, err := nn.OneHot(ids, enc.Vocab)
	if err != nil {
		return err
	}
	tokens := make([]float64, len(oh))
	for i, v := range oh {
		tokens[i] = float64(v)
	}
	name := fmt.Sprintf("encoder %d layers, hidden %d, %d heads, seq %d, causal", enc.Layers, enc.Hidden, enc.Heads, enc.Seq)
	if err := report(w, dev, name, encoder, map[string][]float64{"tokens": tokens}); err != nil {
		return err
	}
	if !big {
		return nil
	}

	fmt.Fprintln(w, "modeled engine time of one dispatch (lower.Estimate; ANEForge measured 0.33 ms and 0.53 ms on an M5 Pro):")
	resnet, err := nn.ResNet(nn.ResNet18.RandomWeights(3), nn.ResNet18)
	if err != nil {
		return err
	}
	minilm, err := nn.Encoder(nn.MiniLM.RandomWeights(4), nn.MiniLM)
	if err != nil {
		return err
	}
	for _, m := range []struct {
		name string
		g    *dataflow.Graph
	}{{"ResNet-18 224×224", resnet}, {"MiniLM-shaped 6×384, seq 128", minilm}} {
		start := time.Now()
		p, err := lower.Lower(m.g, lower.TargetM5)
		if err != nil {
			return err
		}
		lowered := time.Since(start)
		fmt.Fprintf(w, "  %-30s %d ops in %v, weights %.1f MB;", m.name, m.g.NumNodes(), lowered.Round(time.Millisecond), float64(len(p.Blob))/1e6)
		for _, fam := range []string{"ane-m1", "ane-m5"} {
			c, err := lower.Estimate(p, fam)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, " %s %.2f ms (%.2f GFLOP, %.0f MB moved)", fam, c.Time.Seconds()*1e3, float64(c.Flops)/1e9, float64(c.Bytes)/1e6)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// viaFile writes ws to a safetensors file in fp16 and reads it back, as
// a model's weights would arrive.
func viaFile(ws nn.Weights) (nn.Weights, error) {
	for n, t := range ws {
		t.DType = nn.F16
		ws[n] = t
	}
	var buf bytes.Buffer
	if err := nn.WriteSafetensors(&buf, ws, map[string]string{"source": "seeded"}); err != nil {
		return nil, err
	}
	return nn.ReadSafetensors(&buf)
}

// report lowers, compiles and runs g once, evaluates it in float64, and
// prints agreement and timings.
func report(w io.Writer, dev shim.Device, name string, g *dataflow.Graph, inputs map[string][]float64) error {
	start := time.Now()
	p, err := lower.Lower(g, dev.Info().Target)
	if err != nil {
		return err
	}
	lowered := time.Since(start)
	start = time.Now()
	exe, err := dev.Compile(p)
	if err != nil {
		return err
	}
	compiled := time.Since(start)
	var in [][]float32
	for _, id := range g.Inputs() {
		x := inputs[g.Nodes()[id].Name]
		f := make([]float32, len(x))
		for i, v := range x {
			f[i] = float32(v)
		}
		in = append(in, f)
	}
	start = time.Now()
	outs, err := exe.Run(in)
	if err != nil {
		return err
	}
	ran := time.Since(start)
	start = time.Now()
	ref, err := dataflow.Eval(g, inputs)
	if err != nil {
		return err
	}
	evaluated := time.Since(start)
	got, want := outs[0], ref[g.Outputs()[0].Name]
	var xy, xx, yy, e, s float64
	for i := range want {
		x, y := float64(got[i]), want[i]
		xy, xx, yy = xy+x*y, xx+x*x, yy+y*y
		e, s = math.Max(e, math.Abs(x-y)), math.Max(s, math.Abs(y))
	}
	fmt.Fprintf(w, "%s\n  cosine vs float64 %.6f, max error / max|y| %.2e\n", name, xy/math.Sqrt(xx*yy), e/s)
	fmt.Fprintf(w, "  lower %v, compile %v, device run %v, float64 eval %v", lowered.Round(time.Microsecond), compiled.Round(time.Microsecond), ran.Round(time.Microsecond), evaluated.Round(time.Microsecond))
	for _, fam := range []string{"ane-m1", "ane-m5"} {
		if c, err := lower.Estimate(p, fam); err == nil {
			fmt.Fprintf(w, ", modeled %s %.3f ms", fam, c.Time.Seconds()*1e3)
		}
	}
	fmt.Fprintf(w, "\n\n")
	return nil
}
