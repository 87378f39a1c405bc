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

func gmresCompensated(a Operator, b []float64, st Settings, dev shim.Device, res Result, start time.Time) (Result, error) {
	n := a.Dims()
	m := min(st.Restart, n)
	sigma := pow2Exp(a.NormInf())
	nu := vectorNorm(n)
	bnorm := norm2(b)
	t0 := time.Now()
	exe, err := gcrProgram(dev, a, m, sigma, nu)
	res.Build += time.Since(t0)
	if err != nil {
		return res, err
	}
	r := make([]float64, n)
	in := make([]float32, n)
	var vs, ws [][]float64
	maxKeep := gcrVectors
	if n > 4096 {
		maxKeep = 64 // the host's least squares costs n·k² per dispatch
	}
	rnorm := residual(r, a, res.X, b)
	res.Residual = rnorm / bnorm
	res.History = append(res.History, res.Residual)
	best, since := res.Residual, 0
	for res.Residual > st.Tol {
		if res.Dispatches >= st.MaxDispatches {
			return res, fmt.Errorf("krylov: GMRES(%d), compensated: relative residual %.3g after %d dispatches (MaxDispatches), Tol %.3g: %w", m, res.Residual, res.Dispatches, st.Tol, ErrNotConverged)
		}
		toFloat32(in, r, nu/rnorm)
		td := time.Now()
		out, err := exe.Run([][]float32{in})
		res.Device += time.Since(td)
		if err != nil {
			if errors.Is(err, shim.ErrRange) {
				err = errors.Join(ErrNotConverged, err)
			}
			return res, fmt.Errorf("krylov: GMRES(%d), compensated, dispatch %d: %w", m, res.Dispatches+1, err)
		}
		res.Dispatches++
		res.Iterations += m
		th := time.Now()
		scale := math.Ldexp(1, -sigma)
		for k := range m {
			v, w := make([]float64, n), make([]float64, n)
			for i := range n {
				v[i] = float64(out[0][k*n+i])
				w[i] = scale * (float64(out[1][k*n+i]) + float64(out[2][k*n+i]))
			}
			vs, ws = append(vs, v), append(ws, w)
		}
		if extra := len(vs) - maxKeep; extra > 0 {
			vs, ws = vs[extra:], ws[extra:]
		}
		y, err := minResidual(ws, r)
		if err != nil {
			return res, err
		}
		d := make([]float64, n)
		for k, yk := range y {
			for i, v := range vs[k] {
				d[i] += yk * v
			}
		}
		// Guard: take x + α·d with the α minimizing ‖r − α·A·d‖₂ in float64,
		// so that errors in W can slow a step but never make it increase
		// the residual.
		ad := make([]float64, n)
		a.MulVecTo(ad, d)
		if add := dot(ad, ad); add > 0 {
			alpha := dot(r, ad) / add
			for i := range d {
				res.X[i] += alpha * d[i]
			}
		}
		rnorm = residual(r, a, res.X, b)
		res.Residual = rnorm / bnorm
		res.History = append(res.History, res.Residual)
		res.Host += time.Since(th)
		if st.Trace != nil {
			st.Trace(Step{Dispatch: res.Dispatches, Iterations: res.Iterations, Residual: res.Residual, Elapsed: time.Since(start)})
		}
		if math.IsNaN(res.Residual) {
			return res, fmt.Errorf("krylov: GMRES(%d), compensated: residual became NaN: %w", m, ErrNotConverged)
		}
		if res.Residual < best/2 {
			best, since = res.Residual, 0
		} else if since++; since >= gmresStallWindow*2 {
			return res, fmt.Errorf("krylov: GMRES(%d), compensated: relative residual %.3g did not halve in %d dispatches: %w", m, res.Residual, since, ErrNotConverged)
		}
	}
	res.Converged = true
	return res, nil
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

type gcrKey struct {
	dev   shim.Device
	op    Operator
	m     int
	sigma int
}

var gcrPrograms sync.Map // gcrKey → shim.Executable

func gcrProgram(dev shim.Device, a Operator, m, sigma int, nu float64) (shim.Executable, error) {
	key := gcrKey{dev, a, m, sigma}
	if exe, ok := gcrPrograms.Load(key); ok {
		return exe.(shim.Executable), nil
	}
	apply, err := compensatedApplier(a, sigma, nu)
	if err != nil {
		return nil, err
	}
	exe, err := build(dev, gcrGraph(a.Dims(), m, nu, apply), fmt.Sprintf("compensated GMRES program for n = %d", a.Dims()))
	if err != nil {
		return nil, err
	}
	gcrPrograms.Store(key, exe)
	return exe, nil
}

// gcrGraph runs m Arnoldi steps with modified Gram–Schmidt from the input v
// (norm ν) and returns the basis vectors (norm ν each) and their images
// q = A_s·v as fp16 values plus remainders.
func gcrGraph(n, m int, nu float64, apply applier) *dataflow.Graph {
	g := dataflow.New()
	v := g.Input("v", dataflow.Shape{1, n})
	floor := g.Scalar(0x1p-14)
	basis := []dataflow.Value{v}
	var qs, qLos []dataflow.Value
	for j := range m {
		q, qLo := apply(g, basis[j])
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
	g.Output("dirs", g.Concat(0, basis...))
	g.Output("adirs", g.Concat(0, qs...))
	g.Output("adirs_lo", g.Concat(0, qLos...))
	return g
}
