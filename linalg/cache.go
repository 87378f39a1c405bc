package linalg

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"reflect"
	"sync"
	"weak"

	"github.com/anemone-go/anemone/precision"
	"github.com/anemone-go/anemone/shim"
	"gonum.org/v1/gonum/mat"
)

// The inverse cache. Newton–Schulz is most of a solve's device work (two
// products a step, tens of steps, against one product a refinement step),
// so Solve, SolveMany and Inverse keep the last few inverses they found.
// An entry is keyed by the identity of the *mat.Dense (a weak pointer: the
// cache never keeps a matrix alive), the device and the requested
// Precision, and holds a hash of the matrix's contents: a matrix modified
// in place since hashes differently and misses. Only usable inverses
// (‖I − B·X‖_F < ½) are kept. The cached inverse belongs to the
// equilibrated matrix B, which is a function of A's contents alone.

// inverseCacheSize bounds the entries; each holds an n×n float64 matrix.
const inverseCacheSize = 4

type inverseKey struct {
	a    weak.Pointer[mat.Dense]
	dev  shim.Device
	mode precision.Mode
}

type inverseEntry struct {
	key  inverseKey
	hash uint64
	ns   *nsResult
}

var (
	inverseMu    sync.Mutex
	inverseCache []inverseEntry // most recent last
	hashSeed     = maphash.MakeSeed()
)

// cacheKey returns the key and content hash of a for cfg, or ok = false
// when a cannot be cached (not a *mat.Dense, caching off, or a device type
// that cannot be compared).
func cacheKey(cfg *config, a mat.Matrix) (key inverseKey, hash uint64, ok bool) {
	d, isDense := a.(*mat.Dense)
	if !isDense || cfg.noCache || !reflect.TypeOf(cfg.dev).Comparable() {
		return inverseKey{}, 0, false
	}
	return inverseKey{a: weak.Make(d), dev: cfg.dev, mode: cfg.mode}, contentHash(d), true
}

// contentHash hashes the dimensions and the float64 bits of every entry.
func contentHash(d *mat.Dense) uint64 {
	var h maphash.Hash
	h.SetSeed(hashSeed)
	r, c := d.Dims()
	buf := binary.LittleEndian.AppendUint64(nil, uint64(r))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(c))
	_, _ = h.Write(buf)
	row := make([]byte, 0, 8*c)
	for i := range r {
		row = row[:0]
		for _, v := range d.RawRowView(i) {
			row = binary.LittleEndian.AppendUint64(row, math.Float64bits(v))
		}
		_, _ = h.Write(row)
	}
	return h.Sum64()
}

// cachedInverse returns the cached result for key and hash, if any.
func cachedInverse(key inverseKey, hash uint64) *nsResult {
	inverseMu.Lock()
	defer inverseMu.Unlock()
	for i := len(inverseCache) - 1; i >= 0; i-- {
		if e := inverseCache[i]; e.key == key && e.hash == hash && key.a.Value() != nil {
			return e.ns
		}
	}
	return nil
}

// storeInverse remembers ns for key and hash, replacing an entry of the
// same key and dropping entries whose matrix is gone, then the oldest.
func storeInverse(key inverseKey, hash uint64, ns *nsResult) {
	inverseMu.Lock()
	defer inverseMu.Unlock()
	kept := make([]inverseEntry, 0, inverseCacheSize+1)
	for _, e := range inverseCache {
		if e.key != key && e.key.a.Value() != nil {
			kept = append(kept, e)
		}
	}
	kept = append(kept, inverseEntry{key, hash, ns})
	inverseCache = kept[max(0, len(kept)-inverseCacheSize):]
}
