package dense

import (
	"testing"

	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestRows(t *testing.T) {
	a := mat.NewDense(3, 4, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	view := a.Slice(1, 3, 1, 3)
	for name, m := range map[string]mat.Matrix{"dense": a, "view": view, "transpose": a.T()} {
		r, c := m.Dims()
		rows := Rows(m)
		require.Len(t, rows, r, name)
		for i, row := range rows {
			require.Len(t, row, c, name)
			require.Equal(t, c, cap(row), "%s: a row's capacity ends at the row", name)
			for j, v := range row {
				require.Equal(t, m.At(i, j), v, "%s[%d][%d]", name, i, j)
			}
		}
	}
	// A view shares the matrix's data; a copy does not.
	Rows(view)[0][0] = -1
	require.Equal(t, -1.0, a.At(1, 1))
	Rows(a.T())[0][0] = -2
	require.Equal(t, 1.0, a.At(0, 0))
}
