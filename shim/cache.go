package shim

import (
	"container/list"
	"fmt"
	"math"
	"sync"

	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
)

// DefaultBudget is the number of programs a Cache keeps compiled at once.
// The ANE holds about 119–128 loaded programs per process (docs/ENGINE.md §3);
// the default leaves room for programs compiled outside the cache.
const DefaultBudget = 100

// Cache wraps a backend device: it checks inputs and outputs uniformly for
// every backend, keeps compiled programs keyed by their content hash, evicts
// the least recently used past a budget (recompiling transparently if an
// evicted program runs again), and serializes runs, as the engine does.
// Open returns a Cache.
type Cache struct {
	dev    Device
	budget int

	mu      sync.Mutex // guards the fields below
	entries map[string]*list.Element
	lru     *list.List // of *cacheEntry, most recent first
	stats   CacheStats
	closed  bool

	runMu sync.Mutex // one program runs at a time
}

type cacheEntry struct {
	hash string
	exe  Executable
}

// CacheStats counts what a Cache did.
type CacheStats struct {
	Compiles  int // programs compiled on the backend
	Hits      int // Compile calls answered from the cache
	Evictions int // programs closed to stay within the budget
	Runs      int // dispatches
}

// NewCache wraps dev with a cache of at most budget compiled programs
// (DefaultBudget if budget ≤ 0).
func NewCache(dev Device, budget int) *Cache {
	if budget <= 0 {
		budget = DefaultBudget
	}
	return &Cache{dev: dev, budget: budget, entries: map[string]*list.Element{}, lru: list.New()}
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
	if p == nil {
		return nil, fmt.Errorf("shim: nil program: %w", ErrShape)
	}
	if _, err := c.executable(p); err != nil {
		return nil, err
	}
	return &cachedExecutable{c: c, p: p}, nil
}

// executable returns the live backend executable for p, compiling it if
// needed. Safe for concurrent use.
func (c *Cache) executable(p *lower.Program) (Executable, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("shim: device %s: %w", c.dev.Info().Name, ErrClosed)
	}
	if el, ok := c.entries[p.Hash]; ok {
		c.lru.MoveToFront(el)
		c.stats.Hits++
		exe := el.Value.(*cacheEntry).exe
		c.mu.Unlock()
		return exe, nil
	}
	c.mu.Unlock()

	// Compile outside the lock: it can take long on the engine.
	exe, err := c.dev.Compile(p)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[p.Hash]; ok { // compiled concurrently: keep the first
		_ = exe.Close()
		c.lru.MoveToFront(el)
		return el.Value.(*cacheEntry).exe, nil
	}
	c.stats.Compiles++
	c.entries[p.Hash] = c.lru.PushFront(&cacheEntry{hash: p.Hash, exe: exe})
	for c.lru.Len() > c.budget {
		old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
		delete(c.entries, old.hash)
		c.stats.Evictions++
		_ = old.exe.Close()
	}
	return exe, nil
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
	for el := c.lru.Front(); el != nil; el = el.Next() {
		if err := el.Value.(*cacheEntry).exe.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.entries, c.lru = nil, list.New()
	if err := c.dev.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

type cachedExecutable struct {
	c      *Cache
	p      *lower.Program
	mu     sync.Mutex
	closed bool
}

func (e *cachedExecutable) Program() *lower.Program { return e.p }

// Close releases this handle; the compiled program stays in the cache.
func (e *cachedExecutable) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	return nil
}

func (e *cachedExecutable) Run(inputs [][]float32) ([][]float32, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("shim: run of a closed executable: %w", ErrClosed)
	}
	if err := CheckInputs(e.p, inputs); err != nil {
		return nil, err
	}
	e.c.runMu.Lock()
	defer e.c.runMu.Unlock()
	exe, err := e.c.executable(e.p)
	if err != nil {
		return nil, err
	}
	e.c.mu.Lock()
	e.c.stats.Runs++
	e.c.mu.Unlock()
	out, err := exe.Run(inputs)
	if err != nil {
		return out, err
	}
	return out, CheckOutputs(e.p, out)
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
