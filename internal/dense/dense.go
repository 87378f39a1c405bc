// Package dense reads a gonum matrix by rows for the packages' host
// passes (precision, linalg): a matrix that exposes its data
// (mat.RawMatrixer, as *mat.Dense does) is read in place, any other is
// copied once through At, so no pass pays an interface call per entry.
package dense

import "gonum.org/v1/gonum/mat"

// Rows returns a's rows, row i as a slice of length and capacity equal to
// a's column count: views of a RawMatrixer's data, which the caller must
// not modify, or copies of any other matrix's.
func Rows(a mat.Matrix) [][]float64 {
	m, k := a.Dims()
	rows := make([][]float64, m)
	if rm, ok := a.(mat.RawMatrixer); ok {
		if raw := rm.RawMatrix(); raw.Rows == m && raw.Cols == k {
			for i := range rows {
				rows[i] = raw.Data[i*raw.Stride : i*raw.Stride+k : i*raw.Stride+k]
			}
			return rows
		}
	}
	for i := range rows {
		row := make([]float64, k)
		for j := range row {
			row[j] = a.At(i, j)
		}
		rows[i] = row
	}
	return rows
}
