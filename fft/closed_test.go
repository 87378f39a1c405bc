package fft

import (
	"errors"
	"testing"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
)

// TestPlanClosed: a plan's transforms after Close are errors wrapping
// shim.ErrClosed (they were served by recompiling through the device's
// cache, which spends the compile budget once the cache lets them go);
// closing twice is harmless.
func TestPlanClosed(t *testing.T) {
	dev, err := shim.Open("sim")
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	p, err := NewPlan(8, &Settings{Device: dev, Precision: precision.FP16})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]complex128, 8)
	x[1] = 1
	if _, err := p.Forward(x); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for name, f := range map[string]func([]complex128) ([]complex128, error){"Forward": p.Forward, "Inverse": p.Inverse} {
		if y, err := f(x); !errors.Is(err, shim.ErrClosed) || y != nil {
			t.Errorf("%s after Close: %v, %v; want nil and shim.ErrClosed", name, y, err)
		}
	}
}
