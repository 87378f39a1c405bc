package sim

import (
	"sort"
)

// buffers returns the slot buffers of a run. Const slots hold their data.
// The other slots share memory where their lifetimes do not overlap, so
// that a program of many ops on long vectors keeps its working set in the
// caches: a slot lives from the step that writes it (the start, for an
// input) to the last step that reads it (the end, for an output), and a
// step's output never shares memory with its inputs. Every kernel writes
// all of its output, so the previous contents of a buffer never show.
func (pl *plan) buffers() [][]float32 {
	n := len(pl.sizes)
	b := make([][]float32, n)
	last := make([]int, n) // index of the last step reading the slot
	for i := range last {
		last[i] = -1
	}
	end := len(pl.steps)
	for i, st := range pl.steps {
		for _, s := range st.ins {
			last[s] = max(last[s], i)
		}
	}
	for _, s := range pl.outputs {
		last[s] = end
	}
	var free [][]float32 // released buffers, by capacity ascending
	take := func(size int) []float32 {
		i := sort.Search(len(free), func(i int) bool { return cap(free[i]) >= size })
		if i == len(free) {
			return make([]float32, size)
		}
		buf := free[i]
		free = append(free[:i], free[i+1:]...)
		return buf[:size]
	}
	release := func(s int) {
		if pl.consts[s] != nil || b[s] == nil {
			return
		}
		buf := b[s][:cap(b[s])]
		i := sort.Search(len(free), func(i int) bool { return cap(free[i]) >= cap(buf) })
		free = append(free, nil)
		copy(free[i+1:], free[i:])
		free[i] = buf
	}
	for s := range n {
		if pl.consts[s] != nil {
			b[s] = pl.consts[s]
		}
	}
	for _, s := range pl.inputs {
		b[s] = take(pl.sizes[s])
	}
	released := make([]bool, n)
	for i, st := range pl.steps {
		if b[st.out] == nil {
			b[st.out] = take(pl.sizes[st.out])
		}
		if last[st.out] < i { // never read: free it again
			release(st.out)
			released[st.out] = true
		}
		for _, s := range st.ins {
			if last[s] == i && !released[s] {
				release(s)
				released[s] = true
			}
		}
	}
	for s := range n { // slots never written (unused inputs are written)
		if b[s] == nil {
			b[s] = make([]float32, pl.sizes[s])
		}
	}
	return b
}
