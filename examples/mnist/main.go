// Command mnist trains a classifier on MNIST on the device — forward,
// backward and Adam update in one dispatch per step, the weights and
// optimizer state resident on the device — and optionally its float64
// twin on the host (the same graph through dataflow.Eval, the same seed
// and batches). It prints a line per epoch, writes the loss and accuracy
// curves and a few misclassified digits to a PNG and the weights to a
// safetensors file, and ends with the test accuracy.
//
//	go run ./examples/mnist                         # MLP 784-512-10, 5 epochs
//	go run ./examples/mnist -reference -update plain
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/anemone-go/anemone/nn"
	"github.com/anemone-go/anemone/nn/train"
	"github.com/anemone-go/anemone/shim"
)

type options struct {
	epochs, hidden, batch int
	model, out, data      string
	widths, opt           string
	device, update        string
	schedule              string
	reference             bool
	trainN, testN         int
	seed                  uint64
	lr                    float64
	progress              io.Writer // per-epoch progress bar; nil for none
}

func main() {
	var o options
	flag.IntVar(&o.epochs, "epochs", 5, "training epochs")
	flag.IntVar(&o.hidden, "hidden", 512, "hidden units of the MLP")
	flag.IntVar(&o.batch, "batch", 128, "minibatch size")
	flag.StringVar(&o.model, "model", "mlp", "model: mlp (784-hidden-10) or cnn (two 3×3 conv–ReLU–max-pool blocks of -widths channels, then linear)")
	flag.StringVar(&o.widths, "widths", "16,32", "channels of the CNN's two blocks")
	flag.StringVar(&o.out, "out", "mnist.png", "figure to write; the weights go beside it as .safetensors")
	flag.StringVar(&o.data, "data", "", "directory of the four MNIST IDX .gz files (default: the GoMNIST module's)")
	flag.StringVar(&o.device, "device", "", `device: "ane", "sim", "sim-narrow" ("" picks the engine when present)`)
	flag.StringVar(&o.update, "update", "compensated", "weight update: compensated ((hi, lo) fp16 pairs) or plain (fp16 weights, the ablation)")
	flag.BoolVar(&o.reference, "reference", false, "also train the float64 twin on the host and print its figures")
	flag.IntVar(&o.trainN, "train", 0, "use the first N training images (0: all 60000)")
	flag.IntVar(&o.testN, "test", 0, "use the first N test images (0: all 10000)")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the initial weights and the batch order")
	flag.Float64Var(&o.lr, "lr", 1e-3, "learning rate")
	flag.StringVar(&o.opt, "opt", "adam", "optimizer: adam or sgd (momentum 0.9)")
	flag.StringVar(&o.schedule, "schedule", "constant", "learning rate: constant, or cosine (annealed from -lr towards 0 over the run)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("mnist: ")
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		o.progress = os.Stderr // a terminal: redraw the bar in place
	}
	if _, err := run(os.Stdout, o); err != nil {
		log.Fatal(err)
	}
}

// result is what a run measured.
type result struct {
	accuracy, refAccuracy float64 // final test accuracy; refAccuracy −1 without -reference
	losses, refLosses     []float64
	compiles              int
	stats                 train.Stats
	refStep               time.Duration
	hostStep              time.Duration // measured host time per step
	modeledM1, modeledM5  time.Duration // modeled engine time per step
}

func run(w io.Writer, o options) (result, error) {
	res := result{refAccuracy: -1}
	if o.epochs < 1 || o.batch < 1 || (o.model == "mlp" && o.hidden < 1) {
		return res, fmt.Errorf("mnist: -epochs %d, -batch %d, -hidden %d (for the MLP): each must be ≥ 1", o.epochs, o.batch, o.hidden)
	}
	var update train.Update
	switch o.update {
	case "compensated":
		update = train.Compensated
	case "plain":
		update = train.PlainFP16
	default:
		return res, fmt.Errorf("mnist: -update %q, want compensated or plain", o.update)
	}
	dir, err := dataDir(o.data)
	if err != nil {
		return res, err
	}
	trainSet, testSet, err := load(dir)
	if err != nil {
		return res, err
	}
	trainSet, testSet = subset(trainSet, o.trainN), subset(testSet, o.testN)
	dev, err := shim.Open(o.device)
	if err != nil {
		return res, err
	}
	defer dev.Close()

	cfg := train.Config{Batch: o.batch, Loss: train.SoftmaxCrossEntropy, Update: update}
	switch o.opt {
	case "adam", "":
		cfg.Optimizer, o.opt = train.Adam{LR: o.lr}, "Adam"
	case "sgd":
		cfg.Optimizer, o.opt = train.SGD{LR: o.lr, Momentum: 0.9}, "SGD (momentum 0.9)"
	default:
		return res, fmt.Errorf("mnist: -opt %q, want adam or sgd", o.opt)
	}
	steps := trainSet.n() / o.batch
	if steps == 0 {
		return res, fmt.Errorf("mnist: %d training images do not fill one batch of %d", trainSet.n(), o.batch)
	}
	switch o.schedule {
	case "constant", "":
		o.schedule = "constant"
	case "cosine":
		total := steps * o.epochs
		cfg.Schedule = func(t int) float64 {
			return 0.5 * (1 + math.Cos(math.Pi*float64(min(t, total)-1)/float64(total)))
		}
	default:
		return res, fmt.Errorf("mnist: -schedule %q, want constant or cosine", o.schedule)
	}
	var desc string
	switch o.model {
	case "mlp":
		mlp := train.MLP{Sizes: []int{784, o.hidden, 10}}
		cfg.Network, cfg.Weights = mlp.Network(), mlp.Init(o.seed)
		desc = fmt.Sprintf("MLP 784-%d-10", o.hidden)
	case "cnn":
		var ws []int
		for _, f := range strings.Split(o.widths, ",") {
			var n int
			if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 {
				return res, fmt.Errorf("mnist: -widths %q: want two positive channel counts such as 8,16", o.widths)
			}
			ws = append(ws, n)
		}
		if len(ws) != 2 {
			return res, fmt.Errorf("mnist: -widths %q: want two channel counts", o.widths)
		}
		cnn := train.CNN{Size: 28, Classes: 10, Widths: ws}
		cfg.Network, cfg.Weights = cnn.Network(), cnn.Init(o.seed)
		desc = fmt.Sprintf("CNN 28×28 → %d → %d channels → 10", ws[0], ws[1])
	default:
		return res, fmt.Errorf("mnist: -model %q, want mlp or cnn", o.model)
	}
	tr, err := train.New(cfg, dev)
	if err != nil {
		return res, err
	}
	defer tr.Close()
	var ref *train.Reference
	if o.reference {
		if ref, err = train.NewReference(cfg); err != nil {
			return res, err
		}
	}
	fmt.Fprintf(w, "device %s; %s, %s lr %g (%s), batch %d, %s updates; %d steps per epoch, %d epochs\n",
		dev.Info().Name, desc, o.opt, o.lr, o.schedule, o.batch, o.update, steps, o.epochs)
	rng := rand.New(rand.NewPCG(o.seed, 0x6d6e697374))
	x := make([]float64, o.batch*784)
	labels := make([]int, o.batch)
	var accs, refAccs []float64
	var last train.Metrics
	start := time.Now()
	for ep := range o.epochs {
		perm := rng.Perm(trainSet.n())
		sum, refSum := 0.0, 0.0
		for s := range steps {
			for i := range o.batch {
				k := perm[s*o.batch+i]
				copy(x[i*784:(i+1)*784], trainSet.X[k*784:(k+1)*784])
				labels[i] = trainSet.Labels[k]
			}
			b := train.Batch{X: x, Y: train.OneHot(labels, 10)}
			l, err := tr.Step(b)
			if err != nil {
				return res, fmt.Errorf("mnist: epoch %d step %d: %w", ep+1, s, err)
			}
			sum += l
			res.losses = append(res.losses, l)
			bar(o.progress, ep+1, o.epochs, s+1, steps, sum/float64(s+1))
			if ref != nil {
				rl, err := ref.Step(b)
				if err != nil {
					return res, fmt.Errorf("mnist: float64 twin, epoch %d step %d: %w", ep+1, s, err)
				}
				refSum += rl
				res.refLosses = append(res.refLosses, rl)
			}
		}
		if last, err = tr.Evaluate(testSet.X, testSet.Labels); err != nil {
			return res, err
		}
		accs = append(accs, last.Accuracy)
		line := fmt.Sprintf("epoch %d/%d: train loss %.4f, test accuracy %.2f%%", ep+1, o.epochs, sum/float64(steps), 100*last.Accuracy)
		if ref != nil {
			rm, err := ref.Evaluate(testSet.X, testSet.Labels)
			if err != nil {
				return res, err
			}
			refAccs = append(refAccs, rm.Accuracy)
			res.refAccuracy = rm.Accuracy
			line += fmt.Sprintf(" (float64 twin: loss %.4f, %.2f%%)", refSum/float64(steps), 100*rm.Accuracy)
		}
		st := tr.Stats()
		fmt.Fprintf(w, "%s; loss scale %g, %d skipped; %.0f s\n", line, st.LossScale, st.Skipped, time.Since(start).Seconds())
	}
	res.accuracy = last.Accuracy
	res.stats = tr.Stats()
	if c, ok := dev.(*shim.Cache); ok {
		res.compiles = c.Stats().Compiles
	}
	st := res.stats
	fmt.Fprintf(w, "compiles: %d; host bytes per step: %d in, %d out (the weights: %d bytes in fp16, resident)\n",
		res.compiles, st.BytesIn/int64(st.Steps), st.BytesOut/int64(st.Steps), st.WeightBytes)
	m1, err1 := tr.ModeledStep("ane-m1")
	m5, err5 := tr.ModeledStep("ane-m5")
	if err := errors.Join(err1, err5); err != nil {
		return res, err
	}
	host := ms(st.Host) / float64(st.Steps)
	res.hostStep = st.Host / time.Duration(st.Steps)
	res.modeledM1, res.modeledM5 = m1.Time, m5.Time
	fmt.Fprintf(w, "end to end per step (modeled engine + measured host %.2f ms): M1 %.2f ms, M5 %.2f ms; the program's modeled compile %.0f ms, once\n",
		host, ms(m1.Time)+host, ms(m5.Time)+host, ms(tr.ModeledCompile()))
	line := fmt.Sprintf("modeled engine time per step: M1 %.2f ms, M5 %.2f ms; simulated %.0f ms per step here",
		ms(m1.Time), ms(m5.Time), ms(st.Device)/float64(st.Steps))
	if ref != nil {
		res.refStep = ref.StepTime / time.Duration(ref.Steps())
		line += fmt.Sprintf("; float64 twin %.0f ms per step on this CPU", ms(res.refStep))
		if d := res.accuracy - res.refAccuracy; true {
			fmt.Fprintf(w, "device − float64 twin: %+.2f points\n", 100*d)
		}
	}
	fmt.Fprintln(w, line)
	ws, err := tr.Weights()
	if err != nil {
		return res, err
	}
	if err := writeWeights(weightsPath(o.out), ws); err != nil {
		return res, err
	}
	if err := drawFigure(o.out, res.losses, res.refLosses, accs, refAccs, steps, testSet, last.Predicted); err != nil {
		return res, fmt.Errorf("mnist: writing %s: %w", o.out, err)
	}
	fmt.Fprintf(w, "wrote %s and %s\n", o.out, weightsPath(o.out))
	fmt.Fprintf(w, "test accuracy: %.2f%%\n", 100*res.accuracy)
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func subset(d dataset, n int) dataset {
	if n <= 0 || n >= d.n() {
		return d
	}
	return dataset{X: d.X[:n*784], Labels: d.Labels[:n]}
}

func weightsPath(png string) string {
	return strings.TrimSuffix(png, ".png") + ".safetensors"
}

func writeWeights(path string, ws nn.Weights) error {
	var buf bytes.Buffer
	if err := nn.WriteSafetensors(&buf, ws, nil); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// bar redraws the epoch's progress bar on w (a terminal's stderr) about
// fifty times an epoch, and clears it when the epoch ends.
func bar(w io.Writer, ep, epochs, step, steps int, loss float64) {
	if w == nil || (step%max(1, steps/50) != 0 && step != steps) {
		return
	}
	const width = 30
	done := width * step / steps
	fmt.Fprintf(w, "\repoch %d/%d [%s%s] %d/%d steps, loss %.4f", ep, epochs,
		strings.Repeat("=", done), strings.Repeat(" ", width-done), step, steps, loss)
	if step == steps {
		fmt.Fprintf(w, "\r%s\r", strings.Repeat(" ", 80))
	}
}
