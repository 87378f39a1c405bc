package shimtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// Input says how CheckGraph draws one graph input: uniformly in [Lo, Hi],
// with a random sign when Signed, or by Gen when set; values are rounded
// to fp16 and never subnormal (the engine may flush them).
type Input struct {
	Name   string
	Shape  dataflow.Shape
	Lo, Hi float64
	Signed bool
	Gen    func(*rand.Rand) []float64
}

func (in Input) spec() inputSpec {
	return inputSpec{name: in.Name, shape: in.Shape, lo: in.Lo, hi: in.Hi, signed: in.Signed, gen: in.Gen}
}

// CheckGraph builds a graph with build on inputs drawn as inputs say
// (seeded by seed; build gets the generator too, for seeded weights),
// lowers it for dev's target, runs it and compares its one output with
// dataflow.Eval of the same graph, element by element, within the bound
// the suite's per-op error analysis propagates through the graph (see
// docs/SHIMTEST.md). The Result names op and name; its Status is the
// weakest of the graph's ops' statuses on the target and MIL their MIL
// names. It never panics on a device failure: the failure is the result.
func CheckGraph(dev shim.Device, op, name string, inputs []Input, seed uint64, build func(g *dataflow.Graph, in []dataflow.Value, rng *rand.Rand) dataflow.Value) (res Result) {
	info := dev.Info()
	res = Result{Op: op, Case: name, Evidence: "a composite of the registry's ops, each checked by the op cases"}
	fail := func(err error) Result {
		res.Pass, res.Error = false, err.Error()
		return res
	}
	rng := rand.New(rand.NewPCG(seed, 0x1a7e5))
	g := dataflow.New()
	vals := make([]dataflow.Value, len(inputs))
	host := map[string][]float64{}
	dev32 := make([][]float32, len(inputs))
	for i, in := range inputs {
		s := in.spec()
		vals[i] = g.Input(s.name, s.shape)
		host[s.name], dev32[i] = draw(rng, s)
	}
	out := build(g, vals, rng)
	g.Output("out", out)
	if err := g.Err(); err != nil {
		return fail(err)
	}
	res.Status, res.MIL = layerStatus(g, info.Target.Name)
	an, err := propagate(g, host, numericsOf(narrow(info), approximate(info)))
	if err != nil {
		return fail(err)
	}
	want, err := dataflow.Eval(g, host)
	if err != nil {
		return fail(err)
	}
	id := g.Outputs()[0].Node
	if !slices.Equal(want["out"], an.vals[id]) {
		return fail(fmt.Errorf("shimtest: internal: the node-by-node evaluation of %s differs from dataflow.Eval", op))
	}
	got, err := runOnDevice(dev, info.Target, g, dev32, len(want["out"]))
	if err != nil {
		return fail(err)
	}
	return compare(res, got, want["out"], an.errs[id])
}

// layerStatus is the weakest status on target of the ops in g (rejected
// before decomposed before native) and the registry's MIL names of them.
func layerStatus(g *dataflow.Graph, target string) (string, string) {
	worst := lower.Native
	var mils []string
	for _, n := range g.Nodes() {
		if n.Op == dataflow.OpInput || n.Op == dataflow.OpConst {
			continue
		}
		cap, ok := lower.CapabilityOf(n.Op)
		if !ok {
			return "unregistered", ""
		}
		if s := cap.StatusOn(target); s > worst {
			worst = s
		}
		if !slices.Contains(mils, cap.MIL) {
			mils = append(mils, cap.MIL)
		}
	}
	slices.Sort(mils)
	return worst.String(), strings.Join(mils, ", ")
}

// draw gives an input's host values (fp16, normal or zero, as Eval sees
// them) and the device's float32 copy.
func draw(rng *rand.Rand, s inputSpec) ([]float64, []float32) {
	var xs []float64
	if s.gen != nil {
		xs = s.gen(rng)
	} else {
		xs = make([]float64, s.shape.Size())
		for j := range xs {
			v := s.lo + (s.hi-s.lo)*rng.Float64()
			if s.signed && rng.IntN(2) == 0 {
				v = -v
			}
			xs[j] = v
		}
	}
	x32 := make([]float32, len(xs))
	for j, v := range xs {
		v = fp16.Round64(v) // Eval sees exactly what the device sees
		if math.Abs(v) < fp16.MinNormal {
			v = 0 // inputs are never subnormal: the engine may flush them
		}
		xs[j], x32[j] = v, float32(v)
	}
	return xs, x32
}

// compare checks got against want within bound element by element and
// records the worst element (in fp16 ulps of the exact value) and the
// largest error-to-bound ratio in res. A non-finite bound is a failure of
// the analysis, never a pass; a zero bound asks for the exact value.
func compare(res Result, got []float32, want, bound []float64) Result {
	res.Elements = len(got)
	res.Pass = true
	worst := -1.0
	res.Detects = math.MaxFloat64
	for j, w := range want {
		d := float64(got[j])
		if math.IsNaN(d) {
			res.Pass, res.Error = false, fmt.Sprintf("shimtest: element %d is NaN, want %g", j, w)
			return res
		}
		b := bound[j]
		if math.IsInf(b, 0) || math.IsNaN(b) {
			res.Pass, res.Error = false, fmt.Sprintf("shimtest: element %d (want %g) has no finite error bound: the inputs are outside what the analysis can bound", j, w)
			return res
		}
		errAbs := math.Abs(d - w)
		if d != 0 {
			res.Detects = math.Min(res.Detects, (b+errAbs)/math.Abs(d))
		}
		ulps := errAbs / ulp16(w)
		if ulps > worst {
			worst = ulps
			res.MaxULPs, res.BoundULPs = ulps, b/ulp16(w)
		}
		if b > 0 {
			res.MaxRatio = math.Max(res.MaxRatio, errAbs/b)
		}
		if errAbs > b && res.Error == "" {
			res.Pass = false
			res.Error = fmt.Sprintf("element %d: got %g, want %g ± %.3g", j, d, w, b)
		}
	}
	return res
}
