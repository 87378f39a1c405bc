package shim

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
)

// Cache wraps a backend device: it checks inputs and outputs uniformly for
// every backend, keeps every compiled program keyed by its content hash
// until the device is closed, and serializes runs, as the engine does.
// It never evicts and never recompiles: a program is compiled once per
// device, and the backend's compile budget (DefaultCompileBudget) is what
// bounds how many a device holds. Open returns a Cache.
type Cache struct {
	dev Device

	mu      sync.Mutex // guards the fields below
	entries map[string]Executable
	stats   CacheStats
	closed  bool

	runMu sync.Mutex // one program runs at a time
}

// CacheStats counts what a Cache did.
type CacheStats struct {
	Compiles int // programs compiled on the backend
	Hits     int // Compile calls answered from the cache
	Runs     int // dispatches
	// ModeledCompile is the modeled compile and load time of the programs
	// compiled (lower.EstimateCompile).
	ModeledCompile time.Duration
}

// NewCache wraps dev.
func NewCache(dev Device) *Cache {
	return &Cache{dev: dev, entries: map[string]Executable{}}
}

// Backend returns the wrapped device.
func (c *Cache) Backend() Device { return c.dev }

// Info describes the backend.
func (c *Cache) Info() Info { return c.dev.Info() }

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Compile returns an executable for p, compiling it only if no program with
// the same hash is cached.
func (c *Cache) Compile(p *lower.Program) (Executable, error) {
	exe, _, err := c.compile(p)
	return exe, err
}

// compile is Compile, reporting whether p was compiled now.
func (c *Cache) compile(p *lower.Program) (Executable, CompileReport, error) {
	if p == nil {
		return nil, CompileReport{}, fmt.Errorf("shim: nil program: %w", ErrShape)
	}
	exe, rep, err := c.executable(p)
	if err != nil {
		return nil, rep, err
	}
	return &cachedExecutable{c: c, p: p, exe: exe}, rep, nil
}

// executable returns the backend executable for p, compiling it if
// needed. Safe for concurrent use.
func (c *Cache) executable(p *lower.Program) (Executable, CompileReport, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, CompileReport{}, fmt.Errorf("shim: device %s: %w", c.dev.Info().Name, ErrClosed)
	}
	if exe, ok := c.entries[p.Hash]; ok {
		c.stats.Hits++
		c.mu.Unlock()
		return exe, CompileReport{}, nil
	}
	c.mu.Unlock()

	// Compile outside the lock: it can take long on the engine.
	exe, err := c.dev.Compile(p)
	if err != nil {
		return nil, CompileReport{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[p.Hash]; ok { // compiled concurrently: keep the first
		_ = exe.Close()
		return old, CompileReport{}, nil
	}
	rep := CompileReport{Fresh: true, Modeled: lower.EstimateCompile(p)}
	c.stats.Compiles++
	c.stats.ModeledCompile += rep.Modeled
	c.entries[p.Hash] = exe
	return exe, rep, nil
}

// Close closes every cached program and the backend.
func (c *Cache) Close() error {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var first error
	for _, exe := range c.entries {
		if err := exe.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.entries = nil
	if err := c.dev.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

type cachedExecutable struct {
	c      *Cache
	p      *lower.Program
	exe    Executable // the backend's, owned by the cache
	mu     sync.Mutex
	closed bool
}

func (e *cachedExecutable) Program() *lower.Program { return e.p }

// Backend returns the backend's executable behind this handle, for what a
// backend reports beyond Executable (the engine's own time of the last
// run, say). The cache owns it: do not close or run it.
func (e *cachedExecutable) Backend() Executable { return e.exe }

// Close releases this handle; the compiled program stays in the cache.
func (e *cachedExecutable) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	return nil
}

// begin checks that the handle and its device are open and counts a run.
func (e *cachedExecutable) begin() error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return fmt.Errorf("shim: run of a closed executable: %w", ErrClosed)
	}
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	if e.c.closed {
		return fmt.Errorf("shim: device %s: %w", e.c.dev.Info().Name, ErrClosed)
	}
	e.c.stats.Runs++
	return nil
}

func (e *cachedExecutable) Run(inputs [][]float32) ([][]float32, error) {
	if err := CheckInputs(e.p, inputs); err != nil {
		return nil, err
	}
	e.c.runMu.Lock()
	defer e.c.runMu.Unlock()
	if err := e.begin(); err != nil {
		return nil, err
	}
	out, err := e.exe.Run(inputs)
	if err != nil {
		return out, err
	}
	return out, CheckOutputs(e.p, out)
}

// RunHalf runs the backend on packed fp16 surfaces (see HalfRunner): no
// conversion and no range check here; the Session that calls it checks
// what the host reads.
func (e *cachedExecutable) RunHalf(in, out [][]uint16) error {
	e.c.runMu.Lock()
	defer e.c.runMu.Unlock()
	if err := e.begin(); err != nil {
		return err
	}
	return RunHalf(e.exe, in, out)
}

// CheckInputs verifies the count and lengths of inputs against p's signature
// and that every value fits fp16: one that rounds to ±Inf, or is NaN, is an
// error wrapping ErrRange. Backends call it too.
func CheckInputs(p *lower.Program, inputs [][]float32) error {
	if len(inputs) != len(p.Inputs) {
		return fmt.Errorf("shim: got %d inputs, program takes %d: %w", len(inputs), len(p.Inputs), ErrShape)
	}
	for i, spec := range p.Inputs {
		if len(inputs[i]) != spec.Size() {
			return fmt.Errorf("shim: input %q has %d elements, want %d (shape %v): %w", spec.Name, len(inputs[i]), spec.Size(), spec.Shape, ErrShape)
		}
		for j, v := range inputs[i] {
			// Values from 65520 up round to ±Inf in fp16; NaN fails too.
			if !(math.Abs(float64(v)) < 65520) {
				return fmt.Errorf("shim: input %q element %d is %g, beyond fp16's range ±%g: %w", spec.Name, j, v, fp16.MaxValue, ErrRange)
			}
		}
	}
	return nil
}

// CheckOutputs reports the first output element that is ±Inf or NaN, which
// on the engine means an fp16 overflow inside the program.
func CheckOutputs(p *lower.Program, outputs [][]float32) error {
	for i, out := range outputs {
		for j, v := range out {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				name := fmt.Sprint(i)
				if i < len(p.Outputs) {
					name = p.Outputs[i].Name
				}
				return fmt.Errorf("shim: output %q element %d is %g: fp16 overflow on the device: %w", name, j, v, ErrRange)
			}
		}
	}
	return nil
}
