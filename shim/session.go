package shim

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/anemone-go/anemone/engine"
	"github.com/anemone-go/anemone/fp16"
	"github.com/anemone-go/anemone/lower"
)

// HalfRunner is implemented by executables that run on packed fp16
// surfaces the caller holds: in[i] holds the InputSurfaces[i].Size()
// binary16 encodings of input surface i in its [1, C, 1, S] row layout,
// and Run writes every element of out[i] likewise. Nothing is converted
// or range-checked: the surfaces are the device's buffers. A program
// lowered without surface lists has none, and is not run this way.
type HalfRunner interface {
	RunHalf(in, out [][]uint16) error
}

// Session runs one program again and again on buffers that stay on the
// device: its input and output surfaces. What the host writes into an
// input stays there until it is written again, so an operand the
// program reads every dispatch (a matrix, a model's weights) crosses
// once; Carry makes an output become an input after every dispatch (a
// solver's vectors, optimizer state, a cache), without a host round trip;
// and the host reads only the tensors it asks for. Values cross as fp16
// encodings, converted in one pass with one range check; Write64 and
// Read64 scale by a power of two on the way.
//
// On the simulator the surfaces are the session's buffers themselves; on
// the engine they are its IOSurfaces (see docs/ARCHITECTURE.md). A Session
// is safe for concurrent use, but its dispatches are serialized.
type Session struct {
	exe  Executable
	prog *lower.Program

	mu      sync.Mutex
	in, out [][]uint16
	carry   []carryPair
	stats   SessionStats
	closed  bool
}

type carryPair struct{ from, to lower.IOSpec }

// SessionStats counts what crossed between host and device.
type SessionStats struct {
	Dispatches int
	// BytesIn and BytesOut count the fp16 bytes the host wrote into the
	// device's input surfaces and read from its surfaces. A carried or
	// resident tensor crosses neither way.
	BytesIn, BytesOut int64
	// Device is the wall time spent inside the device's runs: on the
	// simulator, the simulation. Everything else a session does is host
	// work the engine would need too.
	Device time.Duration
}

// NewSession allocates exe's surfaces, zeroed. The program must have
// surface lists (every lowered program has).
func NewSession(exe Executable) (*Session, error) {
	if exe == nil {
		return nil, fmt.Errorf("shim: NewSession: nil executable: %w", ErrShape)
	}
	p := exe.Program()
	if len(p.InputSurfaces) == 0 || len(p.OutputSurfaces) == 0 {
		return nil, fmt.Errorf("shim: NewSession: program %.12s has no surface lists; lower it with lower.Lower: %w", p.Hash, ErrUnsupported)
	}
	s := &Session{exe: exe, prog: p}
	for _, sf := range p.InputSurfaces {
		s.in = append(s.in, make([]uint16, sf.Size()))
	}
	for _, sf := range p.OutputSurfaces {
		s.out = append(s.out, make([]uint16, sf.Size()))
	}
	return s, nil
}

// Program returns the program the session runs.
func (s *Session) Program() *lower.Program { return s.prog }

func findSpec(specs []lower.IOSpec, name string) (lower.IOSpec, bool) {
	for _, sp := range specs {
		if sp.Name == name {
			return sp, true
		}
	}
	return lower.IOSpec{}, false
}

func (s *Session) input(fn, name string, n int) (lower.IOSpec, error) {
	sp, ok := findSpec(s.prog.Inputs, name)
	if !ok {
		return sp, fmt.Errorf("shim: Session.%s: the program has no input %q: %w", fn, name, ErrShape)
	}
	if n >= 0 && n != sp.Size() {
		return sp, fmt.Errorf("shim: Session.%s: input %q has %d elements (shape %v), got %d: %w", fn, name, sp.Size(), sp.Shape, n, ErrShape)
	}
	return sp, nil
}

// readable finds name among the outputs, then the inputs (a resident
// tensor can be read back where it lies).
func (s *Session) readable(fn, name string, n int) (lower.IOSpec, []uint16, error) {
	sp, ok := findSpec(s.prog.Outputs, name)
	surf := s.out
	if !ok {
		sp, ok = findSpec(s.prog.Inputs, name)
		surf = s.in
	}
	if !ok {
		return sp, nil, fmt.Errorf("shim: Session.%s: the program has no output or input %q: %w", fn, name, ErrShape)
	}
	if n != sp.Size() {
		return sp, nil, fmt.Errorf("shim: Session.%s: %q has %d elements (shape %v), got room for %d: %w", fn, name, sp.Size(), sp.Shape, n, ErrShape)
	}
	return sp, surf[sp.Surface], nil
}

func (s *Session) check(fn string) error {
	if s.closed {
		return fmt.Errorf("shim: Session.%s: session closed: %w", fn, ErrClosed)
	}
	return nil
}

// Write64 stores src·2^exp, rounded to fp16, as input name (row-major in
// the input's logical shape). A value that rounds to ±Inf, or NaN, is an
// error wrapping ErrRange, and the input is then left as it was.
func (s *Session) Write64(name string, src []float64, exp int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("Write64"); err != nil {
		return err
	}
	sp, err := s.input("Write64", name, len(src))
	if err != nil {
		return err
	}
	var bad error
	engine.EachRow(sp, s.in[sp.Surface], func(row []uint16, off int) {
		if i := fp16.EncodeScaled(row, src[off:], exp); i >= 0 && bad == nil {
			bad = fmt.Errorf("shim: input %q element %d is %g·2^%d, beyond fp16's range ±%g: %w", name, off+i, src[off+i], exp, fp16.MaxValue, ErrRange)
		}
	})
	if bad != nil {
		s.clearBand(sp)
		return bad
	}
	s.stats.BytesIn += 2 * int64(len(src))
	return nil
}

// WriteRows64 is Write64 with a power-of-two scale per row: row r of the
// input (its last axis) is stored as src·2^exps[r]. len(exps) must be the
// input's row count.
func (s *Session) WriteRows64(name string, src []float64, exps []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("WriteRows64"); err != nil {
		return err
	}
	sp, err := s.input("WriteRows64", name, len(src))
	if err != nil {
		return err
	}
	if len(exps) != sp.Rows() {
		return fmt.Errorf("shim: Session.WriteRows64: input %q has %d rows, got %d exponents: %w", name, sp.Rows(), len(exps), ErrShape)
	}
	var bad error
	r := 0
	engine.EachRow(sp, s.in[sp.Surface], func(row []uint16, off int) {
		if i := fp16.EncodeScaled(row, src[off:], exps[r]); i >= 0 && bad == nil {
			bad = fmt.Errorf("shim: input %q element %d is %g·2^%d, beyond fp16's range ±%g: %w", name, off+i, src[off+i], exps[r], fp16.MaxValue, ErrRange)
		}
		r++
	})
	if bad != nil {
		s.clearBand(sp)
		return bad
	}
	s.stats.BytesIn += 2 * int64(len(src))
	return nil
}

// clearBand zeroes sp's rows, so that a refused write leaves no half
// written tensor behind.
func (s *Session) clearBand(sp lower.IOSpec) {
	engine.EachRow(sp, s.in[sp.Surface], func(row []uint16, _ int) { clear(row) })
}

// Write stores src rounded to fp16 as input name; errors as Write64.
func (s *Session) Write(name string, src []float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("Write"); err != nil {
		return err
	}
	sp, err := s.input("Write", name, len(src))
	if err != nil {
		return err
	}
	var bad error
	engine.EachRow(sp, s.in[sp.Surface], func(row []uint16, off int) {
		if i := fp16.EncodeFloat32(row, src[off:off+len(row)]); i >= 0 && bad == nil {
			bad = fmt.Errorf("shim: input %q element %d is %g, beyond fp16's range ±%g: %w", name, off+i, src[off+i], fp16.MaxValue, ErrRange)
		}
	})
	if bad != nil {
		s.clearBand(sp)
		return bad
	}
	s.stats.BytesIn += 2 * int64(len(src))
	return nil
}

// WriteHalf stores fp16 encodings as input name, unchanged.
func (s *Session) WriteHalf(name string, src []uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("WriteHalf"); err != nil {
		return err
	}
	sp, err := s.input("WriteHalf", name, len(src))
	if err != nil {
		return err
	}
	engine.EachRow(sp, s.in[sp.Surface], func(row []uint16, off int) { copy(row, src[off:]) })
	s.stats.BytesIn += 2 * int64(len(src))
	return nil
}

// Carry makes output from become input to after every dispatch: the
// next dispatch reads what this one wrote, and nothing crosses to the
// host. The two must have the same shape.
func (s *Session) Carry(from, to string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("Carry"); err != nil {
		return err
	}
	o, ok := findSpec(s.prog.Outputs, from)
	if !ok {
		return fmt.Errorf("shim: Session.Carry: the program has no output %q: %w", from, ErrShape)
	}
	i, err := s.input("Carry", to, o.Size())
	if err != nil {
		return err
	}
	if fmt.Sprint(o.Shape) != fmt.Sprint(i.Shape) {
		return fmt.Errorf("shim: Session.Carry: output %q has shape %v, input %q %v: %w", from, o.Shape, to, i.Shape, ErrShape)
	}
	for _, c := range s.carry {
		if c.to.Name == to {
			return fmt.Errorf("shim: Session.Carry: input %q is already fed by output %q: %w", to, c.from.Name, ErrShape)
		}
	}
	s.carry = append(s.carry, carryPair{o, i})
	return nil
}

// Run dispatches the program once on the session's surfaces, then moves
// every carried output into its input.
func (s *Session) Run() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("Run"); err != nil {
		return err
	}
	start := time.Now()
	err := RunHalf(s.exe, s.in, s.out)
	s.stats.Device += time.Since(start)
	if err != nil {
		return err
	}
	s.stats.Dispatches++
	for _, c := range s.carry {
		src := s.out[c.from.Surface]
		dst := s.in[c.to.Surface]
		n := c.from.RowLen()
		for r := range c.from.Rows() {
			a := (c.from.Channel + r) * c.from.Stride()
			b := (c.to.Channel + r) * c.to.Stride()
			copy(dst[b:b+n], src[a:a+n])
		}
	}
	return nil
}

// Read64 writes the value of output (or input) name times 2^exp into dst,
// row-major in its logical shape. An element that is ±Inf or NaN — an fp16
// overflow on the device — is an error wrapping ErrRange; dst holds the
// values either way.
func (s *Session) Read64(name string, dst []float64, exp int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("Read64"); err != nil {
		return err
	}
	sp, surf, err := s.readable("Read64", name, len(dst))
	if err != nil {
		return err
	}
	var bad error
	engine.EachRow(sp, surf, func(row []uint16, off int) {
		if i := fp16.Finite(row); i >= 0 && bad == nil {
			bad = fmt.Errorf("shim: %q element %d is %v: fp16 overflow on the device: %w", name, off+i, fp16.Bits(row[i]).Float64(), ErrRange)
		}
		fp16.DecodeScaled(dst[off:off+len(row)], row, exp)
	})
	s.stats.BytesOut += 2 * int64(len(dst))
	return bad
}

// Read writes output (or input) name into dst as float32; errors as Read64.
func (s *Session) Read(name string, dst []float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("Read"); err != nil {
		return err
	}
	sp, surf, err := s.readable("Read", name, len(dst))
	if err != nil {
		return err
	}
	var bad error
	engine.EachRow(sp, surf, func(row []uint16, off int) {
		if i := fp16.Finite(row); i >= 0 && bad == nil {
			bad = fmt.Errorf("shim: %q element %d is %v: fp16 overflow on the device: %w", name, off+i, fp16.Bits(row[i]).Float64(), ErrRange)
		}
		fp16.DecodeFloat32(dst[off:off+len(row)], row)
	})
	s.stats.BytesOut += 2 * int64(len(dst))
	return bad
}

// ReadHalf copies the fp16 encodings of output (or input) name into dst,
// unchanged and unchecked.
func (s *Session) ReadHalf(name string, dst []uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("ReadHalf"); err != nil {
		return err
	}
	sp, surf, err := s.readable("ReadHalf", name, len(dst))
	if err != nil {
		return err
	}
	engine.EachRow(sp, surf, func(row []uint16, off int) { copy(dst[off:], row) })
	s.stats.BytesOut += 2 * int64(len(dst))
	return nil
}

// Stats returns what the session moved so far.
func (s *Session) Stats() SessionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Close releases the session's surfaces; the program stays compiled.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.in, s.out = nil, nil
	return nil
}

// RunHalf runs exe on packed fp16 surfaces (see HalfRunner). An executable
// that does not implement HalfRunner runs through Run: the surfaces are
// unpacked into logical float32 inputs and the outputs packed back, an
// output that overflowed coming back as ±Inf for the reader to find.
func RunHalf(exe Executable, in, out [][]uint16) error {
	if hr, ok := exe.(HalfRunner); ok {
		return hr.RunHalf(in, out)
	}
	p := exe.Program()
	if len(in) != len(p.InputSurfaces) || len(out) != len(p.OutputSurfaces) {
		return fmt.Errorf("shim: RunHalf: %d input and %d output surfaces for a program of %d and %d: %w", len(in), len(out), len(p.InputSurfaces), len(p.OutputSurfaces), ErrShape)
	}
	inputs := make([][]float32, len(p.Inputs))
	for i, sp := range p.Inputs {
		inputs[i] = make([]float32, sp.Size())
		engine.EachRow(sp, in[sp.Surface], func(row []uint16, off int) { fp16.DecodeFloat32(inputs[i][off:off+len(row)], row) })
	}
	outs, err := exe.Run(inputs)
	if err != nil && !errors.Is(err, ErrRange) {
		return err
	}
	if len(outs) != len(p.Outputs) {
		if err == nil {
			err = fmt.Errorf("shim: RunHalf: the executable returned %d outputs, want %d: %w", len(outs), len(p.Outputs), ErrShape)
		}
		return err
	}
	for i, sp := range p.Outputs {
		engine.EachRow(sp, out[sp.Surface], func(row []uint16, off int) { fp16.EncodeFloat32(row, outs[i][off:off+len(row)]) })
	}
	return nil // an ErrRange of the outputs is seen when they are read
}

// HalfRows is a tensor's band of a session's surface, for a caller that
// converts in place: row r of the tensor (its last axis, logical elements
// r·RowLen … (r+1)·RowLen − 1) is Row(r). It stays valid until the
// session is closed; the caller must not use it while Run is under way.
type HalfRows struct {
	surf                []uint16
	off, RowLen, stride int
	Rows                int
}

// Row returns row r of the tensor on the surface.
func (h HalfRows) Row(r int) []uint16 {
	o := h.off + r*h.stride
	return h.surf[o : o+h.RowLen : o+h.RowLen]
}

// Flat returns the whole tensor as one slice, logical element i at [i],
// when its rows lie end to end on the surface (no padding between them),
// or ok false.
func (h HalfRows) Flat() (flat []uint16, ok bool) {
	if h.Rows > 1 && h.stride != h.RowLen {
		return nil, false
	}
	n := h.Rows * h.RowLen
	return h.surf[h.off : h.off+n : h.off+n], true
}

// InputRows returns input name's rows on the device's surface, for the
// caller to write fp16 encodings into (every element, padding untouched),
// and counts them as written (BytesIn), as WriteHalf would.
func (s *Session) InputRows(name string) (HalfRows, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("InputRows"); err != nil {
		return HalfRows{}, err
	}
	sp, err := s.input("InputRows", name, -1)
	if err != nil {
		return HalfRows{}, err
	}
	s.stats.BytesIn += 2 * int64(sp.Size())
	return halfRows(sp, s.in[sp.Surface]), nil
}

// OutputRows returns output (or input) name's rows on the device's
// surface, for the caller to read in place, and counts them as read
// (BytesOut), as ReadHalf would.
func (s *Session) OutputRows(name string) (HalfRows, error) {
	return s.OutputRowsPart(name, -1)
}

// OutputRowsPart is OutputRows for a caller that reads only elems of the
// tensor's elements in place (a block of its rows or columns), and counts
// those as read; elems < 0 counts the whole tensor.
func (s *Session) OutputRowsPart(name string, elems int) (HalfRows, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("OutputRows"); err != nil {
		return HalfRows{}, err
	}
	sp, ok := findSpec(s.prog.Outputs, name)
	surf := s.out
	if !ok {
		sp, ok = findSpec(s.prog.Inputs, name)
		surf = s.in
	}
	if !ok {
		return HalfRows{}, fmt.Errorf("shim: Session.OutputRows: the program has no output or input %q: %w", name, ErrShape)
	}
	if elems < 0 || elems > sp.Size() {
		elems = sp.Size()
	}
	s.stats.BytesOut += 2 * int64(elems)
	return halfRows(sp, surf[sp.Surface]), nil
}

func halfRows(sp lower.IOSpec, surf []uint16) HalfRows {
	return HalfRows{surf: surf, off: sp.Channel * sp.Stride(), RowLen: sp.RowLen(), stride: sp.Stride(), Rows: sp.Rows()}
}
