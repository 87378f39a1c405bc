package krylov

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/shim"
)

// gmresPrecond is a compiled device preconditioner: one dispatch maps v to
// z ≈ A⁻¹·v (and, for deviceW, also returns A·z).
type gmresPrecond struct {
	exe     *compiled
	n       int
	inverse bool // Newton–Schulz inverse, else the polynomial
	sigma   int  // polynomial: A_s = 2^σ·A
	rs, cs  []float64
	deviceW bool
	wScale  float64 // inverse with deviceW: A·z = R⁻¹·wScale·(q + q_lo)
	names   map[string]int
	note    string // appended to a failed solve's error
	in      []float32
	tmp     []float64
}

// gmresCompLimbs is the limb count of the compensated image A·z: its
// truncation error is about 2^(−5·5)·‖A‖‖z‖, below the 2⁻²² resolution of
// the (hi, lo) pair it is returned in.
const gmresCompLimbs = 5

// gmresImageNu: the compensated product multiplies ν·z/max|z|, a vector of
// entries at most ν, so that its row factors ν·2^(e_i − 10 + k) (see
// compensatedDense.apply) stay in fp16's normal range for rows of an
// equilibrated matrix; its outputs stay below ν·‖B_s‖∞ < 2⁸.
const gmresImageNu = 256.0

// precond returns the device preconditioner for p's operator on dev,
// building it on first use (Newton–Schulz for a dense matrix: its device
// time and build time are added to stats).
func (p *gmresPlan) precond(dev shim.Device, stats *Stats) (*gmresPrecond, error) {
	note := ""
	if d, ok := p.a.(*denseOp); ok && d.n <= nsMaxN {
		inv, err := nsInverseFor(dev, d, p.compensated, stats)
		if err != nil {
			return nil, err
		}
		mode := "fp16"
		if p.compensated {
			mode = "compensated"
		}
		if inv.usable() {
			pc, err := p.inversePrecond(dev, d, inv, stats)
			if err == nil && !inv.ok() {
				pc.note = fmt.Sprintf("; Newton–Schulz with %s products reached only ‖I − B·X‖_F = %.3g (converged: < %g) for this matrix", mode, inv.resF, nsAccept)
				if !p.compensated {
					pc.note += " (Precision Compensated reaches κ ≈ 1e7)"
				}
			}
			return pc, err
		}
		note = fmt.Sprintf("; Newton–Schulz with %s products reached only ‖I − B·X‖_F = %.3g for this matrix (usable: below √n/2 = %.3g), so GMRES preconditioned with the polynomial", mode, inv.resF, math.Sqrt(float64(d.n))/2)
		if !p.compensated {
			note += " (Precision Compensated reaches κ ≈ 1e7)"
		}
	}
	pc, err := p.polyPrecond(dev, stats)
	if err != nil {
		return nil, err
	}
	pc.note = note
	return pc, nil
}

func (p *gmresPlan) polyPrecond(dev shim.Device, stats *Stats) (*gmresPrecond, error) {
	region := polyRegion(p.a, p.normA, p.sigma, polyDegree)
	key := programKey{solver: "gmres-poly", dev: dev, op: p.a, steps: polyDegree, sigma: p.sigma}
	t0 := time.Now()
	exe, err := programs.get(key, fmt.Sprintf("GMRES preconditioner on n = %d", p.n), func() (*dataflow.Graph, error) {
		return polyGraph(p.a, p.sigma, polyDegree, region)
	})
	stats.Build += time.Since(t0)
	if err != nil {
		return nil, err
	}
	return &gmresPrecond{exe: exe, n: p.n, sigma: p.sigma, names: outputNames(exe), in: make([]float32, p.n), tmp: make([]float64, p.n)}, nil
}

func (p *gmresPlan) inversePrecond(dev shim.Device, d *denseOp, inv *nsInverse, stats *Stats) (*gmresPrecond, error) {
	key := programKey{solver: "gmres-inverse", dev: dev, op: d, compensated: p.compensated}
	t0 := time.Now()
	exe, err := programs.get(key, fmt.Sprintf("GMRES preconditioner on n = %d", p.n), func() (*dataflow.Graph, error) {
		return inverseGraph(inv, p.compensated)
	})
	stats.Build += time.Since(t0)
	if err != nil {
		return nil, err
	}
	pc := &gmresPrecond{exe: exe, n: p.n, inverse: true, rs: inv.rs, cs: inv.cs, names: outputNames(exe), in: make([]float32, p.n), tmp: make([]float64, p.n)}
	if _, ok := pc.names["w"]; ok {
		pc.deviceW = true
		pc.wScale = math.Ldexp(1/gmresImageNu, -inv.sigma)
	}
	return pc, nil
}

// apply runs one dispatch: z ≈ A⁻¹·v, and w = A·z when the device computes
// it (the result says so). v has unit norm.
func (pc *gmresPrecond) apply(run *run, v, z, w []float64) (bool, error) {
	res := run.res
	src := v
	if pc.rs != nil {
		for i, x := range v {
			pc.tmp[i] = pc.rs[i] * x
		}
		src = pc.tmp
	}
	peak := 0.0
	for _, x := range src {
		peak = math.Max(peak, math.Abs(x))
	}
	e := pow2Below(peak)
	for {
		toFloat32(pc.in, src, math.Ldexp(1, e))
		t0 := time.Now()
		out, err := pc.exe.Run([][]float32{pc.in})
		res.Device += time.Since(t0)
		res.charge(pc.exe)
		if errors.Is(err, shim.ErrRange) && pc.inverse && res.Retries < gmresMaxRetries {
			e-- // an fp16 overflow in X·v: halve the input
			res.Retries++
			continue
		}
		if err != nil {
			return false, err
		}
		o := outputs{pc.names, out}
		zo := o.get("z")
		// z is any fixed multiple of what the device returned (FGMRES's
		// least squares absorbs it); the one that approximates A⁻¹·v keeps
		// the host's numbers near unit scale.
		f := math.Ldexp(1, pc.sigma-e)
		for i, x := range zo {
			z[i] = f * float64(x)
			if pc.cs != nil {
				z[i] *= pc.cs[i]
			}
		}
		if !pc.deviceW {
			return false, nil
		}
		hi, lo := o.get("w"), o.get("w_lo")
		for i := range w {
			w[i] = f * pc.wScale * (float64(hi[i]) + float64(lo[i]))
			if pc.rs != nil {
				w[i] /= pc.rs[i]
			}
		}
		return true, nil
	}
}

// nsInverse is Newton–Schulz's result for one dense operator, mode and
// device: X ≈ B_s⁻¹ for B_s = 2^σ·R·A·C (R, C the equilibration, or nil).
type nsInverse struct {
	b      *denseOp // R·A·C (or A)
	sigma  int
	rs, cs []float64
	x      *mat.Dense // nil when Newton–Schulz failed
	resF   float64
}

// gmresImageSpread bounds the spread max(r)/min(r) of the row
// equilibration R for which the device returns the images A·z: the
// compensated image B·z has an absolute error of about 2⁻²² of its largest
// entry, and A·z = R⁻¹·B·z carries that error into the rows with the
// smallest r_i multiplied by the spread, relative to the rows with the
// largest: up to 2⁸, the error stays below gmresImageFloor, where a cycle
// ends anyway; past it (rows scaled 10^±6 give about 2⁴⁰) the images are
// wrong in the rows with small entries, the Arnoldi relation fails and
// GMRES stagnates at x = 0, so the host multiplies by A in float64.
const gmresImageSpread = 0x1p8

// imageOnDevice reports whether the device returns A·z (see
// gmresImageSpread).
func (inv *nsInverse) imageOnDevice() bool {
	return inv.rs == nil || spread(inv.rs) <= gmresImageSpread
}

// ok reports a converged Newton–Schulz: ‖I − B·X‖_F < nsAccept.
func (inv *nsInverse) ok() bool { return inv.x != nil && inv.resF < nsAccept }

// usable reports an X that still preconditions: ‖I − B·X‖²_F ≤ n/4, so
// that B·X is the identity but for a part of Frobenius weight a quarter of
// I's (some singular directions Newton–Schulz has not resolved), which
// FGMRES takes care of in a few extra steps. (On nonsymmetric RandSVD
// κ = 1e4, n = 64, fp16 Newton–Schulz stops at 2.75, and FGMRES(30) with
// that X converges in 20 steps; the polynomial does not converge.)
func (inv *nsInverse) usable() bool {
	return inv.x != nil && inv.resF*inv.resF <= float64(inv.b.n)/4
}

type nsKey struct {
	dev         shim.Device
	op          *denseOp
	compensated bool
}

type nsEntry struct {
	once sync.Once
	inv  *nsInverse
	err  error
}

// nsCacheSize bounds the inverses kept (each n² float64 values).
const nsCacheSize = 8

var nsCache struct {
	sync.Mutex
	m     map[nsKey]*nsEntry
	order []nsKey
}

// nsInverseFor returns the Newton–Schulz inverse of d for dev and the
// mode, computing it on first use; the solve that computes it is charged
// its device and build time.
func nsInverseFor(dev shim.Device, d *denseOp, compensated bool, stats *Stats) (*nsInverse, error) {
	key := nsKey{dev, d, compensated}
	nsCache.Lock()
	if nsCache.m == nil {
		nsCache.m = map[nsKey]*nsEntry{}
	}
	ent, ok := nsCache.m[key]
	if !ok {
		ent = &nsEntry{}
		nsCache.m[key] = ent
		nsCache.order = append(nsCache.order, key)
		if len(nsCache.order) > nsCacheSize {
			delete(nsCache.m, nsCache.order[0])
			nsCache.order = nsCache.order[1:]
		}
	}
	nsCache.Unlock()
	ent.once.Do(func() {
		inv := &nsInverse{b: d}
		if sop, r, c := twoSidedScaling(d); sop != nil {
			inv.b, inv.rs, inv.cs = sop.(*denseOp), r, c
		}
		inv.sigma = pow2Exp(inv.b.norm)
		bs := mat.NewDense(d.n, d.n, nil)
		for i := range d.n {
			for j := range d.n {
				bs.Set(i, j, math.Ldexp(inv.b.a[i*d.n+j], inv.sigma))
			}
		}
		out, err := newtonSchulz(dev, bs, compensated)
		stats.Device += out.device
		stats.Build += out.build
		stats.SetupDispatches += out.products
		stats.ModeledSetup += out.modeled
		stats.ModeledCompile += out.compile
		if err != nil {
			ent.err = err
			return
		}
		inv.x, inv.resF = out.x, out.resF
		ent.inv = inv
	})
	if ent.err != nil {
		return nil, ent.err
	}
	return ent.inv, nil
}

// inverseGraph builds one preconditioner dispatch for a dense matrix:
// input "v" [1, n] with |v_i| ≤ 1, output "z" = 2^k·X·v (one fp16 matmul,
// 2^k bringing ‖2^k·X‖∞ into [2¹², 2¹³) so that |z_i| < 2¹³). Then, in
// both modes, where B_s has a compensated form and the row equilibration
// lets the image through (imageOnDevice), z is divided by its largest
// entry on the device (the host receives the quotient as "z"), and the
// outputs "w", "w_lo" hold B_s·z as fp16 value and remainder, from the
// compensated product: the image the Arnoldi process needs comes from the
// device, so the host keeps only the bookkeeping. (Applying A on the host
// instead costs an n² float64 product per step, as much as the device's
// own work; it is what the program with "z" alone leaves to the host.)
// The modes differ in the Newton–Schulz products that computed X.
func inverseGraph(inv *nsInverse, compensated bool) (*dataflow.Graph, error) {
	n := inv.b.n
	k := 13 + pow2Exp(mat.Norm(inv.x, math.Inf(1)))
	data := make([]float64, n*n)
	for i := range n {
		for j := range n {
			data[i*n+j] = math.Ldexp(inv.x.At(i, j), k)
		}
	}
	g := dataflow.New()
	v := g.Input("v", dataflow.Shape{1, n})
	xw := g.Const("ns_inverse", dataflow.Shape{n, n}, data)
	z := g.MatMul(v, xw, false, true) // z_i = Σ_j X_ij·v_j
	if inv.b.compensatedSupported(inv.sigma) != nil || !inv.imageOnDevice() {
		g.Output("z", z)
		return g, g.Err()
	}
	comp, err := newCompensatedDense(inv.b, inv.sigma, gmresCompLimbs)
	if err != nil {
		return nil, err
	}
	peak := g.Maximum(g.ReduceMax(g.Abs(z), []int{1}, true), g.Scalar(0x1p-14))
	zs := g.Div(z, peak)
	q, qLo := comp.apply(g, g.Mul(zs, g.Scalar(gmresImageNu)), gmresImageNu)
	g.Output("z", zs)
	g.Output("w", q)
	g.Output("w_lo", qLo)
	return g, g.Err()
}
