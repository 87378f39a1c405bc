package linalg

import (
	"fmt"
	"slices"
	"time"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/internal/parallel"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// luProgram is the trailing-update program of the device-resident
// factorization (see factorFP16) for one (n, b), and its session: the
// n×n matrix "a" is carried from output "an" after every dispatch. The
// step's operands arrive in one b-row-stacked input "ops" = [W; L₂₁ᵀ]
// (2b×n: every row n long, so the packed input surface wastes nothing).
// The next panel is read from "an" on its surface (b columns of the
// active rows): gathering it on the device, as a product with a column
// selection, would cost as many flops as either product of the update.
type luProgram struct {
	cfg  *config
	n, b int
	exe  shim.Executable
	ses  *shim.Session
	cost lower.Cost
}

// luGraph is the trailing-update program for (n, b); see factorFP16.
func luGraph(n, b int) *dataflow.Graph {
	g := dataflow.New()
	a := g.Input("a", dataflow.Shape{n, n})
	ops := g.Input("ops", dataflow.Shape{2 * b, n})
	w := g.Slice(ops, []int{0, 0}, []int{b, n})
	lt := g.Slice(ops, []int{b, 0}, []int{b, n})
	u := g.MatMul(w, a, false, false)                         // [b, n]: W·A
	an := g.Sub(a, g.MatMul(lt, u, true, false))              // [n, n]: A − L₂₁·U
	g.Output("an", an)                                        //
	g.Output("u", u)                                          //
	g.Output("mx", g.ReduceMax(g.Abs(an), []int{0, 1}, true)) // [1, 1]
	return g
}

func newLUProgram(fn string, cfg *config, n, b int) (*luProgram, error) {
	start := time.Now()
	defer func() { cfg.stats.Build += time.Since(start) }()
	g := luGraph(n, b)
	exe, rep, err := shim.BuildReported(cfg.dev, g)
	if err != nil {
		return nil, wrapDevice(fn, err)
	}
	if rep.Fresh {
		cfg.stats.Programs++
		cfg.stats.ModeledCompile += rep.Modeled
	}
	ses, err := shim.NewSession(exe)
	if err != nil {
		_ = exe.Close()
		return nil, wrapDevice(fn, err)
	}
	if err := ses.Carry("an", "a"); err != nil {
		_ = exe.Close()
		return nil, wrapDevice(fn, err)
	}
	p := &luProgram{cfg: cfg, n: n, b: b, exe: exe, ses: ses}
	if c, err := lower.Estimate(exe.Program(), cfg.dev.Info().Target.Name); err == nil {
		p.cost = c
	}
	return p, nil
}

// run dispatches once and returns the device's own time.
func (p *luProgram) run(fn string) (time.Duration, error) {
	st := p.cfg.stats
	if st.Dispatches+1 > p.cfg.budget {
		return 0, wrapBudget(fn, p.cfg)
	}
	d0 := p.ses.Stats().Device
	err := p.ses.Run()
	d := p.ses.Stats().Device - d0
	st.Device += d
	st.Dispatches++
	st.Flops += p.cost.Flops
	st.ModeledTime += p.cost.Time
	if err != nil {
		return d, wrapDevice(fn, err)
	}
	return d, nil
}

// rescale multiplies the resident matrix by 2^e in place, on its fp16
// encodings (exact but for fp16 underflow when e < 0).
func (p *luProgram) rescale(fn string, e int) error {
	a, err := p.ses.InputRows("a")
	if err != nil {
		return wrapDevice(fn, err)
	}
	bad := make([]bool, parts(a.Rows, a.RowLen))
	parallel.Ranges(a.Rows, len(bad), func(k, lo, hi int) {
		for r := lo; r < hi; r++ {
			if fp16.ScaleInPlace(a.Row(r), e) >= 0 {
				bad[k] = true
			}
		}
	})
	if slices.Contains(bad, true) {
		return fmt.Errorf("linalg: %s: rescaling the resident matrix by 2^%d left fp16's range: %w", fn, e, ErrRange)
	}
	return nil
}

// writeMatrix stores B·2^σ as the resident matrix, every core encoding
// its rows.
func (p *luProgram) writeMatrix(fn string, b []float64, sigma int) error {
	a, err := p.ses.InputRows("a")
	if err != nil {
		return wrapDevice(fn, err)
	}
	n := a.RowLen
	bad := make([]int, parts(a.Rows, n))
	parallel.Ranges(a.Rows, len(bad), func(k, lo, hi int) {
		bad[k] = -1
		for r := lo; r < hi && bad[k] < 0; r++ {
			if i := fp16.EncodeScaled(a.Row(r), b[r*n:(r+1)*n], sigma); i >= 0 {
				bad[k] = r*n + i
			}
		}
	})
	for _, i := range bad {
		if i >= 0 {
			return fmt.Errorf("linalg: %s: entry %d of the equilibrated matrix is %g·2^%d, beyond fp16's range: %w", fn, i, b[i], sigma, ErrRange)
		}
	}
	return nil
}

// opsTile is the row tile of writeOps' and readStep's transposes.
const opsTile = 32

// writeOps encodes the step's operands [W; L₂₁ᵀ] into the "ops"
// input in place: W = inv (L₁₁⁻¹, bw×bw, rounded to fp16) in the pivot
// rows' columns rows[:bw], L₂₁ᵀ from the panel's rows bw…m−1 (rounded
// multipliers, |l| ≤ 1) in their rows' columns. Every value is an fp16 already, so encoding is
// exact; only W can leave the range (pivot growth).
func (p *luProgram) writeOps(fn string, inv []float64, panel []float32, rows []int, bw, m, c int) error {
	ops, err := p.ses.InputRows("ops")
	if err != nil {
		return wrapDevice(fn, err)
	}
	b := p.b
	for r := range 2 * b {
		clear(ops.Row(r))
	}
	for t := range bw {
		w := ops.Row(t)
		for s := 0; s <= t; s++ {
			h := fp16.FromFloat64(inv[t*bw+s])
			if h.IsInf() {
				return fmt.Errorf("linalg: %s: the panel at column %d has L₁₁⁻¹ entries of %g, beyond fp16's range (pivot growth); use Precision Compensated: %w", fn, c, inv[t*bw+s], ErrRange)
			}
			w[rows[s]] = uint16(h)
		}
	}
	// L₂₁ᵀ by tiles of panel rows: each tile's rows encoded in one pass
	// (exactly: they are fp16 values already), then scattered, so that
	// each row of ops is written in runs. The tiles are split across
	// cores: their rows, hence the columns they write, are disjoint.
	tiles := (m - bw + opsTile - 1) / opsTile
	parallel.Ranges(tiles, parallel.Parts(tiles, (m-bw)*2*bw, parallelMin), func(_, lo, hi int) {
		tile := make([]uint16, opsTile*bw)
		for k := lo; k < hi; k++ {
			i0 := bw + k*opsTile
			i1 := min(i0+opsTile, m)
			fp16.EncodeScaled32(tile[:(i1-i0)*bw], panel[i0*bw:i1*bw], 0)
			for t := range bw {
				lt := ops.Row(b + t)
				for i := i0; i < i1; i++ {
					lt[rows[i]] = tile[(i-i0)*bw+t]
				}
			}
		}
	})
	return nil
}

// readStep reads the dispatch's outputs: U's new columns into the packed
// factors lu (rows c…c+bw−1, columns from c+bw) scaled by 2^exp, the
// next panel (nbw columns, rows act) into panel in the device's units
// (fp16 values, exact in float32), and returns the new max|A'| in device
// units. An fp16 overflow is ErrRange.
func (p *luProgram) readStep(fn string, lu []float64, panel []float32, act []int, bw, c, nbw, exp int) (float64, error) {
	n := p.n
	mxv := []float64{0}
	if err := p.ses.Read64("mx", mxv, 0); err != nil {
		return 0, wrapDevice(fn, err)
	}
	u, err := p.ses.OutputRows("u")
	if err != nil {
		return 0, wrapDevice(fn, err)
	}
	an, err := p.ses.OutputRowsPart("an", len(act)*nbw)
	if err != nil {
		return 0, wrapDevice(fn, err)
	}
	overflow := func(what string, t int) error {
		return fmt.Errorf("linalg: %s: row %d of the step's %s overflowed fp16 on the device: %w", fn, t, what, ErrRange)
	}
	// Every core decodes a range of U's rows and of the next panel's
	// (columns c+bw … c+bw+nbw−1 of the active rows, a run of each row of
	// A'); the first overflow of each range is kept.
	k := parts(bw+len(act), n)
	bad := make([]error, k)
	c2 := c + bw
	parallel.Ranges(bw+len(act), k, func(part, lo, hi int) {
		for t := lo; t < min(hi, bw); t++ {
			row := u.Row(t)[c+bw:]
			if fp16.Finite(row) >= 0 {
				bad[part] = overflow("U", t)
				return
			}
			fp16.DecodeScaled(lu[(c+t)*n+c+bw:(c+t+1)*n], row, exp)
		}
		for i := max(lo, bw) - bw; i < hi-bw; i++ {
			r := act[i]
			row := an.Row(r)[c2 : c2+nbw]
			if fp16.Finite(row) >= 0 {
				bad[part] = overflow("trailing matrix", r)
				return
			}
			fp16.DecodeFloat32(panel[i*nbw:(i+1)*nbw], row)
		}
	})
	for _, err := range bad {
		if err != nil {
			return 0, err
		}
	}
	return mxv[0], nil
}

func (p *luProgram) close() {
	_ = p.ses.Close()
	_ = p.exe.Close()
}
