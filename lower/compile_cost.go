package lower

import "time"

// The modeled cost of compiling and loading a program on the engine
// (docs/ENGINE.md §6), from the two published measurements that bracket
// it: about 38 ms per shape for a small program through the in-memory
// route (ANEForge's dispatch notes), and about 4.2 s to recompile a
// 124M-parameter model (248 MB of fp16 weights; Orion). A line through
// both charges a fixed part and the weights at about 60 MB/s. Reports of
// 27–150 ms warm and ~750 ms for the first compile of a process put the
// fixed part within a factor of 4 either way; no family is measured
// apart, so every family is priced alike.
const (
	compileFixed   = 38 * time.Millisecond
	compileBytesPS = (248e6 - 0) / (4.2 - 0.038) // weight bytes compiled per second
)

// EstimateCompile models the time to compile and load p on the engine:
// what a fresh compile adds to the time a user waits for, once per
// program. The weights are its blob; a program whose matrices are runtime
// operands compiles at the fixed cost.
func EstimateCompile(p *Program) time.Duration {
	if p == nil {
		return 0
	}
	return compileFixed + time.Duration(float64(len(p.Blob))/compileBytesPS*float64(time.Second))
}

// processStart is what a process's first compile adds to a warm one.
// ANEForge's e5rt reference (docs/e5rt-dispatch-reference.md) puts a
// compile at about 27 ms with aned's cache warm and up to about 750 ms
// cold, aned keeping its compiled programs per process; its dispatch
// notes (docs/dispatch.md) give ~750 ms cold against ~30 ms warm. The cold
// figure less the warm small-program compile (compileFixed) is the part
// paid once.
const processStart = 750*time.Millisecond - compileFixed

// EstimateProcessStart models the one-time cost of a process's first
// compile on the engine, beyond what EstimateCompile charges for that
// program: the compiler's cold start. It is paid once per process, not per
// program and not per solve, so EstimateCompile leaves it out.
func EstimateProcessStart() time.Duration { return processStart }
