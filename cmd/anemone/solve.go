package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/anemone-go/anemone/krylov"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// cmdSolve solves a model problem on the device and prints the host's
// float64 residual after every dispatch.
//
//	anemone solve poisson  [-n 128] [-unroll 16] [-tol 1e-10]   CG (flexible, device Chebyshev polynomial)
//	anemone solve convdiff [-n 64] [-pe 100] [-restart 30]       GMRES (flexible, device polynomial)
func cmdSolve(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		return fmt.Errorf("%w: solve: name a problem (poisson, convdiff)", errUsage)
	}
	problem := args[0]
	if problem != "poisson" && problem != "convdiff" {
		return fmt.Errorf("%w: solve: unknown problem %q (poisson, convdiff)", errUsage, problem)
	}
	fs := newFlags("solve " + problem)
	name := fs.String("device", "", "device: ane, sim or sim-narrow")
	n := fs.Int("n", 64, "interior grid points per side")
	tol := fs.Float64("tol", 1e-10, "relative residual to reach (float64, host)")
	unroll := fs.Int("unroll", 0, "CG: steps of the device polynomial per dispatch (0: default 16; unused with FastDiagonalization)")
	restart := fs.Int("restart", 30, "GMRES restart length (at most 32; one dispatch per step)")
	pe := fs.Float64("pe", 100, "Péclet number (convdiff)")
	maxd := fs.Int("max-dispatches", 0, "dispatch budget (0: default)")
	mode := fs.String("precision", "fp16", "fp16 or compensated")
	pre := fs.String("precond", "default", "poisson: CG's preconditioner: default (FastDiagonalization for n ≤ 1024, the device polynomial beyond), polynomial or fd")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if *n < 1 || !(*tol > 0) || *unroll < 0 || *restart < 1 || *maxd < 0 {
		return fmt.Errorf("%w: solve: -n, -tol, -restart must be positive, -unroll and -max-dispatches not negative", errUsage)
	}
	prec := precision.FP16
	switch *mode {
	case "fp16":
	case "compensated":
		prec = precision.Compensated
	default:
		return fmt.Errorf("%w: solve: -precision %q (fp16 or compensated)", errUsage, *mode)
	}
	dev, err := shim.Open(*name)
	if err != nil {
		return err
	}
	defer dev.Close()

	h := float64(*n + 1) // 1/h
	var c [3][3]float64
	switch problem {
	case "poisson": // −Δu: the 5-point Laplacian scaled by 1/h²
		c = [3][3]float64{{0, -h * h, 0}, {-h * h, 4 * h * h, -h * h}, {0, -h * h, 0}}
	case "convdiff": // −Δu + Pe·u_x, first-order upwind in x
		c = [3][3]float64{{0, -h * h, 0}, {-h*h - *pe*h, 4*h*h + *pe*h, -h * h}, {0, -h * h, 0}}
	}
	op, err := krylov.Stencil2D(*n, *n, c)
	if err != nil {
		return err
	}
	b := make([]float64, *n**n)
	for i := range b {
		b[i] = 1
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "dispatch\titerations\trel. residual\telapsed\t\n")
	set := &krylov.Settings{Device: dev, Tol: *tol, Unroll: *unroll, Restart: *restart, MaxDispatches: *maxd, Precision: prec,
		Trace: func(s krylov.Step) {
			fmt.Fprintf(tw, "%d\t%d\t%.3e\t%v\t\n", s.Dispatch, s.Iterations, s.Residual, s.Elapsed.Round(time.Millisecond))
		}}
	var res krylov.Result
	method := "CG"
	if *pre != "default" && problem != "poisson" {
		return fmt.Errorf("%w: solve: -precond is for poisson (CG); GMRES takes no preconditioner", errUsage)
	}
	if problem == "poisson" {
		switch *pre {
		case "default":
			if *n <= krylov.MaxSpectralSide {
				method = "CG + FastDiagonalization (default)"
			} else {
				method = fmt.Sprintf("CG, device polynomial (default past %d²)", krylov.MaxSpectralSide)
			}
		case "fd":
			if set.Precond, err = krylov.FastDiagonalization(op); err != nil {
				return err
			}
			method = "CG + FastDiagonalization"
		case "polynomial":
			if set.Precond, err = krylov.Polynomial(op); err != nil {
				return err
			}
			method = "CG, device polynomial"
		default:
			return fmt.Errorf("%w: solve: -precond %q (default, polynomial or fd)", errUsage, *pre)
		}
		res, err = krylov.CG(op, b, set)
	} else {
		method = fmt.Sprintf("GMRES(%d)", *restart)
		res, err = krylov.GMRES(op, b, set)
	}
	if ferr := tw.Flush(); ferr != nil {
		return ferr
	}
	fmt.Fprintf(w, "%s %s %d×%d on %s: converged %v, relative residual %.3e after %d dispatches (%d iterations)\n",
		method, problem, *n, *n, dev.Info().Name, res.Converged, res.Residual, res.Dispatches, res.Iterations)
	fmt.Fprintf(w, "time: build %v, device %v, host %v\n", res.Build.Round(time.Millisecond), res.Device.Round(time.Millisecond), res.Host.Round(time.Millisecond))
	if res.Dispatches > 0 {
		family := dev.Info().Target.Name
		if family == "sim" {
			family = "ane-m1" // the simulator's programs are priced as the slowest family
		}
		fmt.Fprintf(w, "modeled engine (%s): %v for %d runs, %.1f MB moved, %.1f Mflop; %.0f device bytes per unknown per iteration\n",
			family, res.ModeledTime.Round(time.Microsecond), res.Dispatches+res.Retries, float64(res.DeviceBytes)/1e6, float64(res.DeviceFlops)/1e6,
			float64(res.DeviceBytes)/float64(len(b))/float64(max(res.Iterations, 1)))
	}
	return err // ErrNotConverged too: the exit code says the solve failed
}
