package nn

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// ErrDevice reports a failure of the device that runs a model.
var ErrDevice = errors.New("nn: device failure")

// Settings configure Compile. A nil *Settings means the defaults.
type Settings struct {
	// Device runs the model; nil means the process's shared default
	// device (shim.Shared: the engine where present, the simulator
	// otherwise).
	Device shim.Device
}

// Model is a network compiled into one program on a device, to be run
// many times: the weights are in the program, the inputs cross at every
// Run. It is safe for concurrent use; runs are serialized.
type Model struct {
	g    *dataflow.Graph
	exe  shim.Executable
	ses  *shim.Session
	cost lower.Cost

	mu     sync.Mutex
	stats  Stats
	closed bool
}

// Stats are a model's counts and times, end to end.
type Stats struct {
	Dispatches int
	// Build is the measured graph lowering and compile request (on the
	// simulator, its parse); Host the measured host work of the runs:
	// converting inputs and outputs.
	Build, Host time.Duration
	// ModeledTime is the modeled engine time of the runs (lower.Estimate
	// for the device's family; the simulator's programs as ane-m1),
	// ModeledCompile the modeled compile and load time when Compile
	// compiled the program (zero when the device held it already), and
	// ModeledTotal their sum with Build and Host: what a user waits for.
	ModeledTime, ModeledCompile, ModeledTotal time.Duration
}

// Compile lowers g for the device and compiles it. g's errors (a layer's
// mistake) come back as they are; a program the device cannot run wraps
// lower.ErrUnsupported or shim's sentinels.
func Compile(g *dataflow.Graph, s *Settings) (*Model, error) {
	if g == nil {
		return nil, fmt.Errorf("nn: Compile: nil graph: %w", ErrShape)
	}
	if err := g.Err(); err != nil {
		return nil, err
	}
	if len(g.Outputs()) == 0 {
		return nil, fmt.Errorf("nn: Compile: the graph has no outputs: mark the values to read with g.Output: %w", ErrShape)
	}
	var dev shim.Device
	if s != nil {
		dev = s.Device
	}
	if dev == nil {
		d, err := shim.Shared()
		if err != nil {
			return nil, fmt.Errorf("nn: Compile: opening the default device: %w", err)
		}
		dev = d
	}
	start := time.Now()
	exe, rep, err := shim.BuildReported(dev, g)
	build := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("nn: Compile: %w", err)
	}
	ses, err := shim.NewSession(exe)
	if err != nil {
		return nil, fmt.Errorf("nn: Compile: %w", err)
	}
	m := &Model{g: g, exe: exe, ses: ses}
	if c, err := lower.Estimate(exe.Program(), dev.Info().Target.Name); err == nil {
		m.cost = c
	}
	m.stats.Build = build
	m.stats.ModeledCompile = rep.Modeled
	m.stats.ModeledTotal = build + rep.Modeled
	return m, nil
}

// Inputs returns the model's inputs: names and logical shapes.
func (m *Model) Inputs() []lower.IOSpec { return m.exe.Program().Inputs }

// Outputs returns the model's outputs.
func (m *Model) Outputs() []lower.IOSpec { return m.exe.Program().Outputs }

// Run runs the model once: every input by name, row-major in its shape,
// in; every output out. A missing input or one of the wrong length is
// ErrShape; a value beyond fp16's range, or an output that overflowed on
// the device, ErrRange; a run after Close, ErrDevice and shim.ErrClosed.
func (m *Model) Run(inputs map[string][]float64) (map[string][]float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("nn: Run: the model is closed: compile the graph again for a new model: %w", errors.Join(ErrDevice, shim.ErrClosed))
	}
	start := time.Now()
	dev0 := m.ses.Stats().Device
	p := m.exe.Program()
	for name := range inputs {
		if !hasSpec(p.Inputs, name) {
			return nil, fmt.Errorf("nn: Run: the model has no input %q (inputs: %s): %w", name, specNames(p.Inputs), ErrShape)
		}
	}
	for _, sp := range p.Inputs {
		x, ok := inputs[sp.Name]
		if !ok {
			return nil, fmt.Errorf("nn: Run: input %q (shape %v) is missing: %w", sp.Name, sp.Shape, ErrShape)
		}
		if len(x) != sp.Size() {
			return nil, fmt.Errorf("nn: Run: input %q has %d values, its shape %v needs %d: %w", sp.Name, len(x), sp.Shape, sp.Size(), ErrShape)
		}
		if err := m.ses.Write64(sp.Name, x, 0); err != nil {
			return nil, fmt.Errorf("nn: Run: %w", errors.Join(sentinel(err), err))
		}
	}
	if err := m.ses.Run(); err != nil {
		return nil, fmt.Errorf("nn: Run: %w", errors.Join(ErrDevice, err))
	}
	out := make(map[string][]float64, len(p.Outputs))
	var rangeErr error
	for _, sp := range p.Outputs {
		y := make([]float64, sp.Size())
		if err := m.ses.Read64(sp.Name, y, 0); err != nil && rangeErr == nil {
			if !errors.Is(err, shim.ErrRange) {
				return nil, fmt.Errorf("nn: Run: %w", errors.Join(ErrDevice, err))
			}
			rangeErr = fmt.Errorf("nn: Run: %w", errors.Join(ErrRange, err))
		}
		out[sp.Name] = y
	}
	m.stats.Dispatches++
	m.stats.ModeledTime += m.cost.Time
	m.stats.Host += time.Since(start) - (m.ses.Stats().Device - dev0)
	m.stats.ModeledTotal = m.stats.ModeledTime + m.stats.ModeledCompile + m.stats.Build + m.stats.Host
	return out, rangeErr
}

// Stats returns the model's counts and times so far.
func (m *Model) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Close releases the model's buffers; the program stays compiled on the
// device for the next Compile of the same graph. It waits for a Run under
// way; a Run after it is an error.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return m.ses.Close()
}

// sentinel is the nn error a session write failed with: ErrRange for a
// value beyond fp16, ErrDevice otherwise (a closed session).
func sentinel(err error) error {
	if errors.Is(err, shim.ErrRange) {
		return ErrRange
	}
	return ErrDevice
}

func hasSpec(specs []lower.IOSpec, name string) bool {
	for _, s := range specs {
		if s.Name == name {
			return true
		}
	}
	return false
}

func specNames(specs []lower.IOSpec) string {
	s := ""
	for i, sp := range specs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %v", sp.Name, sp.Shape)
	}
	return s
}
