// Package benchclaim holds the end-to-end speed benchmarks to the figures
// docs/RESULTS.md prints, so that the table is never typed in by hand.
//
// A row of the table ("Speed, end to end") says what one call does: its
// dispatches, its modeled M1 engine time (lower.Estimate), its measured
// host time, their sum, the modeled compile of the first call, the best
// CPU method measured in the same run, and the ratio of the two totals.
// Pair runs the device call and the CPU baseline alternately, so that both
// see the machine in the same state, reports the row it measured and fails
// when the document's row departs from it: dispatches exactly, the modeled
// engine time beyond ModeledTol (a model of deterministic programs; the
// tolerance covers the printed digits), the ratio beyond a factor
// RatioSlack either way (host and CPU are measured on a shared 2-core
// machine whose speed drifts by up to 2× between sittings and whose other
// load slows gonum's two-core products more than the host's own work).
// The host and CPU columns are the measurements of the run that wrote the
// row; they are printed, not asserted. The document is the one copy of
// each figure: the benchmark reads it.
package benchclaim
