package main

import (
	"io"
	"testing"
)

// TestRun runs the program as built: with linalg as its only anemone
// import. x is a vector of small integers, so the float64-class solve
// must land within a few ulps of them: κ∞ of the 8×8 Laplacian is 32 and
// Solve stops at a backward error of 1e-15, so the error is at most about
// κ·1e-15·‖x‖∞ = 2.6e-13.
func TestRun(t *testing.T) {
	worst, err := run(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if worst > 3e-13 {
		t.Fatalf("largest error %g, want ≤ 3e-13", worst)
	}
}
