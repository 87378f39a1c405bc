package fft

import (
	"fmt"
	"math"
	"math/bits"
	"math/cmplx"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// Settings configure a transform. A nil *Settings means the defaults, and
// every zero field means its default.
type Settings struct {
	// Device runs the transforms; nil means shim.Open(""), opened once per
	// process and shared.
	Device shim.Device
	// Precision is FP16 (the default: one pass, fp16-class error) or
	// Compensated (limb-split input and constants, exact products, (hi, lo)
	// outputs added on the host in float64). Float64 is ErrUnsupported: a
	// transform has no residual to refine against.
	Precision precision.Mode
	// Stats, if not nil, receives what a package function's call did (the
	// Plan methods ignore it: see Plan.Stats).
	Stats *Stats
}

// resolve fills in the defaults of s.
func resolve(what string, s *Settings) (shim.Device, precision.Mode, error) {
	var dev shim.Device
	mode := precision.FP16
	if s != nil {
		dev = s.Device
		if s.Precision != 0 {
			mode = s.Precision
		}
	}
	switch mode {
	case precision.FP16, precision.Compensated:
	case precision.Float64:
		return nil, 0, fmt.Errorf("fft: %s: precision mode Float64 is not offered (a transform has no residual to refine); use Compensated (≤ 1e-6 relative): %w", what, ErrUnsupported)
	default:
		return nil, 0, fmt.Errorf("fft: %s: unknown precision mode %v; use FP16 or Compensated: %w", what, mode, ErrUnsupported)
	}
	if dev == nil {
		d, err := shim.Shared()
		if err != nil {
			return nil, 0, fmt.Errorf("fft: %s: opening the default device: %w", what, err)
		}
		dev = d
	}
	return dev, mode, nil
}

// Plan is a transform of a fixed length (or 2-D shape) on one device in
// one mode. Its programs are compiled once, one per batch size: Forward
// and Inverse share the single-signal program (the inverse transform is
// conj(DFT(conj(y)))/n, exact on the host), ForwardMany and InverseMany
// the program for their batch. A Plan is safe for concurrent use.
type Plan struct {
	dims []int
	n    int
	dev  shim.Device
	mode precision.Mode

	mu     sync.Mutex
	closed bool
	progs  map[int]*program // by batch size
	stats  Stats            // every call so far, guarded by mu
}

// Stats returns what the plan's calls have cost so far, the compile of
// each program charged to the first call that ran it.
func (p *Plan) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// NewPlan compiles the n-point complex transform. n must be a product of
// 2, 3 and 5 no larger than MaxLen (ErrUnsupported otherwise, naming the
// nearest supported lengths); n < 1 is ErrShape.
func NewPlan(n int, s *Settings) (*Plan, error) {
	if err := checkLen("NewPlan", n); err != nil {
		return nil, err
	}
	return newPlan("NewPlan", []int{n}, s)
}

// NewPlan2D compiles the rows×cols transform of row-major data. Each
// dimension must be a supported length and rows·cols at most MaxLen.
func NewPlan2D(rows, cols int, s *Settings) (*Plan, error) {
	if err := check2D("NewPlan2D", rows, cols); err != nil {
		return nil, err
	}
	return newPlan("NewPlan2D", []int{rows, cols}, s)
}

func check2D(what string, rows, cols int) error {
	if err := checkLen(what+" rows", rows); err != nil {
		return err
	}
	if err := checkLen(what+" cols", cols); err != nil {
		return err
	}
	if rows*cols > MaxLen {
		return fmt.Errorf("fft: %s: %d×%d = %d points exceeds the largest supported transform of %d points: %w", what, rows, cols, rows*cols, MaxLen, ErrUnsupported)
	}
	return nil
}

func newPlan(what string, dims []int, s *Settings) (*Plan, error) {
	dev, mode, err := resolve(what, s)
	if err != nil {
		return nil, err
	}
	n := 1
	for _, d := range dims {
		n *= d
	}
	p := &Plan{dims: dims, n: n, dev: dev, mode: mode, progs: map[int]*program{}}
	if _, err := p.program(1); err != nil {
		return nil, err
	}
	return p, nil
}

// program returns the compiled program for batch signals.
func (p *Plan) program(batch int) (*program, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("fft: the plan is closed; make a new one with NewPlan or NewPlan2D: %w", shim.ErrClosed)
	}
	if pr, ok := p.progs[batch]; ok {
		return pr, nil
	}
	sc, block := schemeFor(p.mode, p.dev)
	lay := newLayout(p.dims, batch, block)
	if sc != nil && sc.exact {
		sc = sc.forLayout(lay)
	}
	pr, err := newProgram(p.dev, lay, -1, p.mode, sc)
	if err != nil {
		return nil, err
	}
	p.progs[batch] = pr
	return pr, nil
}

// schemeFor picks the arithmetic of mode's programs on dev and the largest
// block it stages with: the one-pass FP16 program (nil) or Compensated's
// 6-bit digits on the wide accumulator the engine has, and exact 3-bit
// digit arithmetic in both modes where the device adds a matmul's products
// in an fp16 running sum (the simulator's pessimistic "sim-narrow" model).
func schemeFor(mode precision.Mode, dev shim.Device) (*digitScheme, int) {
	switch {
	case narrowAccumulator(dev) && mode == precision.Compensated:
		return &compNarrow, compNarrow.block
	case narrowAccumulator(dev):
		return &fp16Narrow, fp16Narrow.block
	case mode == precision.Compensated:
		return &compWide, compWide.block
	}
	return nil, MaxBlock
}

// narrowAccumulator reports whether dev adds the products of a matmul in an
// fp16 running sum, as its Info says.
func narrowAccumulator(dev shim.Device) bool {
	in := dev.Info()
	return in.Name == "sim-narrow" || strings.Contains(in.Numerics, "narrow accumulation")
}

// Len is the number of points the plan transforms (rows·cols for 2-D).
func (p *Plan) Len() int { return p.n }

// Mode is the precision mode in use (never the zero Mode).
func (p *Plan) Mode() precision.Mode { return p.mode }

// Device is the device the plan runs on.
func (p *Plan) Device() shim.Device { return p.dev }

// Forward returns the unnormalized DFT X_k = Σ_j x_j·exp(−2πi·jk/n) (for
// 2-D plans the 2-D DFT of row-major data), as gonum's
// fourier.CmplxFFT.Coefficients computes it, with one dispatch. len(x)
// must be Len (ErrShape); NaN, ±Inf or a transform beyond float64 is
// ErrRange; a device result that fails the host's check is ErrDevice. x is
// not modified.
func (p *Plan) Forward(x []complex128) ([]complex128, error) {
	ys, err := p.transform("Plan.Forward", [][]complex128{x}, nil, false, nil)
	if err != nil {
		return nil, err
	}
	return ys[0], nil
}

// Inverse returns the inverse DFT x_j = (1/n)·Σ_k X_k·exp(+2πi·jk/n), so
// that Inverse(Forward(x)) ≈ x, with one dispatch. Errors as Forward.
func (p *Plan) Inverse(y []complex128) ([]complex128, error) {
	xs, err := p.transform("Plan.Inverse", [][]complex128{y}, nil, true, nil)
	if err != nil {
		return nil, err
	}
	return xs[0], nil
}

// ForwardTo is Forward writing the transform into dst, which it returns, as
// gonum's fourier.CmplxFFT.Coefficients does: a caller that transforms
// again and again allocates nothing for the result. dst may be x (a
// transform in place); a nil dst is allocated; a dst of another length
// than Len is ErrShape. On an error dst's contents are unspecified.
func (p *Plan) ForwardTo(dst, x []complex128) ([]complex128, error) {
	return p.transformTo("Plan.ForwardTo", dst, x, false)
}

// InverseTo is Inverse writing into dst, as ForwardTo.
func (p *Plan) InverseTo(dst, y []complex128) ([]complex128, error) {
	return p.transformTo("Plan.InverseTo", dst, y, true)
}

func (p *Plan) transformTo(what string, dst, x []complex128, inverse bool) ([]complex128, error) {
	if dst == nil {
		dst = make([]complex128, p.n)
	}
	if len(dst) != p.n {
		return nil, fmt.Errorf("fft: %s: dst has %d points, the plan transforms %d: %w", what, len(dst), p.n, ErrShape)
	}
	ys, err := p.transform(what, [][]complex128{x}, [][]complex128{dst}, inverse, nil)
	if err != nil {
		return nil, err
	}
	return ys[0], nil
}

// ForwardMany transforms len(xs) signals of length Len in one dispatch; the
// result equals len(xs) calls of Forward, to rounding (each signal is
// scaled on its own). An empty xs or a signal of the wrong length is
// ErrShape.
func (p *Plan) ForwardMany(xs [][]complex128) ([][]complex128, error) {
	return p.transform("Plan.ForwardMany", xs, nil, false, nil)
}

// InverseMany is the inverse of ForwardMany, in one dispatch.
func (p *Plan) InverseMany(ys [][]complex128) ([][]complex128, error) {
	return p.transform("Plan.InverseMany", ys, nil, true, nil)
}

// transform runs xs through the plan's program for their batch, into
// into's slices when into is not nil; what the call cost is added to the
// plan's Stats and, if call is not nil, stored in *call.
func (p *Plan) transform(what string, xs, into [][]complex128, inverse bool, call *Stats) ([][]complex128, error) {
	start := time.Now()
	var st Stats
	// dev is the call's time that is not its own host work: the device's
	// runs, waiting for another call's run, and building a program (which
	// ModeledCompile models; the package functions build theirs before
	// calling transform).
	var dev time.Duration
	defer func() {
		st.Host = max(0, time.Since(start)-dev)
		st.finish()
		p.mu.Lock()
		p.stats.add(st)
		p.mu.Unlock()
		if call != nil {
			*call = st
		}
	}()
	if len(xs) == 0 {
		return nil, fmt.Errorf("fft: %s: no signals: %w", what, ErrShape)
	}
	for i, x := range xs {
		if len(x) != p.n {
			return nil, fmt.Errorf("fft: %s: signal %d has %d points, the plan transforms %d: %w", what, i, len(x), p.n, ErrShape)
		}
	}
	built := time.Now()
	pr, err := p.program(len(xs))
	dev += time.Since(built)
	if err != nil {
		return nil, err
	}
	in, post := xs, 0
	if inverse {
		in = make([][]complex128, len(xs))
		for i, x := range xs {
			in[i] = conj(x)
		}
		// The device's transform comes back divided by 2^a ≥ n, which
		// keeps it below the input's largest modulus (an unnormalized
		// transform of a spectrum near float64's limit would overflow
		// where the inverse does not), and is then multiplied by
		// 2^a/n ∈ [1, 2): exactly 1 for a power-of-two n.
		a := bits.Len(uint(p.n - 1)) // 2^a ≥ n
		post = -a
	}
	ys, err := pr.run(what, in, into, post, &st, &dev)
	if err != nil {
		return nil, err
	}
	if inverse {
		c := math.Ldexp(1, -post) / float64(p.n)
		for b, y := range ys {
			for i, v := range y {
				y[i] = complex(real(v)*c, -imag(v)*c)
				if cmplx.IsInf(y[i]) {
					return nil, fmt.Errorf("fft: %s: signal %d: value %d is %w", what, b, i, roundedPastMax("inverse", y[i]))
				}
			}
		}
	}
	return ys, nil
}

func conj(x []complex128) []complex128 {
	y := make([]complex128, len(x))
	for i, v := range x {
		y[i] = complex(real(v), -imag(v))
	}
	return y
}

// Close releases the plan's programs (the device's cache may keep them);
// later transforms with the plan are errors wrapping shim.ErrClosed.
func (p *Plan) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var first error
	for k, pr := range p.progs {
		if err := pr.exe.Close(); err != nil && first == nil {
			first = err
		}
		delete(p.progs, k)
	}
	return first
}

// The package functions keep their plans here, keyed by device, shape and
// mode, so that repeated calls compile nothing.
const maxCachedPlans = 64

type planKey struct {
	dev        shim.Device
	rows, cols int
	mode       precision.Mode
}

var (
	cacheMu sync.Mutex
	cache   = map[planKey]*Plan{}
	order   []planKey
)

// cachedPlan returns the package's plan for dims on the resolved device,
// and a release function to call after using it. Devices are told apart by
// identity, so only pointer devices (what shim.Open returns) are cached;
// a plan for any other device is built for the one call and closed by
// release. An evicted plan is dropped, not closed: a caller may still be
// running it.
func cachedPlan(what string, dims []int, s *Settings) (*Plan, func(), error) {
	dev, mode, err := resolve(what, s)
	if err != nil {
		return nil, nil, err
	}
	settings := &Settings{Device: dev, Precision: mode}
	if reflect.ValueOf(dev).Kind() != reflect.Pointer {
		p, err := newPlan(what, dims, settings)
		if err != nil {
			return nil, nil, err
		}
		return p, func() { _ = p.Close() }, nil
	}
	k := planKey{dev: dev, rows: dims[0], cols: 0, mode: mode}
	if len(dims) == 2 {
		k.cols = dims[1]
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if p, ok := cache[k]; ok {
		return p, func() {}, nil
	}
	p, err := newPlan(what, dims, settings)
	if err != nil {
		return nil, nil, err
	}
	if len(order) >= maxCachedPlans {
		delete(cache, order[0])
		order = order[1:]
	}
	cache[k] = p
	order = append(order, k)
	return p, func() {}, nil
}

// Forward returns the unnormalized DFT of x, X_k = Σ_j x_j·exp(−2πi·jk/n),
// the same sign and scaling as gonum's fourier.CmplxFFT.Coefficients, with
// one dispatch of a plan kept in a package cache. See Plan.Forward for the
// errors and the package documentation for the accuracy of each mode.
func Forward(x []complex128, s *Settings) ([]complex128, error) {
	call := startStats(s)
	p, release, err := plan1D("Forward", len(x), s)
	return transformOnce("Forward", p, release, err, x, false, call)
}

// startStats is where a package function stores what its call cost:
// s.Stats, or nil. It zeroes it at the start of the call, so that a call
// that fails before it transforms reports nothing done rather than the
// previous call's costs.
func startStats(s *Settings) *Stats {
	if s == nil || s.Stats == nil {
		return nil
	}
	*s.Stats = Stats{}
	return s.Stats
}

// transformOnce is the rest of a package function's call once it has
// looked up its plan (p, release and the lookup's error): one transform of
// x, its cost stored in call.
func transformOnce(what string, p *Plan, release func(), err error, x []complex128, inverse bool, call *Stats) ([]complex128, error) {
	if err != nil {
		return nil, err
	}
	defer release()
	ys, err := p.transform(what, [][]complex128{x}, nil, inverse, call)
	if err != nil {
		return nil, err
	}
	return ys[0], nil
}

// Inverse returns the inverse DFT of y normalized by 1/n, so that
// Inverse(Forward(x)) ≈ x.
func Inverse(y []complex128, s *Settings) ([]complex128, error) {
	call := startStats(s)
	p, release, err := plan1D("Inverse", len(y), s)
	return transformOnce("Inverse", p, release, err, y, true, call)
}

// RealForward returns the n/2+1 coefficients X_0 … X_⌊n/2⌋ of the DFT of
// the real sequence x, as gonum's fourier.FFT.Coefficients does (the rest
// follow from X_(n−k) = conj(X_k)). The device transforms x as a complex
// sequence with zero imaginary parts.
func RealForward(x []float64, s *Settings) ([]complex128, error) {
	startStats(s) // zeroed, for a call that fails here
	if err := checkLen("RealForward", len(x)); err != nil {
		return nil, err
	}
	c := make([]complex128, len(x))
	for i, v := range x {
		c[i] = complex(v, 0)
	}
	y, err := Forward(c, s)
	if err != nil {
		return nil, err
	}
	return y[:len(x)/2+1], nil
}

// RealInverse returns the real sequence of length n whose RealForward
// coefficients are c, normalized by 1/n, so RealInverse(RealForward(x),
// len(x)) ≈ x. len(c) must be n/2+1 (ErrShape); the imaginary parts of
// c[0] and, for even n, c[n/2] are ignored, as gonum's FFT.Sequence does.
func RealInverse(c []complex128, n int, s *Settings) ([]float64, error) {
	startStats(s) // zeroed, for a call that fails here
	if err := checkLen("RealInverse", n); err != nil {
		return nil, err
	}
	if len(c) != n/2+1 {
		return nil, fmt.Errorf("fft: RealInverse: %d coefficients for n = %d, want n/2+1 = %d: %w", len(c), n, n/2+1, ErrShape)
	}
	full := make([]complex128, n)
	for k := range n {
		switch {
		case k == 0 || (n%2 == 0 && k == n/2):
			full[k] = complex(real(c[k]), 0)
		case k <= n/2:
			full[k] = c[k]
		default:
			full[k] = complex(real(c[n-k]), -imag(c[n-k]))
		}
	}
	y, err := Inverse(full, s)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for i, v := range y {
		out[i] = real(v)
	}
	return out, nil
}

// Forward2D returns the unnormalized 2-D DFT of the row-major rows×cols
// array x, X[k, l] = Σ_j Σ_m x[j, m]·exp(−2πi·(jk/rows + ml/cols)), in one
// dispatch. len(x) must be rows·cols (ErrShape); each dimension must be a
// supported length and rows·cols ≤ MaxLen (ErrUnsupported).
func Forward2D(x []complex128, rows, cols int, s *Settings) ([]complex128, error) {
	call := startStats(s)
	p, release, err := plan2D("Forward2D", len(x), rows, cols, s)
	return transformOnce("Forward2D", p, release, err, x, false, call)
}

// Inverse2D is the inverse of Forward2D, normalized by 1/(rows·cols).
func Inverse2D(y []complex128, rows, cols int, s *Settings) ([]complex128, error) {
	call := startStats(s)
	p, release, err := plan2D("Inverse2D", len(y), rows, cols, s)
	return transformOnce("Inverse2D", p, release, err, y, true, call)
}

// plan1D checks n and returns the package's plan for it (see cachedPlan).
func plan1D(what string, n int, s *Settings) (*Plan, func(), error) {
	if err := checkLen(what, n); err != nil {
		return nil, nil, err
	}
	return cachedPlan(what, []int{n}, s)
}

// plan2D checks the shape and returns the package's plan for it.
func plan2D(what string, n, rows, cols int, s *Settings) (*Plan, func(), error) {
	if err := check2D(what, rows, cols); err != nil {
		return nil, nil, err
	}
	if n != rows*cols {
		return nil, nil, fmt.Errorf("fft: %s: %d values for a %d×%d array: %w", what, n, rows, cols, ErrShape)
	}
	return cachedPlan(what, []int{rows, cols}, s)
}
