package isnil

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

// mapMatrix is a mat.Matrix of a reference kind other than a pointer.
type mapMatrix map[[2]int]float64

func (m mapMatrix) Dims() (int, int)    { return 1, 1 }
func (m mapMatrix) At(i, j int) float64 { return m[[2]int{i, j}] }
func (m mapMatrix) T() mat.Matrix       { return m }

func TestMatrix(t *testing.T) {
	var nd *mat.Dense
	var nm mapMatrix
	for _, c := range []struct {
		name string
		a    mat.Matrix
		want bool
	}{
		{"untyped nil", nil, true},
		{"(*mat.Dense)(nil)", nd, true},
		{"nil map matrix", nm, true},
		{"a matrix", mat.NewDense(1, 1, []float64{1}), false},
		{"an empty map matrix", mapMatrix{}, false},
		{"a transpose", mat.NewDense(1, 1, nil).T(), false},
	} {
		if got := Matrix(c.a); got != c.want {
			t.Errorf("%s: Matrix = %v, want %v", c.name, got, c.want)
		}
	}
}
