package dataflow

// Fail records err as g's first error, as a builder method does for its own
// mistakes: packages that build layers on a graph (such as nn) report a bad
// weight or option through it, so that Err, Verify and lowering return it.
// A nil err, a nil graph or a graph that already holds an error is left as
// it is.
func (g *Graph) Fail(err error) {
	if g == nil || err == nil {
		return
	}
	g.fail(err)
}
