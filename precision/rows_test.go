package precision

import (
	"errors"
	"fmt"
	"testing"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim/ane"
	"github.com/stretchr/testify/require"
)

// lowers reports whether the product's program for r rows passes the
// lowering and the hardware's tensor check, which MatMulRows must agree
// with: those are the checks a program meets on the device.
func lowers(t *testing.T, tg lower.Target, r, k, n int, opts MatMulOptions) error {
	t.Helper()
	_, g, err := buildProduct("test", tg, r, k, n, opts)
	require.NoError(t, err)
	prog, err := lower.Lower(g, tg)
	if err != nil {
		return err
	}
	return ane.CheckTensors(prog.MIL, tg)
}

// rowsTargets are the targets of the band and block searches' tests: sim,
// M1 (contractions padded to 32) and M4 (spatial limit 65536); with
// -short sim only (the searches build many graphs, and make test also
// runs them under qemu).
func rowsTargets() []lower.Target {
	if testing.Short() {
		return []lower.Target{lower.TargetSim}
	}
	return []lower.Target{lower.TargetSim, lower.TargetM1, lower.TargetM4}
}

// TestMatMulRows: the largest band MatMulRows returns lowers and passes
// the hardware's tensor check, and one row more does not, on targets with
// the spatial limit 16384 (sim, M1, whose contractions are padded to 32)
// and 65536 (M4), for every mode and limb count linalg uses, with one and
// several contraction chunks and column blocks.
func TestMatMulRows(t *testing.T) {
	const m = 70000 // past every limit
	modes := []struct {
		name string
		opts MatMulOptions
	}{
		{"fp16", MatMulOptions{Mode: FP16}},
		{"comp4", MatMulOptions{}},
		{"comp5", MatMulOptions{Limbs: 5}},
		{"narrow10x3", MatMulOptions{Limbs: 10, Bits: 3}},
		{"float64", MatMulOptions{Mode: Float64}},
	}
	shapes := []struct{ k, n int }{{8, 3}, {20000, 3}, {1024, 300}, {40000, 1}}
	for _, tg := range rowsTargets() {
		for _, md := range modes {
			for _, sh := range shapes {
				t.Run(fmt.Sprintf("%s/%s/k%d_n%d", tg.Name, md.name, sh.k, sh.n), func(t *testing.T) {
					r, err := maxRows("test", tg, m, sh.k, sh.n, md.opts)
					require.NoError(t, err)
					require.Less(t, r, m)
					require.NoError(t, lowers(t, tg, r, sh.k, sh.n, md.opts), "r = %d", r)
					require.Error(t, lowers(t, tg, r+1, sh.k, sh.n, md.opts), "r = %d", r)
					// A product that fits whole is one band.
					r2, err := maxRows("test", tg, r, sh.k, sh.n, md.opts)
					require.NoError(t, err)
					require.Equal(t, r, r2)
				})
			}
		}
	}
}

// TestMatMulRowsLimbs: the band shrinks with the limb count, as the limbs
// of A are stacked along its input's rows: on sim with a short
// contraction, r = ⌊height limit / limbs⌋ (FP16: the spatial limit).
func TestMatMulRowsLimbs(t *testing.T) {
	dev := openDevice(t, "sim")
	for _, tc := range []struct {
		opts MatMulOptions
		want int
	}{
		{MatMulOptions{Mode: FP16}, lower.TargetSim.MaxSpatial},
		{MatMulOptions{Limbs: 5}, engine.HeightLimit / 5},
		{MatMulOptions{Limbs: 10, Bits: 3}, engine.HeightLimit / 10},
	} {
		r, err := MatMulRows(dev, 100000, 8, 3, tc.opts)
		require.NoError(t, err)
		require.Equal(t, tc.want, r, "%+v", tc.opts)
	}
}

// TestMatMulRowsNever: a shape no band fits (the right operand's limbs
// alone pass the height limit) is a clear error wrapping
// lower.ErrUnsupported that names the tensor and the limit, before any
// lowering; bad arguments keep their sentinels.
func TestMatMulRowsNever(t *testing.T) {
	dev := openDevice(t, "sim-narrow")
	n := engine.HeightLimit/10 + 1
	_, err := MatMulRows(dev, 100, 8, n, MatMulOptions{Limbs: 10, Bits: 3})
	require.Error(t, err)
	require.True(t, errors.Is(err, lower.ErrUnsupported), "%v", err)
	require.Contains(t, err.Error(), "even for one row")
	require.Contains(t, err.Error(), `"x_k0"`)
	require.Contains(t, err.Error(), "height limit")
	_, err = MatMulRows(dev, 0, 8, 3, MatMulOptions{})
	require.ErrorIs(t, err, ErrShape)
	_, err = MatMulRows(dev, 10, 8, 3, MatMulOptions{Limbs: 99})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = MatMulRows(nil, 10, 8, 3, MatMulOptions{})
	require.Error(t, err)
}

// TestMatMulBlock: the largest column count maxCols returns lowers and
// passes the hardware's tensor check with one row, and one column more
// does not; MatMulBlock's band and block (columns evened out, no more
// blocks than the largest count needs) lower together, on the targets and
// modes of TestMatMulRows.
func TestMatMulBlock(t *testing.T) {
	const m, n = 5000, 20000 // n past every height limit
	modes := []struct {
		name string
		opts MatMulOptions
	}{
		{"fp16", MatMulOptions{Mode: FP16}},
		{"comp5", MatMulOptions{Limbs: 5}},
		{"narrow10x3", MatMulOptions{Limbs: 10, Bits: 3}},
		{"float64", MatMulOptions{Mode: Float64}},
	}
	for _, tg := range rowsTargets() {
		for _, md := range modes {
			for _, k := range []int{8, 5000} { // one and several contraction chunks
				t.Run(fmt.Sprintf("%s/%s/k%d", tg.Name, md.name, k), func(t *testing.T) {
					c, err := maxCols("test", tg, k, n, md.opts)
					require.NoError(t, err)
					require.Less(t, c, n)
					require.NoError(t, lowers(t, tg, 1, k, c, md.opts), "c = %d", c)
					require.Error(t, lowers(t, tg, 1, k, c+1, md.opts), "c = %d", c)
					r, cols, err := maxBandBlock("test", tg, m, k, n, md.opts)
					require.NoError(t, err)
					require.LessOrEqual(t, cols, c)
					require.Equal(t, (n+c-1)/c, (n+cols-1)/cols)
					require.NoError(t, lowers(t, tg, r, k, cols, md.opts), "r = %d, cols = %d", r, cols)
					// A product that fits whole is one band and one block.
					r2, cols2, err := maxBandBlock("test", tg, r, k, cols, md.opts)
					require.NoError(t, err)
					require.Equal(t, [2]int{r, cols}, [2]int{r2, cols2})
				})
			}
		}
	}
}

// TestMatMulBlockLimbs: on sim with a short contraction the column block
// is bounded as the band, by the limbs of B stacked along its input's
// rows: at most ⌊height limit / limbs⌋ columns (FP16: the height limit,
// B's columns being the height of its input and of the output), evened
// out over n; the band for those columns is TestMatMulRowsLimbs's.
func TestMatMulBlockLimbs(t *testing.T) {
	dev := openDevice(t, "sim")
	const n = 40000
	even := func(c int) int { nc := (n + c - 1) / c; return (n + nc - 1) / nc }
	for _, tc := range []struct {
		opts       MatMulOptions
		rows, cols int
	}{
		{MatMulOptions{Mode: FP16}, lower.TargetSim.MaxSpatial, even(engine.HeightLimit)},
		{MatMulOptions{Limbs: 5}, engine.HeightLimit / 5, even(engine.HeightLimit / 5)},
		{MatMulOptions{Limbs: 10, Bits: 3}, engine.HeightLimit / 10, even(engine.HeightLimit / 10)},
	} {
		r, c, err := MatMulBlock(dev, 100000, 8, n, tc.opts)
		require.NoError(t, err)
		require.Equal(t, [2]int{tc.rows, tc.cols}, [2]int{r, c}, "%+v", tc.opts)
	}
	// Columns that fit are not cut.
	r, c, err := MatMulBlock(dev, 100000, 8, 3, MatMulOptions{Limbs: 5})
	require.NoError(t, err)
	require.Equal(t, [2]int{engine.HeightLimit / 5, 3}, [2]int{r, c})
}

// TestMatMulBlockNever: a product no band and block fit is a clear error
// wrapping lower.ErrUnsupported that names the tensor and the limit. With
// one row and one column, 10 limbs of 3 bits cut the contraction into
// chunks of kc = ⌊min(2^(26−2·3), MaxSpatial − 1)/10⌋ (the exactness
// bound, and the spatial limit less the lo pass's one-column −I), each
// with its own A and B inputs of 10 device rows each; past
// ⌊MaxChannels/20⌋ chunks they pass the channel limit of the one packed
// input surface.
func TestMatMulBlockNever(t *testing.T) {
	dev := openDevice(t, "sim-narrow")
	tg := dev.Info().Target
	const L, b = 10, 3
	kc := min(1<<(26-2*b), tg.MaxSpatial-1) / L
	k := (tg.MaxChannels/(2*L) + 1) * kc
	_, _, err := MatMulBlock(dev, 1, k, 1, MatMulOptions{Limbs: L, Bits: b})
	require.Error(t, err)
	require.True(t, errors.Is(err, lower.ErrUnsupported), "%v", err)
	require.Contains(t, err.Error(), "even for one row and one column")
	require.Contains(t, err.Error(), "channel limit")
	// One chunk fewer fits.
	_, _, err = MatMulBlock(dev, 1, k-kc, 1, MatMulOptions{Limbs: L, Bits: b})
	require.NoError(t, err)
	_, _, err = MatMulBlock(dev, 0, 8, 3, MatMulOptions{})
	require.ErrorIs(t, err, ErrShape)
	_, _, err = MatMulBlock(dev, 10, 8, 0, MatMulOptions{})
	require.ErrorIs(t, err, ErrShape)
	_, _, err = MatMulBlock(dev, 10, 8, 3, MatMulOptions{Limbs: 99})
	require.ErrorIs(t, err, ErrInvalid)
	_, _, err = MatMulBlock(nil, 10, 8, 3, MatMulOptions{})
	require.Error(t, err)
}
