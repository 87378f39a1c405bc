package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/anemone-go/anemone/krylov"
	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// cmdSolve solves a model problem on the device and prints the host's
// float64 residual after every dispatch, as it goes.
//
//	anemone solve poisson  [-n 64] [-precond default|fd|polynomial] [-tol 1e-10]   CG (flexible; FastDiagonalization up to 1024², else the device polynomial)
//	anemone solve convdiff [-n 64] [-pe 100] [-restart 30]                         GMRES (flexible, device polynomial)
//
// Both take b = 1. convdiff is −Δu + Pe·u_x with first-order upwinding for
// a wind in +x, so -pe must be finite and not negative; it is not
// reference.ConvectionDiffusion2D, whose wind is diagonal.
//
// A size whose memory estimate (solveBytes) exceeds what the machine has
// (availableMemory) is refused before anything is allocated; a solve that
// fails before its first dispatch (a setting out of range, a program the
// device cannot run) prints its error and no summary.
func cmdSolve(args []string, w io.Writer) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' && !isHelp(args[0]) {
		return fmt.Errorf("%w: solve: name a problem (poisson, convdiff)", errUsage)
	}
	problem, rest := args[0], args[1:]
	fsName := "solve " + problem
	if isHelp(problem) { // "solve -h": both problems take the same flags
		fsName, rest = "solve", args
	} else if problem != "poisson" && problem != "convdiff" {
		return fmt.Errorf("%w: solve: unknown problem %q (poisson, convdiff)", errUsage, problem)
	}
	fs := newFlags(fsName)
	name := fs.String("device", "", deviceHelp)
	n := fs.Int("n", 64, "interior grid points per side")
	tol := fs.Float64("tol", 1e-10, "relative residual to reach (float64, host)")
	unroll := fs.Int("unroll", 0, "CG: steps of the device polynomial per dispatch (0: default 16; unused with FastDiagonalization)")
	restart := fs.Int("restart", 30, "GMRES restart length (at most 32; one dispatch per step)")
	pe := fs.Float64("pe", 100, "Péclet number (convdiff)")
	maxd := fs.Int("max-dispatches", 0, "dispatch budget (0: default)")
	mode := fs.String("precision", "fp16", "fp16 or compensated")
	pre := fs.String("precond", "default", "poisson: CG's preconditioner: default (FastDiagonalization for n ≤ 1024, the device polynomial beyond), polynomial or fd")
	if err := parse(fs, rest); err != nil {
		return err
	}
	switch {
	case *n < 1:
		return fmt.Errorf("%w: solve: -n %d: the grid side must be positive", errUsage, *n)
	case !(*tol > 0 && *tol < 1):
		return fmt.Errorf("%w: solve: -tol %v: the relative residual to reach must be above 0 and below 1 (x = 0 already has 1)", errUsage, *tol)
	case *unroll < 0 || *unroll > krylov.MaxUnroll:
		return fmt.Errorf("%w: solve: -unroll %d: use 1 … %d device steps per dispatch, or 0 for the default", errUsage, *unroll, krylov.MaxUnroll)
	case *restart < 1 || *restart > krylov.MaxRestart:
		return fmt.Errorf("%w: solve: -restart %d: use 1 … %d GMRES steps per cycle", errUsage, *restart, krylov.MaxRestart)
	case *maxd < 0:
		return fmt.Errorf("%w: solve: -max-dispatches %d: must not be negative (0: the default)", errUsage, *maxd)
	case !(*pe >= 0) || math.IsInf(*pe, 1):
		return fmt.Errorf("%w: solve: -pe %v: the Péclet number must be finite and not negative (the wind blows in +x)", errUsage, *pe)
	}
	unknowns := float64(*n) * float64(*n)
	need := solveBytes(problem, unknowns, *restart)
	avail, source := memoryAvailable()
	if need > avail {
		return fmt.Errorf("solve: %s -n %d has %.0f unknowns, whose memory estimate is %.0f bytes, more than the %.0f bytes available (%s): use -n %d or less",
			problem, *n, unknowns, need, avail, source, maxSide(problem, avail, *restart))
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
	// One line per dispatch, written as it happens (the table's header
	// with the first), so a long solve shows its progress.
	header := false
	set := &krylov.Settings{Device: dev, Tol: *tol, Unroll: *unroll, Restart: *restart, MaxDispatches: *maxd, Precision: prec,
		Trace: func(s krylov.Step) {
			if !header {
				fmt.Fprintf(w, "%9s %11s %14s %10s\n", "dispatch", "iterations", "rel. residual", "elapsed")
				header = true
			}
			fmt.Fprintf(w, "%9d %11d %14.3e %10v\n", s.Dispatch, s.Iterations, s.Residual, s.Elapsed.Round(time.Millisecond))
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
	} else {
		method = fmt.Sprintf("GMRES(%d)", *restart)
	}
	fmt.Fprintf(w, "solving: %s %s %d×%d on %s, %.0f unknowns, memory estimate %.0f bytes of %.0f available (%s)\n",
		method, problem, *n, *n, dev.Info().Name, unknowns, need, avail, source)
	if problem == "poisson" {
		res, err = krylov.CG(op, b, set)
	} else {
		res, err = krylov.GMRES(op, b, set)
	}
	if err != nil && res.Dispatches == 0 {
		return err // the solve never started: no summary to give
	}
	fmt.Fprintf(w, "%s %s %d×%d on %s: converged %v, relative residual %.3e after %d dispatches (%d iterations)\n",
		method, problem, *n, *n, dev.Info().Name, res.Converged, res.Residual, res.Dispatches, res.Iterations)
	fmt.Fprintf(w, "time: build %v, device %v, host %v\n", res.Build.Round(time.Microsecond), res.Device.Round(time.Microsecond), res.Host.Round(time.Microsecond))
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

// The memory a solve needs, calibrated by measuring the peak resident set
// (/usr/bin/time -f %M) of "anemone solve" on the simulator, linux/amd64:
//   - poisson, CG + FastDiagonalization: 80 MB at 512² and 309 MB at
//     1024² unknowns (about 300 bytes per unknown);
//   - poisson, CG with the device polynomial: 114 MB at 512² after 100
//     dispatches and 376 MB at 1024² after 40 (360 to 435 bytes per
//     unknown, growing with the FCG directions kept), Compensated no more;
//   - convdiff, GMRES(m): 110 MB at 512² for m = 10 and 194 MB for m = 30,
//     Compensated the same (about 260 + 16·m bytes per unknown: the 2m + 1
//     float64 Krylov and preconditioned vectors, and the simulator's
//     buffers).
//
// The constants round those up, so the estimate is above every measured
// peak.
const (
	solveBaseBytes        = 32 << 20 // the process, the compile caches
	cgBytesPerUnknown     = 480
	gmresBytesPerUnknown  = 300 // plus gmresBytesPerRestart per restart step
	gmresBytesPerRestart  = 16
	fallbackMemoryBytes   = 4 << 30 // where the machine's memory is unknown
	darwinMemoryFraction  = 0.5     // of hw.memsize: macOS has no MemAvailable
	solveMemoryMaxRestart = krylov.MaxRestart
)

// solveBytes estimates the bytes a solve of problem on the given number of
// unknowns needs (restart: GMRES's, capped at krylov.MaxRestart).
func solveBytes(problem string, unknowns float64, restart int) float64 {
	per := float64(cgBytesPerUnknown)
	if problem == "convdiff" {
		per = gmresBytesPerUnknown + gmresBytesPerRestart*float64(min(restart, solveMemoryMaxRestart))
	}
	return solveBaseBytes + per*unknowns
}

// maxSide is the largest grid side whose estimate fits in avail bytes.
func maxSide(problem string, avail float64, restart int) int {
	per := solveBytes(problem, 1, restart) - solveBaseBytes
	return int(math.Sqrt(max(0, avail-solveBaseBytes) / per))
}

// memoryAvailable is availableMemory; tests replace it with a fixed
// figure.
var memoryAvailable = availableMemory

// availableMemory returns the bytes a solve may use and where the figure
// comes from: on linux MemAvailable of /proc/meminfo; on darwin half the
// physical memory (sysctl hw.memsize), since macOS reports no available
// figure and compresses memory instead; elsewhere, or when neither can be
// read, a conservative 4 GiB.
func availableMemory() (float64, string) {
	switch runtime.GOOS {
	case "linux":
		if f, err := os.Open("/proc/meminfo"); err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				fields := strings.Fields(sc.Text())
				if len(fields) >= 2 && fields[0] == "MemAvailable:" {
					if kb, err := strconv.ParseFloat(fields[1], 64); err == nil {
						return kb * 1024, "MemAvailable in /proc/meminfo"
					}
				}
			}
		}
	case "darwin":
		if out, err := exec.Command("sysctl", "-n", "hw.memsize").Output(); err == nil {
			if b, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && b > 0 {
				return darwinMemoryFraction * b, "half of hw.memsize"
			}
		}
	}
	return fallbackMemoryBytes, "a conservative 4 GiB: this system's free memory is not known"
}
