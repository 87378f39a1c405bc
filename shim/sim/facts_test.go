package sim

import (
	"errors"
	"math"
	"testing"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/shim"
	"github.com/stretchr/testify/require"
)

// The measured hardware facts of the numerics model, as the simulator reproduces
// them.

// dotProgram is x [1, n] · y [n, 1] → z [1, 1], with y given as its
// transpose [1, n] (transpose_y), so that both are one row of the packed
// input surface.
func dotProgram(n int) []port {
	return []port{in("x", 1, n), in("y", 1, n)}
}

func dotBody(n int) string {
	return cBool("ty", true) + stmt("z", []int{1, 1}, "matmul", "transpose_y = ty", "x = x", "y = y")
}

func TestFactDotOf16384OnesIsExact(t *testing.T) {
	// A wide (float32) accumulator sums 16384 ones exactly (as measured).
	const n = 16384
	p := program(dotProgram(n), dotBody(n), []port{in("z", 1, 1)})
	for _, num := range []Numerics{Wide} {
		out := run(t, num, p, filled(n, 1), filled(n, 1))
		require.Equal(t, []float32{n}, out[0])
	}
	// Under Narrow the fp16 running sum stalls where the spacing of fp16
	// reaches 2: at 2048, 2048 + 1 rounds back to 2048 (ties to even).
	out := run(t, Narrow, p, filled(n, 1), filled(n, 1))
	require.Equal(t, []float32{2048}, out[0])
}

func TestFactReduceSumIsNarrow(t *testing.T) {
	// reduce_sum accumulates in fp16: 4096 ones stall at 2048 (as measured),
	// under both models.
	const n = 4096
	body := cInts("ax", -1) + cBool("kd", true) + stmt("z", []int{1, 1}, "reduce_sum", "axes = ax", "keep_dims = kd", "x = x")
	p := program([]port{in("x", 1, n)}, body, []port{in("z", 1, 1)})
	for _, num := range []Numerics{Wide, Narrow} {
		out := run(t, num, p, filled(n, 1))
		require.Equal(t, []float32{2048}, out[0], "%v", num)
	}
	// The mean divides the stalled sum: 2048/4096.
	body = cInts("ax", -1) + cBool("kd", true) + stmt("z", []int{1, 1}, "reduce_mean", "axes = ax", "keep_dims = kd", "x = x")
	p = program([]port{in("x", 1, n)}, body, []port{in("z", 1, 1)})
	require.Equal(t, []float32{0.5}, run(t, Wide, p, filled(n, 1))[0])
}

func TestFactProductsAreRounded(t *testing.T) {
	// x = [1+2⁻¹⁰, 1−2⁻⁶], y = [1+2⁻¹⁰, 2⁻¹¹(1+2⁻⁶)]:
	//   p1 = 1 + 2⁻⁹ + 2⁻²⁰ rounds to 1 + 2⁻⁹;
	//   p2 = 2⁻¹¹(1 − 2⁻¹²) is a tie between fp16 neighbours and rounds to
	//   even, 2⁻¹¹;
	//   the float32 sum 1 + 2⁻⁹ + 2⁻¹¹ is a tie again and rounds to even,
	//   1 + 2⁻⁹ = 0x1.008p+0.
	// The exact dot product, 1 + 2⁻⁹ + 2⁻¹¹ + 2⁻²⁰ − 2⁻²³, lies above that tie
	// and would round to 1 + 3·2⁻¹⁰: the model's per-product rounding shows.
	x := []float32{1 + 0x1p-10, 1 - 0x1p-6}
	y := []float32{1 + 0x1p-10, 0x1p-11 * (1 + 0x1p-6)}
	exact := float64(x[0])*float64(y[0]) + float64(x[1])*float64(y[1])
	require.Equal(t, 1+3*0x1p-10, fp16.Round64(exact), "the exact result rounds up")
	p := program(dotProgram(2), dotBody(2), []port{in("z", 1, 1)})
	out := run(t, Wide, p, x, y)
	require.Equal(t, []float32{1 + 0x1p-9}, out[0])

	// A single product rounds once: (1+2⁻¹⁰)² = 1 + 2⁻⁹ + 2⁻²⁰ → 1 + 2⁻⁹.
	p = program(dotProgram(1), dotBody(1), []port{in("z", 1, 1)})
	out = run(t, Wide, p, []float32{1 + 0x1p-10}, []float32{1 + 0x1p-10})
	require.Equal(t, []float32{1 + 0x1p-9}, out[0])
}

func TestFactOverflowIsReported(t *testing.T) {
	// 65504·2 overflows fp16 to +Inf: Run returns the outputs and an error
	// wrapping shim.ErrRange that names the output and the element.
	body := stmt("z", []int{1, 4}, "mul", "x = x", "y = y")
	p := program([]port{in("x", 1, 4), in("y", 1, 4)}, body, []port{in("z", 1, 4)})
	exe, err := New(Wide).Compile(p)
	require.NoError(t, err)
	out, err := exe.Run([][]float32{{1, 2, 65504, 3}, {1, 1, 2, 1}})
	require.ErrorIs(t, err, shim.ErrRange)
	require.Contains(t, err.Error(), `output "z_out" element 2`)
	require.Len(t, out, 1)
	require.Equal(t, float32(2), out[0][1])
	require.True(t, math.IsInf(float64(out[0][2]), 1))
	var se *Error
	require.True(t, errors.As(err, &se))
}

func TestFactNarrowDiffersFromWide(t *testing.T) {
	// A dot product of 4096 ones: 4096 under Wide, 2048 under Narrow.
	const n = 4096
	p := program(dotProgram(n), dotBody(n), []port{in("z", 1, 1)})
	require.Equal(t, []float32{4096}, run(t, Wide, p, filled(n, 1), filled(n, 1))[0])
	require.Equal(t, []float32{2048}, run(t, Narrow, p, filled(n, 1), filled(n, 1))[0])
}
