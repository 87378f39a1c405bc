// Package fp16 converts between IEEE 754 binary16 ("half", fp16) and Go's
// float32 and float64, rounding to nearest with ties to even.
//
// It is the one place in anemone that knows the fp16 bit layout. Every other
// package that must round a value to what the Neural Engine stores calls it.
//
// Invariants:
//   - FromFloat64 and FromFloat32 round once, to nearest even, exactly as the
//     IEEE standard specifies (no double rounding through float32).
//   - Values beyond ±MaxValue that round away from it become ±Inf; NaN stays NaN.
//   - Subnormals are kept (the smallest positive value is 2⁻²⁴).
//   - Round32 and Round64 return the float value of the nearest fp16, so a
//     tensor can be held in float32 while carrying fp16 values exactly.
package fp16
