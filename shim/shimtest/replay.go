package shimtest

import (
	"hash/maphash"
	"sync"
	"unsafe"

	"github.com/anemone-go/anemone/lower"
	"github.com/anemone-go/anemone/shim"
)

// Replay wraps dev in a device that remembers what each program returned
// for each set of input surfaces and, when the same surfaces come again,
// copies the remembered outputs instead of running the program. A
// benchmark that repeats one call then spends its time on the host's
// side alone — encoding, decoding, the float64 loop — so that side can be
// profiled without the simulator's own time drowning it. The outputs are
// the real device's, bit for bit.
func Replay(dev shim.Device) shim.Device { return replay{dev} }

type replay struct{ shim.Device }

func (d replay) Compile(p *lower.Program) (shim.Executable, error) {
	exe, err := d.Device.Compile(p)
	if err != nil {
		return nil, err
	}
	return &replayExe{Executable: exe, seed: maphash.MakeSeed(), seen: map[uint64][][]uint16{}}, nil
}

type replayExe struct {
	shim.Executable
	seed maphash.Seed
	mu   sync.Mutex
	seen map[uint64][][]uint16
}

// RunHalf copies the remembered outputs of the same input surfaces, or
// runs the program and remembers its outputs.
func (e *replayExe) RunHalf(in, out [][]uint16) error {
	var h maphash.Hash
	h.SetSeed(e.seed)
	for _, s := range in {
		if len(s) > 0 {
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s)))
		}
	}
	key := h.Sum64()
	e.mu.Lock()
	got, ok := e.seen[key]
	e.mu.Unlock()
	if ok {
		for i := range out {
			copy(out[i], got[i])
		}
		return nil
	}
	if err := shim.RunHalf(e.Executable, in, out); err != nil {
		return err
	}
	keep := make([][]uint16, len(out))
	for i := range out {
		keep[i] = append([]uint16(nil), out[i]...)
	}
	e.mu.Lock()
	e.seen[key] = keep
	e.mu.Unlock()
	return nil
}
