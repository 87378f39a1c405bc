package linalg

import (
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// luProgram is the trailing-update program of the device-resident
// factorization (see factorFP16) for one (n, b), and its session: the
// n×n matrix "a" is carried from output "an" after every dispatch. The
// step's operands arrive in one b-row-stacked input "ops" = [W; L₂₁ᵀ; Cᵀ]
// (3b×n: every row n long, so the packed input surface wastes nothing).
type luProgram struct {
	cfg  *config
	n, b int
	exe  shim.Executable
	ses  *shim.Session
	cost lower.Cost
}

func newLUProgram(fn string, cfg *config, n, b int) (*luProgram, error) {
	start := time.Now()
	defer func() { cfg.stats.Build += time.Since(start) }()
	g := dataflow.New()
	a := g.Input("a", dataflow.Shape{n, n})
	ops := g.Input("ops", dataflow.Shape{3 * b, n})
	w := g.Slice(ops, []int{0, 0}, []int{b, n})
	lt := g.Slice(ops, []int{b, 0}, []int{b, n})
	ct := g.Slice(ops, []int{2 * b, 0}, []int{b, n})
	u := g.MatMul(w, a, false, false)                         // [b, n]: W·A
	an := g.Sub(a, g.MatMul(lt, u, true, false))              // [n, n]: A − L₂₁·U
	g.Output("an", an)                                        //
	g.Output("u", u)                                          //
	g.Output("p", g.MatMul(ct, an, false, true))              // [b, n]: (A'·C)ᵀ
	g.Output("mx", g.ReduceMax(g.Abs(an), []int{0, 1}, true)) // [1, 1]
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

// rescale multiplies the resident matrix by 2^e: read, scaled on the way
// back (exact but for fp16 underflow when e < 0).
func (p *luProgram) rescale(fn string, e int) error {
	buf := make([]float64, p.n*p.n)
	if err := p.ses.Read64("a", buf, 0); err != nil {
		return wrapDevice(fn, err)
	}
	if err := p.ses.Write64("a", buf, e); err != nil {
		return wrapDevice(fn, err)
	}
	return nil
}

func (p *luProgram) close() {
	_ = p.ses.Close()
	_ = p.exe.Close()
}
