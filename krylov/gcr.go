package krylov

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/shim"
)

// Compensated GMRES: the device explores, the host minimizes.
//
// Each dispatch runs m Arnoldi steps (modified Gram–Schmidt, fp16) from the
// normalized residual, applying A in compensated form, and returns the basis
// V and its images A·V to twice fp16's precision. The host keeps the last
// gcrVectors such pairs (V, W = A·V) in float64 and takes the minimal
// residual step over all of them, x += V·y with y = argmin‖r − W·y‖₂ (a
// truncated-SVD least-squares solve, since fp16 Arnoldi vectors of
// different cycles can be nearly dependent). With that memory the method is
// a GCR whose search space grows by m per dispatch (Eisenstat, Elman and
// Schultz 1983; Saad 2003 §6.9 and §9.4 on flexible variants): restarted
// GMRES(m) stagnates on problems where it does not.
const (
	gcrVectors = 256
	// gcrDrop: singular values of W below this fraction of the largest are
	// dropped. W = A·V carries relative errors near 1e-7 (the compensated
	// product's truncation), so a component along a singular value ε·σ₁ of
	// W is known only to about 1e-7/ε: below 1e-5 it would add noise.
	gcrDrop = 1e-5
)

func (p *gmresPlan) loopCompensated(run *run) error {
	st, res, a := p.set, run.res, run.a
	n := a.Dims()
	m := p.m
	nu := vectorNorm(n)
	r := make([]float64, n)
	in := make([]float32, n)
	var vs, ws [][]float64
	maxKeep := gcrVectors
	if n > 4096 {
		maxKeep = 64 // the host's least squares costs n·k² per dispatch
	}
	rnorm, err := run.initialResidual(r, "GMRES")
	if err != nil {
		return err
	}
	if res.Residual <= st.Tol { // X0 solves it: no program needed
		res.Converged = true
		return nil
	}
	t0 := time.Now()
	exe, err := p.gcrProgram(run.dev)
	res.Build += time.Since(t0)
	if err != nil {
		return err
	}
	names := outputNames(exe)
	best, since := res.Residual, 0
	for {
		switch {
		case res.Residual <= st.Tol:
			res.Converged = true
			return nil
		case !finite(res.Residual):
			return fmt.Errorf("krylov: GMRES(%d), compensated: residual became %g after %d dispatches (the operator's MulVecTo returned NaN or Inf, or x overflowed)%s: %w", m, res.Residual, res.Dispatches, bestNote(run), ErrNotConverged)
		case res.Dispatches >= st.MaxDispatches:
			return fmt.Errorf("krylov: GMRES(%d), compensated: relative residual %.3g after %d dispatches (MaxDispatches), Tol %.3g%s: %w", m, res.Residual, res.Dispatches, st.Tol, bestNote(run), ErrNotConverged)
		case since >= gmresStallWindow*2:
			return fmt.Errorf("krylov: GMRES(%d), compensated: relative residual %.3g did not halve in %d dispatches%s: %w", m, res.Residual, since, bestNote(run), ErrNotConverged)
		}
		toFloat32(in, r, nu/rnorm)
		td := time.Now()
		out, err := exe.Run([][]float32{in})
		res.Device += time.Since(td)
		res.charge(exe)
		if err != nil {
			if errors.Is(err, shim.ErrRange) {
				err = errors.Join(ErrNotConverged, err)
			}
			return fmt.Errorf("krylov: GMRES(%d), compensated, dispatch %d: %w", m, res.Dispatches+1, err)
		}
		res.Dispatches++
		res.Iterations += m
		scale := math.Ldexp(1, -p.sigma)
		o := outputs{names, out}
		dirs := append(roundFP16(in), o.get("dirs")...) // the first is the input
		adirs, adirsLo := o.get("adirs"), o.get("adirs_lo")
		for k := range m {
			v, w := make([]float64, n), make([]float64, n)
			for i := range n {
				v[i] = float64(dirs[k*n+i])
				w[i] = scale * (float64(adirs[k*n+i]) + float64(adirsLo[k*n+i]))
			}
			vs, ws = append(vs, v), append(ws, w)
		}
		if extra := len(vs) - maxKeep; extra > 0 {
			vs, ws = vs[extra:], ws[extra:]
		}
		y, err := minResidual(ws, r)
		if err != nil {
			return err
		}
		d := make([]float64, n)
		for k, yk := range y {
			for i, v := range vs[k] {
				d[i] += yk * v
			}
		}
		// Guard: take x + α·d with the α minimizing ‖r − α·A·d‖₂ in float64,
		// so that errors in W can slow a step but never make it increase
		// the residual. (b is scaled to a norm near 1, so these dots
		// neither under- nor overflow.)
		ad := make([]float64, n)
		a.MulVecTo(ad, d)
		if add := dot(ad, ad); add > 0 {
			alpha := dot(r, ad) / add
			for i := range d {
				res.X[i] += alpha * d[i]
			}
		}
		rnorm = residual(r, a, res.X, run.b)
		run.record(rnorm / run.bnorm)
		if res.Residual < best/2 {
			best, since = res.Residual, 0
		} else {
			since++
		}
	}
}

// minResidual returns argmin_y ‖r − W·y‖₂ for the columns W = ws, by a
// truncated SVD.
func minResidual(ws [][]float64, r []float64) ([]float64, error) {
	n, k := len(r), len(ws)
	wm := mat.NewDense(n, k, nil)
	for j, w := range ws {
		for i, v := range w {
			wm.Set(i, j, v)
		}
	}
	var svd mat.SVD
	if !svd.Factorize(wm, mat.SVDThin) {
		return nil, fmt.Errorf("krylov: the SVD of the search directions' images failed: %w", ErrNotConverged)
	}
	sv := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	rv := mat.NewVecDense(n, r)
	y := make([]float64, k)
	for j, s := range sv {
		if !(s > gcrDrop*sv[0]) {
			break
		}
		c := mat.Dot(u.ColView(j), rv) / s
		for i := range k {
			y[i] += c * v.At(i, j)
		}
	}
	return y, nil
}

// gcrProgram returns the compiled compensated cycle.
func (p *gmresPlan) gcrProgram(dev shim.Device) (*compiled, error) {
	key := programKey{solver: "gcr", dev: dev, op: p.dop, steps: p.m, sigma: p.sigma, compensated: true}
	return programs.get(key, fmt.Sprintf("compensated GMRES program for n = %d", p.dop.Dims()), func() (*dataflow.Graph, error) {
		return p.graph(0)
	})
}

// gcrGraph runs m Arnoldi steps with modified Gram–Schmidt from the input v
// (norm ν) and returns the basis vectors (norm ν each) and their images
// q = A_s·v as fp16 values plus remainders.
func gcrGraph(n, m int, nu float64, apply applier) (*dataflow.Graph, error) {
	g := dataflow.New()
	v := g.Input("v", dataflow.Shape{1, n})
	floor := g.Scalar(0x1p-14)
	basis := []dataflow.Value{v}
	var qs, qLos []dataflow.Value
	for j := range m {
		q, qLo := apply(g, basis[j])
		if j == 0 {
			if err := checkApplyShape(g, q, n); err != nil {
				return nil, err
			}
		}
		qs, qLos = append(qs, q), append(qLos, qLo)
		if j == m-1 {
			break
		}
		w := q
		for _, vi := range basis {
			h := g.Mul(g.MatMul(w, vi, false, true), g.Scalar(1/(nu*nu)))
			w = g.Sub(w, g.Mul(h, vi))
		}
		wS, _ := maxScale(g, w)
		ww := g.Maximum(g.MatMul(wS, wS, false, true), floor)
		basis = append(basis, g.Mul(wS, g.Mul(g.Pow(ww, g.Scalar(-0.5)), g.Scalar(nu))))
	}
	if m > 1 { // the first direction is the input: the host has it
		g.Output("dirs", concatTree(g, 0, basis[1:]))
	}
	g.Output("adirs", concatTree(g, 0, qs))
	g.Output("adirs_lo", concatTree(g, 0, qLos))
	return g, nil
}
