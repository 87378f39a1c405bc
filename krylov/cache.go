package krylov

import (
	"container/list"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// programKey identifies one compiled solver program: the solver, the device,
// the operator and preconditioner (by identity: both must be pointers) and
// every setting that shapes the program.
type programKey struct {
	solver      string // "cg", "gmres", "gcr"
	dev         shim.Device
	op          Operator
	pre         Preconditioner
	steps       int // CG's Unroll or GMRES's m
	sigma, tau  int // the operator's and the vectors' power-of-two scales
	compensated bool
}

// cacheable reports whether the key's operator, preconditioner and device
// are pointers, so that the key names them by identity. A value type could
// be uncomparable (a map key that panics) or equal to another value whose
// device apply differs.
func (k programKey) cacheable() bool {
	return isPointer(k.op) && isPointer(k.dev) && (k.pre == nil || isPointer(k.pre))
}

// isPointer reports whether v's dynamic type is a pointer.
func isPointer(v any) bool {
	return v != nil && reflect.TypeOf(v).Kind() == reflect.Pointer
}

// programCacheSize bounds the programs the package keeps: enough for a few
// operators, each with a few settings, without keeping every operator a
// long-running process ever solved alive.
const programCacheSize = 32

// programCache keeps recently used solver programs, least recently used
// first out. A hit skips building the graph, lowering and compiling.
type programCache struct {
	mu      sync.Mutex
	max     int
	entries map[programKey]*list.Element
	lru     *list.List // of *cachedProgram, most recent first
}

type cachedProgram struct {
	key programKey
	exe *compiled
}

// compiled is a solver program with its modeled cost per dispatch.
type compiled struct {
	shim.Executable
	family   string // the ANE family the cost is modeled for
	costOnce sync.Once
	cost     lower.Cost
	report   shim.CompileReport // what building it compiled
	charged  atomic.Bool        // a solve has been charged the compile
}

// newCompiled wraps exe, whose cost is modeled on dev's ANE family (the
// simulator's programs as ane-m1, the slowest family).
func newCompiled(exe shim.Executable, dev shim.Device, rep shim.CompileReport) *compiled {
	return &compiled{Executable: exe, family: costFamily(dev), report: rep}
}

// costFamily is the target name lower.Estimate prices dev's programs for.
func costFamily(dev shim.Device) string {
	name := dev.Info().Target.Name
	for _, t := range lower.EstimateTargets() {
		if t == name && name != "sim" {
			return name
		}
	}
	return "ane-m1"
}

// Cost returns the modeled cost of one dispatch (zero if the model cannot
// price the program).
func (c *compiled) Cost() lower.Cost {
	c.costOnce.Do(func() {
		if cost, err := lower.Estimate(c.Program(), c.family); err == nil {
			c.cost = cost
		}
	})
	return c.cost
}

var programs = &programCache{max: programCacheSize}

// graphBuilds counts solver graphs built (a cache miss), for tests.
var graphBuilds atomic.Int64

// get returns the compiled program for key, building its graph with build
// and compiling it on key.dev only when the cache does not hold it. what
// names the program in errors.
func (c *programCache) get(key programKey, what string, build func() (*dataflow.Graph, error)) (*compiled, error) {
	ok := key.cacheable()
	if ok {
		if exe := c.lookup(key); exe != nil {
			return exe, nil
		}
	}
	graphBuilds.Add(1)
	g, err := build()
	if err != nil {
		return nil, err
	}
	if err := g.Err(); err != nil {
		return nil, fmt.Errorf("krylov: %s: %w", what, err)
	}
	exe, rep, err := compile(key.dev, g, what)
	if err != nil {
		return nil, err
	}
	prog := newCompiled(exe, key.dev, rep)
	if ok {
		prog = c.store(key, prog)
	}
	return prog, nil
}

func (c *programCache) lookup(key programKey) *compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cachedProgram).exe
}

// store adds exe under key and returns the cached executable (the first
// one, if another solve stored the same key meanwhile).
func (c *programCache) store(key programKey, exe *compiled) *compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries, c.lru = map[programKey]*list.Element{}, list.New()
	}
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*cachedProgram).exe
	}
	c.entries[key] = c.lru.PushFront(&cachedProgram{key: key, exe: exe})
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*cachedProgram)
		delete(c.entries, old.key)
		// Not closed: a solve may still hold it, and the device's own
		// cache owns the compiled program.
	}
	return exe
}

// count returns the number of cached programs whose key satisfies keep.
func (c *programCache) count(keep func(programKey) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.entries {
		if keep(k) {
			n++
		}
	}
	return n
}
