// Package figure draws the examples' pictures: a solution heat map beside
// a convergence curve, written as one PNG with gonum/plot.
package figure
