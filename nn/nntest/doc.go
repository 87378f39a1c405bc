// Package nntest is the device conformance suite's part for package nn:
// every layer, in each of its forms, built on seeded weights and inputs
// in the ranges the layer is built for, run on a device and compared
// with the float64 evaluation of the same graph within the bound the
// suite's error analysis derives (shimtest.CheckGraph). It lives beside
// nn so that the device suite, shim/shimtest, depends on nothing above
// package shim.
package nntest
