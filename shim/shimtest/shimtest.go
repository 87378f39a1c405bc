package shimtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// Result is the outcome of one op's conformance case.
type Result struct {
	Op        string  `json:"op"`
	Case      string  `json:"case"`
	Status    string  `json:"status"`     // the registry's status on the device's target
	MIL       string  `json:"mil"`        // the MIL op it becomes
	Elements  int     `json:"elements"`   // output elements compared
	MaxULPs   float64 `json:"max_ulps"`   // largest |device − exact| in fp16 ulps of the exact value
	BoundULPs float64 `json:"bound_ulps"` // the bound at that element, in the same ulps
	MaxRatio  float64 `json:"max_ratio"`  // largest |device − exact| / bound over the elements
	// Detects is the smallest relative error this case is sure to catch:
	// a device whose outputs are all off by a factor 1 ± s with s >
	// Detects fails it (min over elements of (bound + |error|)/|device|).
	Detects float64 `json:"detects"`
	Pass    bool    `json:"pass"`
	Error   string  `json:"error,omitempty"`

	// The registry's record of the op on the engine (lower.Capability).
	Evidence   string `json:"evidence"`              // where it is reported compiling
	RejectedBy string `json:"rejected_by,omitempty"` // where it is reported rejected
	Caveats    string `json:"caveats,omitempty"`     // numeric caveats
}

// ulp16 is the spacing of fp16 numbers at |x| (2⁻²⁴ in the subnormal range).
func ulp16(x float64) float64 {
	x = math.Abs(x)
	if x < fp16.MinNormal {
		return fp16.MinSubnormal
	}
	_, e := math.Frexp(x) // x = f·2^e, f in [0.5, 1)
	return math.Ldexp(1, e-11)
}

// boundKind selects how a case's error bound is computed.
type boundKind int

const (
	exact     boundKind = iota // bit-exact
	rounded                    // ulps of the exact result
	dot                        // matmul/conv: products rounded, wide or narrow sum
	narrowSum                  // reduce_sum/mean: fp16 running sum
)

type opCase struct {
	op     dataflow.Op
	name   string
	inputs []inputSpec
	build  func(g *dataflow.Graph, in []dataflow.Value, c constFn) dataflow.Value
	bound  boundKind
	ulps   float64 // for rounded
	k      int     // terms per output for dot and narrowSum
}

// constFn declares a constant; the suite calls a case's build twice, once
// with the constants as given and once with their absolute values, to get
// Σ|aᵢbᵢ| for the dot-product bound.
type constFn func(name string, shape dataflow.Shape, data []float64) dataflow.Value

type inputSpec struct {
	name   string
	shape  dataflow.Shape
	lo, hi float64
	signed bool                       // draw |x| in [lo, hi] and a random sign
	gen    func(*rand.Rand) []float64 // when set, draws the values instead
}

func in(name string, shape dataflow.Shape, lo, hi float64) inputSpec {
	return inputSpec{name: name, shape: shape, lo: lo, hi: hi}
}

func signed(name string, shape dataflow.Shape, lo, hi float64) inputSpec {
	return inputSpec{name: name, shape: shape, lo: lo, hi: hi, signed: true}
}

// A [3, 40] operand exercises row padding (40 → 64) and several rows.
var (
	mat   = dataflow.Shape{3, 40}
	row   = dataflow.Shape{1, 40}
	image = dataflow.Shape{1, 4, 9, 11}
)

func unary(op dataflow.Op, lo, hi float64, b boundKind, ulps float64, f func(*dataflow.Graph, dataflow.Value) dataflow.Value) opCase {
	return opCase{op: op, inputs: []inputSpec{in("x", mat, lo, hi)}, bound: b, ulps: ulps,
		build: func(g *dataflow.Graph, v []dataflow.Value, _ constFn) dataflow.Value { return f(g, v[0]) }}
}

// cases covers every op of the registry at least once: the elementwise
// ops' cases from their entries in elementwiseRules, then the others.
func cases() []opCase {
	return append(elementwiseCases(), []opCase{
		{op: dataflow.OpMatMul, name: "two inputs", inputs: []inputSpec{in("x", mat, -1, 1), in("y", dataflow.Shape{40, 24}, -1, 1)}, bound: dot, k: 40,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				return g.MatMul(v[0], v[1], false, false)
			}},
		{op: dataflow.OpMatMul, name: "batched, transposed", inputs: []inputSpec{in("x", dataflow.Shape{2, 40, 3}, -1, 1), in("y", dataflow.Shape{2, 5, 40}, -1, 1)}, bound: dot, k: 40,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				return g.MatMul(v[0], v[1], true, true)
			}},
		{op: dataflow.OpMatMul, name: "constant weight (conv)", inputs: []inputSpec{in("x", mat, -1, 1)}, bound: dot, k: 40,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				return g.MatMul(v[0], c("W", dataflow.Shape{40, 33}, seq(40*33)), false, false)
			}},
		{op: dataflow.OpConv2D, inputs: []inputSpec{in("x", image, -1, 1), in("w", dataflow.Shape{6, 2, 3, 3}, -1, 1)}, bound: dot, k: 2 * 3 * 3,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				return g.Conv2D(v[0], v[1], dataflow.Conv2DOptions{Strides: [2]int{1, 2}, Pads: [4]int{1, 1, 2, 0}, Dilations: [2]int{1, 1}, Groups: 2})
			}},
		{op: dataflow.OpReduceSum, name: "last axis (matmul)", inputs: []inputSpec{in("x", mat, -1, 1)}, bound: dot, k: 40,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				return g.ReduceSum(v[0], []int{-1}, true)
			}},
		{op: dataflow.OpReduceSum, name: "first axis", inputs: []inputSpec{in("x", dataflow.Shape{12, 40}, -1, 1)}, bound: narrowSum, k: 12,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				return g.ReduceSum(v[0], []int{0}, false)
			}},
		{op: dataflow.OpReduceMean, inputs: []inputSpec{in("x", dataflow.Shape{12, 40}, -1, 1)}, bound: narrowSum, k: 12,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				return g.ReduceMean(v[0], []int{0}, true)
			}},
		unary(dataflow.OpReduceMax, -4, 4, exact, 0, func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.ReduceMax(x, []int{1}, true) }),
		unary(dataflow.OpSoftmax, -4, 4, rounded, 4, func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Softmax(x, -1) }),
		{op: dataflow.OpLayerNorm, inputs: []inputSpec{in("x", mat, -4, 4)}, bound: rounded, ulps: 4,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				gamma := c("gamma", dataflow.Shape{40}, seq(40))
				beta := c("beta", dataflow.Shape{40}, seq(40))
				return g.LayerNorm(v[0], []int{-1}, gamma, beta, 1e-4) // epsilons below 2⁻¹⁴ are subnormal in fp16: refused by the lowering
			}},
		unary(dataflow.OpReshape, -4, 4, exact, 0, func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Reshape(x, dataflow.Shape{8, 15}) }),
		{op: dataflow.OpTranspose, inputs: []inputSpec{in("x", dataflow.Shape{3, 4, 40}, -4, 4)}, bound: exact,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value {
				return g.Transpose(v[0], []int{2, 0, 1})
			}},
		{op: dataflow.OpConcat, inputs: []inputSpec{in("x", mat, -4, 4), in("y", dataflow.Shape{3, 7}, -4, 4)}, bound: exact,
			build: func(g *dataflow.Graph, v []dataflow.Value, c constFn) dataflow.Value { return g.Concat(1, v[0], v[1]) }},
		unary(dataflow.OpSlice, -4, 4, exact, 0, func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Slice(x, []int{1, 3}, []int{2, -1}) }),
		unary(dataflow.OpPad, -4, 4, exact, 0, func(g *dataflow.Graph, x dataflow.Value) dataflow.Value { return g.Pad(x, []int{1, 0, 2, 5}, 0.5) }),
	}...)
}

// seq is a deterministic weight pattern in [−1, 1).
func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64((i*37)%64-32) / 32
	}
	return out
}

// narrow reports whether the device accumulates matmul and conv in fp16.
func narrow(info shim.Info) bool { return info.Target.Accumulator == engine.Narrow }

// tableOps are the transcendentals the engine computes from tables: not
// correctly rounded, within lutError relative on a narrow model. They are
// the entries of elementwiseRules marked table.
var tableOps = func() map[dataflow.Op]bool {
	m := map[dataflow.Op]bool{}
	for _, r := range elementwiseRules {
		if r.table {
			m[r.op] = true
		}
	}
	return m
}()

// lutError is the relative error a table-based transcendental may add
// before its result is rounded to fp16: 2⁻¹⁰, twice fp16's unit roundoff.
const lutError = 0x1p-10

// approximate reports whether the device may compute transcendentals from
// tables and flush subnormals: the hardware, and a narrow (pessimistic)
// model of it.
func approximate(info shim.Info) bool { return info.Hardware || info.Target.TableError > 0 }

// Check runs every case on dev and returns one result per case, in registry
// order. It never panics on a device failure: the failure is the result.
func Check(dev shim.Device) []Result {
	info := dev.Info()
	var out []Result
	for i, c := range cases() {
		out = append(out, runCase(dev, info, c, uint64(i)))
	}
	return out
}

func runCase(dev shim.Device, info shim.Info, c opCase, seed uint64) (res Result) {
	res = Result{Op: string(c.op), Case: c.name, Status: "unregistered"}
	if cap, ok := lower.CapabilityOf(c.op); ok {
		res.Status = cap.StatusOn(info.Target.Name).String()
		res.MIL = cap.MIL
		res.Evidence, res.RejectedBy, res.Caveats = cap.Evidence, cap.RejectedBy, cap.Caveats
	}
	fail := func(err error) Result {
		res.Pass, res.Error = false, err.Error()
		return res
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	g := dataflow.New()
	vals := make([]dataflow.Value, len(c.inputs))
	host := map[string][]float64{}
	abs := map[string][]float64{}
	dev32 := make([][]float32, len(c.inputs))
	for i, s := range c.inputs {
		vals[i] = g.Input(s.name, s.shape)
		host[s.name], dev32[i] = draw(rng, s)
		as := make([]float64, len(host[s.name]))
		for j, v := range host[s.name] {
			as[j] = math.Abs(v)
		}
		abs[s.name] = as
	}
	g.Output("out", c.build(g, vals, g.Const))
	if err := g.Err(); err != nil {
		return fail(err)
	}
	want, err := dataflow.Eval(g, host)
	if err != nil {
		return fail(err)
	}
	var mag map[string][]float64 // Σ|terms| per output element
	if c.bound == dot || c.bound == narrowSum {
		// The same graph on |inputs| and |constants| gives Σ|terms|.
		ga := dataflow.New()
		av := make([]dataflow.Value, len(c.inputs))
		for i, s := range c.inputs {
			av[i] = ga.Input(s.name, s.shape)
		}
		absConst := func(name string, shape dataflow.Shape, data []float64) dataflow.Value {
			a := make([]float64, len(data))
			for i, v := range data {
				a[i] = math.Abs(v)
			}
			return ga.Const(name, shape, a)
		}
		ga.Output("out", c.build(ga, av, absConst))
		if mag, err = dataflow.Eval(ga, abs); err != nil {
			return fail(err)
		}
	}
	out, err := runOnDevice(dev, info.Target, g, dev32, len(want["out"]))
	if err != nil {
		return fail(err)
	}
	uAcc := 0x1p-24
	if narrow(info) {
		uAcc = fp16.UnitRoundoff
	}
	exactWant := want["out"]
	bounds := make([]float64, len(exactWant))
	for j, w := range exactWant {
		var bound float64
		switch c.bound {
		case exact:
			exactWant[j] = fp16.Round64(w) // exact up to the representation
		case rounded:
			bound = c.ulps * ulp16(w)
			if tableOps[c.op] && approximate(info) {
				bound += lutError * math.Abs(w)
			}
		case dot:
			bound = (fp16.UnitRoundoff+float64(c.k-1)*uAcc)*mag["out"][j] + ulp16(w)/2
		case narrowSum:
			bound = float64(c.k-1)*fp16.UnitRoundoff*mag["out"][j] + ulp16(w)/2
		}
		if approximate(info) && math.Abs(w)-bound < fp16.MinNormal {
			bound += fp16.MinNormal // the result may be subnormal and flushed to zero
		}
		bounds[j] = bound
	}
	return compare(res, out, exactWant, bounds)
}

func lenFirst(xs [][]float32) int {
	if len(xs) == 0 {
		return 0
	}
	return len(xs[0])
}

// Test runs the op cases of Check as subtests of t, one per case, failing
// those whose error exceeds the bound.
func Test(t *testing.T, dev shim.Device) {
	t.Helper()
	Report(t, dev, Check(dev))
}

// Report makes each result a subtest of t, failing those that did not
// pass (the layer cases of nn/nntest report through it too).
func Report(t *testing.T, dev shim.Device, results []Result) {
	t.Helper()
	for _, r := range results {
		name := r.Op
		if r.Case != "" {
			name += "/" + r.Case
		}
		t.Run(name, func(t *testing.T) {
			if !r.Pass {
				t.Errorf("%s on %s: %s (max error %.3g ulps, bound %.3g)", name, dev.Info().Name, r.Error, r.MaxULPs, r.BoundULPs)
				return
			}
			t.Logf("max error %.3g ulps (bound %.3g there), largest error/bound %.3g, over %d elements", r.MaxULPs, r.BoundULPs, r.MaxRatio, r.Elements)
		})
	}
}

// runOnDevice lowers g for target, compiles it on dev and runs it once on
// inputs, returning its one output, which must have n elements.
func runOnDevice(dev shim.Device, target lower.Target, g *dataflow.Graph, inputs [][]float32, n int) ([]float32, error) {
	p, err := lower.Lower(g, target)
	if err != nil {
		return nil, err
	}
	exe, err := dev.Compile(p)
	if err != nil {
		return nil, err
	}
	defer exe.Close()
	got, err := exe.Run(inputs)
	if err != nil {
		return nil, err
	}
	if len(got) != 1 || len(got[0]) != n {
		return nil, fmt.Errorf("shimtest: device returned %d outputs, first of length %d; want 1 of length %d", len(got), lenFirst(got), n)
	}
	return got[0], nil
}
