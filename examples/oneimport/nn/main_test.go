package main

import (
	"io"
	"testing"
)

// TestRun runs the program as built, with nn as its only device-side
// import. The bound is the one nn's model tests hold every model to: a
// construction failure (an overflow, a cliff) costs far more.
func TestRun(t *testing.T) {
	rel, err := run(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if rel > 0.05 {
		t.Fatalf("largest difference %g of the largest logit, want ≤ 0.05", rel)
	}
}
