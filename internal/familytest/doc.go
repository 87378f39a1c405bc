// Package familytest holds the accuracy checks that run on every family
// variant of the simulator ("sim-m1", "sim-m3", "sim-m5" beside the
// default "sim"): the headline accuracy figures of the FFT, the matrix
// products, the dense solve and the CNN, each against gonum or float64 and
// within the same bound on every family. It has no code of its own.
package familytest
