package sim

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
	"github.com/stretchr/testify/require"
)

// The elementwise ops' entries (elementwise.go): every op the simulator
// registers as elementwise has its kernels there, every elementwise op
// lower emits is registered, and each entry's kernels agree with each
// other and with its float64 value.

func TestElementwiseOpsAreRegistered(t *testing.T) {
	// Every entry of the tables is registered from it, with x (and y)
	// first, and no name is in both tables.
	supported := SupportedOps()
	for name, op := range unaryOps {
		require.NotContains(t, binaryOps, name)
		require.Contains(t, supported, name)
		spec := opSpecs[name]
		require.Equal(t, append([]param{{"x", kData, true}}, op.params...), spec.params, name)
	}
	for name := range binaryOps {
		require.Contains(t, supported, name)
		require.Equal(t, []param{{"x", kData, true}, {"y", kData, true}}, opSpecs[name].params, name)
	}
}

func TestLowerElementwiseOpsAreSimulated(t *testing.T) {
	// Every MIL op lower's capability table emits for an elementwise
	// dataflow op, natively or as its decomposition, on any target, has
	// its entry: a native unary op in unaryOps, a native binary op in
	// binaryOps, a decomposition's op in either.
	n := 0
	for _, c := range lower.Capabilities() {
		unary, binary := slices.Contains(dataflow.UnaryOps(), c.Op), slices.Contains(dataflow.BinaryOps(), c.Op)
		if !unary && !binary {
			continue
		}
		statuses := []lower.Status{c.Status}
		for _, s := range c.Except {
			statuses = append(statuses, s)
		}
		_, inUnary := unaryOps[c.MIL]
		_, inBinary := binaryOps[c.MIL]
		if slices.Contains(statuses, lower.Native) {
			n++
			if unary {
				require.True(t, inUnary, "%s: the native MIL op %q has no entry in unaryOps", c.Op, c.MIL)
			} else {
				require.True(t, inBinary, "%s: the native MIL op %q has no entry in binaryOps", c.Op, c.MIL)
			}
		}
		if slices.Contains(statuses, lower.Decomposed) {
			require.True(t, inUnary || inBinary, "%s: its decomposition's MIL op %q has no entry", c.Op, c.MIL)
		}
	}
	require.Greater(t, n, 10, "the capability table lists the elementwise ops")
}

func TestElementwiseEntriesAreComplete(t *testing.T) {
	// Each entry has its Wide kernel; a table-based op (lut ≠ 0) has its
	// float64 value and its Narrow kernel, the others neither; the key
	// tags sit in the top four bits and are distinct.
	tags := map[uint32]string{}
	tag := func(name string, lut uint32) {
		require.Zero(t, lut&(1<<28-1), "%s: lut %#x is not a tag in the top four bits", name, lut)
		require.NotContains(t, tags, lut, "%s and %s share the key tag %#x", name, tags[lut], lut)
		tags[lut] = name
	}
	for name, op := range unaryOps {
		require.NotNil(t, op.row, name)
		table := op.lut != 0
		require.Equal(t, table, op.exact != nil, "%s: exact", name)
		require.Equal(t, table, op.lutRow != nil, "%s: lutRow", name)
		if table {
			tag(name, op.lut)
		}
	}
	for name, op := range binaryOps {
		require.NotNil(t, op.row, name)
		table := op.lut != 0
		require.Equal(t, table, op.exact != nil, "%s: exact", name)
		require.Equal(t, table, op.lutRow != nil, "%s: lutRow", name)
		if table {
			tag(name, op.lut)
		}
	}
}

// unaryVariants are the arguments each unary op is checked with.
func unaryVariants(name string) []unaryArgs {
	switch name {
	case "log":
		return []unaryArgs{{mode: geluExact}, {eps: 0x1p-10, mode: geluExact}}
	case "gelu":
		return []unaryArgs{{mode: geluExact}, {mode: geluTanh}, {mode: geluSigmoid}}
	}
	return []unaryArgs{{mode: geluExact}}
}

func TestTableKernelsFollowExact(t *testing.T) {
	// On every fp16 value (Inf and NaN included), a table-based unary op's
	// Wide kernel is its float64 value rounded to float32, then to fp16,
	// and its Narrow kernel the same value times 1 + lutError(key) first,
	// the key being the op's tag and the operand's fp16 bits; bit for bit.
	all := make([]float32, 1<<16)
	for h := range all {
		all[h] = fp16.Bits(h).Float32()
	}
	out := make([]float32, len(all))
	for name, op := range unaryOps {
		if op.lut == 0 {
			continue
		}
		for _, u := range unaryVariants(name) {
			u.key = op.lut
			op.apply(out, all, &u, false)
			for i, v := range all {
				want := r16(f32(op.exact(float64(v), &u)))
				require.Equal(t, math.Float32bits(want), math.Float32bits(out[i]), "%s(%g) %+v, Wide", name, v, u)
			}
			op.apply(out, all, &u, true)
			for i, v := range all {
				want := r16(f32(op.exact(float64(v), &u) * (1 + lutError(op.lut^math.Float32bits(v)>>13))))
				require.Equal(t, math.Float32bits(want), math.Float32bits(out[i]), "%s(%g) %+v, Narrow", name, v, u)
			}
		}
	}
	// A binary one likewise on pairs, its key holding both operands' bits.
	x, y := mixed(4000, 51, true), mixed(4000, 52, true)
	out = out[:len(x)]
	for name, op := range binaryOps {
		if op.lut == 0 {
			continue
		}
		op.apply(out, x, 1, y, 1, false)
		for i := range out {
			want := r16(f32(op.exact(float64(x[i]), float64(y[i]))))
			require.Equal(t, math.Float32bits(want), math.Float32bits(out[i]), "%s(%g, %g), Wide", name, x[i], y[i])
		}
		op.apply(out, x, 1, y, 1, true)
		for i := range out {
			key := op.lut ^ math.Float32bits(x[i])>>13<<16 ^ math.Float32bits(y[i])>>13
			want := r16(f32(op.exact(float64(x[i]), float64(y[i])) * (1 + lutError(key))))
			require.Equal(t, math.Float32bits(want), math.Float32bits(out[i]), "%s(%g, %g), Narrow", name, x[i], y[i])
		}
	}
}

func TestBinaryLayoutsMatchRow(t *testing.T) {
	// Each binary op's written-out layouts (vv, vs, sv) give row's bits
	// with the same strides, on every kind of operand.
	const n = 3000
	x, y := mixed(n, 53, true), mixed(n, 54, true)
	got, want := make([]float32, n), make([]float32, n)
	for name, op := range binaryOps {
		for _, s := range []float32{0x1p-12, -3, 0, 300, float32(math.Inf(-1)), float32(math.NaN())} {
			for _, l := range []struct {
				x      []float32
				xs     int
				y      []float32
				ys     int
				layout string
			}{{x, 1, y, 1, "vv"}, {x, 1, []float32{s}, 0, "vs"}, {[]float32{s}, 0, y, 1, "sv"}, {[]float32{s}, 0, []float32{-s}, 0, "ss"}} {
				op.apply(got, l.x, l.xs, l.y, l.ys, false)
				op.row(want, l.x, l.xs, l.y, l.ys)
				for i := range got {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s %s (scalar %g), element %d", name, l.layout, s, i)
				}
			}
		}
	}
}

func TestNarrowInfoNamesTheTableOps(t *testing.T) {
	// The Narrow device's description lists exactly the table-based ops.
	info := New(Narrow).Info().Numerics
	m := regexp.MustCompile(`fp16; ([a-z_, ]+) with a deterministic relative error`).FindStringSubmatch(info)
	require.NotNil(t, m, info)
	listed := strings.Split(m[1], ", ")
	var table []string
	for name, op := range unaryOps {
		if op.lut != 0 {
			table = append(table, name)
		}
	}
	for name, op := range binaryOps {
		if op.lut != 0 {
			table = append(table, name)
		}
	}
	require.ElementsMatch(t, table, listed)
}
