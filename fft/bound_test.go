package fft

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// TestStageBound checks the scaling by construction, in exact arithmetic:
// the program's graph is evaluated in float64 (dataflow.Eval, the
// definition of every op) on host-packed inputs that reach the worst case
// (a constant puts a whole stage's sum into one output; an on-grid tone
// puts the whole transform into one bin), and every conv output must stay
// at or below 2¹⁴, half the engine's matmul cliff of 32752, and every
// other value below fp16's 65504. (Compensated convs are scaled by a bound
// on their digit sums, which data cannot reach, so they stay far below.)
func TestStageBound(t *testing.T) {
	cases := []struct {
		dims []int
		mode precision.Mode
	}{
		{[]int{256}, precision.FP16},
		{[]int{240}, precision.FP16},
		{[]int{4096}, precision.FP16},
		{[]int{64, 64}, precision.FP16},
		{[]int{1024}, precision.Compensated},
		{[]int{30, 32}, precision.Compensated},
	}
	if !testing.Short() {
		cases = append(cases, struct {
			dims []int
			mode precision.Mode
		}{[]int{65536}, precision.FP16}, struct {
			dims []int
			mode precision.Mode
		}{[]int{15360}, precision.FP16})
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v/%v", c.dims, c.mode), func(t *testing.T) {
			p := &program{lay: newLayout(c.dims, 2, blockFor(c.mode)), sign: -1, mode: c.mode}
			g := p.graph(16384)
			require.NoError(t, g.Err())
			var convs []int
			for _, n := range g.Nodes() {
				if n.Op == dataflow.OpConv2D || n.Op == dataflow.OpMatMul {
					convs = append(convs, n.ID)
				}
			}
			for i := range g.NumNodes() {
				if g.Nodes()[i].Op != dataflow.OpConst {
					v, _ := g.ValueOf(i)
					g.Output(fmt.Sprintf("probe%d", i), v)
				}
			}
			require.NoError(t, g.Err())
			n := p.lay.total
			constant := make([]complex128, n)
			tone := make([]complex128, n)
			for j := range n {
				constant[j] = complex(1, -1)
				ph := 2 * math.Pi * float64((7*j)%n) / float64(n)
				tone[j] = complex(math.Cos(ph), math.Sin(ph))
			}
			buf, _, _, err := p.pack("test", [][]complex128{constant, tone}, nil, 0)
			require.NoError(t, err)
			in := make([]float64, len(buf))
			for i, v := range buf {
				in[i] = fp16.Bits(v).Float64()
			}
			outs, err := dataflow.Eval(g, map[string][]float64{"x": in})
			require.NoError(t, err)
			isConv := map[int]bool{}
			for _, id := range convs {
				isConv[id] = true
			}
			worstConv := 0.0
			for i, nd := range g.Nodes() {
				if nd.Op == dataflow.OpConst {
					continue
				}
				m := 0.0
				for _, v := range outs[fmt.Sprintf("probe%d", i)] {
					m = max(m, math.Abs(v))
				}
				if isConv[i] {
					worstConv = max(worstConv, m)
					require.LessOrEqual(t, m, float64(1<<14), "conv node %d", i)
				}
				require.Less(t, m, fp16.MaxValue, "node %d (%s)", i, nd.Op)
			}
			if c.mode == precision.FP16 {
				// FP16 stages are scaled to the exact worst case, which the
				// constant reaches within a factor 4 of 2¹³: its modulus
				// lies in [2¹², 2¹³) and splits over two components, and a
				// block such as 240 grows by 240/256 only.
				require.Greater(t, worstConv, float64(1<<11), "the worst case is reached, not missed")
			}
		})
	}
}

// TestLowersForEngineTargets: the programs lower (and pass lower.Lint) for
// the M1 and M5 families, not only for the simulator's target.
func TestLowersForEngineTargets(t *testing.T) {
	for _, tg := range []lower.Target{lower.TargetM1, lower.TargetM5} {
		for _, c := range []struct {
			dims  []int
			batch int
			mode  precision.Mode
		}{
			{[]int{256}, 1, precision.FP16},
			{[]int{65536}, 1, precision.FP16},
			{[]int{1024}, 64, precision.FP16},
			{[]int{64, 64}, 1, precision.FP16},
			{[]int{4096}, 1, precision.Compensated},
		} {
			p := &program{lay: newLayout(c.dims, c.batch, blockFor(c.mode)), sign: -1, mode: c.mode}
			g := p.graph(min(tg.MaxSpatial, 16384))
			prog, err := lower.Lower(g, tg)
			require.NoError(t, err, "%s %v×%d %v", tg.Name, c.dims, c.batch, c.mode)
			require.Len(t, prog.InputSurfaces, 1)
			require.Len(t, prog.OutputSurfaces, 1)
		}
	}
}

// TestNarrowDigitsExact: on an fp16 running sum (sim-narrow) the convs of
// the digit programs of both modes round nowhere: every digit product and
// every partial sum, in whatever order, is an integer of at most 2¹¹, which
// the fp16 format holds, and no value is subnormal. So the same program
// returns, bit for bit, on sim-narrow what it returns on sim, whose convs
// add in float32 (exactly, for these integers) and keep subnormals; the
// elementwise ops are correctly rounded on both. Signals that fill the
// bound (a constant puts a whole stage into one output), spread thin (an
// impulse) or both (random data), in every layout: one block, twiddled
// stages, 2-D.
func TestNarrowDigitsExact(t *testing.T) {
	narrow := openDevice(t, "sim-narrow")
	wide := openDevice(t, "sim")
	cases := []struct {
		dims []int
		mode precision.Mode
	}{
		{[]int{15}, precision.Compensated},
		{[]int{256}, precision.FP16},
		{[]int{512}, precision.Compensated},
		{[]int{30, 32}, precision.FP16},
		{[]int{4096}, precision.FP16},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v/%v", c.dims, c.mode), func(t *testing.T) {
			sc, block := schemeFor(c.mode, narrow)
			require.True(t, sc.exact)
			lay := newLayout(c.dims, 3, block)
			sc = sc.forLayout(lay)
			n := lay.total
			constant := make([]complex128, n)
			for j := range constant {
				constant[j] = complex(-1, 1)
			}
			xs := [][]complex128{constant, signals[1].gen(n, newRNG(1, uint64(n))), signals[0].gen(n, newRNG(0, uint64(n)))}
			var outs [2][][]float32
			for d, dev := range []shim.Device{narrow, wide} {
				p, err := newProgram(dev, lay, -1, c.mode, sc)
				require.NoError(t, err)
				buf, _, _, err := p.pack("test", xs, nil, 0)
				require.NoError(t, err)
				in := make([]float32, len(buf))
				fp16.DecodeFloat32(in, buf)
				outs[d], err = p.exe.Run([][]float32{in})
				require.NoError(t, err)
				require.NoError(t, p.exe.Close())
			}
			require.Len(t, outs[0], len(outs[1]))
			nonzero := 0
			for k := range outs[0] {
				require.Len(t, outs[0][k], len(outs[1][k]))
				for i, v := range outs[0][k] {
					if w := outs[1][k][i]; v != w {
						require.Failf(t, "rounded", "output piece %d [%d]: sim-narrow %v, sim %v", k, i, v, w)
					}
					if v != 0 {
						nonzero++
					}
				}
			}
			require.Greater(t, nonzero, n, "the outputs carry the transforms")
		})
	}
}

// bins1D steps its roots by products between reads of the table: its bins
// must match the defining sum (bin, which reads every root from the
// table) to a few hundred float64 roundings of the signal's energy, far
// below the check's fp16 tolerance, at the longest 1-D size and for bins
// whose root strides miss the table's cache lines.
func TestBins1DMatchesDefiningSum(t *testing.T) {
	const n = 65536
	l := newLayout([]int{n}, 1, 64)
	rng := rand.New(rand.NewPCG(21, 22))
	x := make([]complex128, n)
	ex := 0.0
	for i := range x {
		x[i] = complex(rng.NormFloat64(), rng.NormFloat64())
		ex += real(x[i])*real(x[i]) + imag(x[i])*imag(x[i])
	}
	// e = 1 sums on x and scales after; e = ±500 (x scaled by 2^∓500 so
	// that x·2^e is the same) sums on a scaled copy.
	for _, e := range []int{1, 500, -500} {
		xe := make([]complex128, n)
		for i, v := range x {
			xe[i] = complex(math.Ldexp(real(v), 1-e), math.Ldexp(imag(v), 1-e))
		}
		for _, k := range []int{1, 341, 12345, n / 2, n - 1} {
			gotEx, got := l.bins1D(xe, k, e)
			require.InDelta(t, 4*ex, gotEx, 1e-12*4*ex)
			for i, kk := range [2]int{k, (n - k) % n} {
				want := l.bin(x, kk, 1, 2)
				// Both sums of n terms of modulus at most 2|x_j|: each is
				// within n·2⁻⁵³·2·Σ|x_j| ≤ 7.3e-12·2·√n·‖x‖₂ of the exact bin
				// (naive summation), the recurrence's roots adding
				// rootResync·2⁻⁵² relative per term, less.
				require.InDelta(t, 0, cmplx.Abs(got[i]-want), 1e-11*2*math.Sqrt(float64(n)*ex), "e = %d, bin %d", e, kk)
			}
		}
	}
	// Parts of odd lengths from odd starts add up to the whole.
	for _, k := range []int{1, 341, 12345} {
		ex0, a0, b0 := l.bins1DFrom(x[:12345], 0, k)
		ex1, a1, b1 := l.bins1DFrom(x[12345:], 12345, k)
		require.InDelta(t, ex, ex0+ex1, 1e-12*ex)
		for i, kk := range [2]int{k, n - k} {
			got := [2]complex128{a0 + a1, b0 + b1}[i]
			require.InDelta(t, 0, cmplx.Abs(got-l.bin(x, kk, 1, 1)), 1e-11*math.Sqrt(float64(n)*ex), "parts, bin %d", kk)
		}
	}
}
