package reference

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// Operator is a square linear operator x ↦ Ax on Rⁿ.
//
// Dims returns n. MulVecTo writes A·x into dst; both slices have length n and
// must not overlap. Implementations in this package panic if the lengths are
// wrong, which the solvers here never let happen.
type Operator interface {
	Dims() int
	MulVecTo(dst, x []float64)
}

// frobeniusNormer is implemented by operators that know their Frobenius
// norm cheaply (CSR and the dense wrapper).
type frobeniusNormer interface {
	FrobeniusNorm() float64
}

// denseOp wraps a square gonum matrix as an Operator.
type denseOp struct {
	a *mat.Dense
	n int
}

// DenseOperator returns the Operator x ↦ a·x for a square gonum matrix. The
// matrix is copied, so later changes to a do not affect the operator.
// It fails with ErrInput for a nil or empty matrix or one holding NaN or Inf,
// and with ErrShape for a non-square one.
func DenseOperator(a mat.Matrix) (Operator, error) {
	d, err := squareDense("DenseOperator", a)
	if err != nil {
		return nil, err
	}
	n, _ := d.Dims()
	return &denseOp{a: d, n: n}, nil
}

func (d *denseOp) Dims() int { return d.n }

func (d *denseOp) MulVecTo(dst, x []float64) {
	if len(dst) != d.n || len(x) != d.n {
		panic(fmt.Sprintf("reference: dense MulVecTo: len(dst)=%d, len(x)=%d, want %d", len(dst), len(x), d.n))
	}
	dv := mat.NewVecDense(d.n, dst)
	dv.MulVec(d.a, mat.NewVecDense(d.n, x))
}

// FrobeniusNorm returns ‖A‖_F.
func (d *denseOp) FrobeniusNorm() float64 { return mat.Norm(d.a, 2) }

// squareDense validates a square, finite, non-empty matrix and returns a copy.
func squareDense(fn string, a mat.Matrix) (*mat.Dense, error) {
	if a == nil {
		return nil, fmt.Errorf("reference: %s: nil matrix: %w", fn, ErrInput)
	}
	if e, ok := a.(interface{ IsEmpty() bool }); ok && e.IsEmpty() {
		return nil, fmt.Errorf("reference: %s: empty matrix: %w", fn, ErrInput)
	}
	r, c := a.Dims()
	if r <= 0 || c <= 0 {
		return nil, fmt.Errorf("reference: %s: matrix is %d×%d: %w", fn, r, c, ErrInput)
	}
	if r != c {
		return nil, fmt.Errorf("reference: %s: matrix is %d×%d, want square: %w", fn, r, c, ErrShape)
	}
	d := mat.DenseCopyOf(a)
	for i := range r {
		for _, v := range d.RawRowView(i) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("reference: %s: matrix holds %v: %w", fn, v, ErrInput)
			}
		}
	}
	return d, nil
}

// CSR is a square sparse matrix in compressed sparse row form. Within a row
// the column indices are strictly increasing. A CSR is immutable once built
// and safe for concurrent use.
type CSR struct {
	n      int
	rowPtr []int // length n+1
	col    []int
	val    []float64
}

// NewCSR builds an n×n CSR matrix from triplets (rows[k], cols[k], vals[k]).
// Duplicate entries are summed; explicit zeros are kept. The slices are not
// retained. It fails with ErrShape if the three slices differ in length and
// with ErrInput if n ≤ 0, an index is outside [0, n) or a value is NaN or
// Inf.
func NewCSR(n int, rows, cols []int, vals []float64) (*CSR, error) {
	if n <= 0 {
		return nil, fmt.Errorf("reference: NewCSR: n = %d, want ≥ 1: %w", n, ErrInput)
	}
	if len(rows) != len(cols) || len(rows) != len(vals) {
		return nil, fmt.Errorf("reference: NewCSR: %d rows, %d cols, %d vals: %w", len(rows), len(cols), len(vals), ErrShape)
	}
	for k := range rows {
		if rows[k] < 0 || rows[k] >= n || cols[k] < 0 || cols[k] >= n {
			return nil, fmt.Errorf("reference: NewCSR: entry %d at (%d, %d) outside %d×%d: %w", k, rows[k], cols[k], n, n, ErrInput)
		}
		if math.IsNaN(vals[k]) || math.IsInf(vals[k], 0) {
			return nil, fmt.Errorf("reference: NewCSR: entry %d at (%d, %d) is %v: %w", k, rows[k], cols[k], vals[k], ErrInput)
		}
	}
	idx := make([]int, len(rows))
	for k := range idx {
		idx[k] = k
	}
	// Stable sort by (row, col) so duplicates are summed in input order,
	// which keeps the result bit-reproducible.
	slices.SortStableFunc(idx, func(p, q int) int {
		if rows[p] != rows[q] {
			return rows[p] - rows[q]
		}
		return cols[p] - cols[q]
	})
	m := &CSR{n: n, rowPtr: make([]int, n+1)}
	for k, p := range idx {
		if k > 0 {
			q := idx[k-1]
			if rows[p] == rows[q] && cols[p] == cols[q] {
				m.val[len(m.val)-1] += vals[p]
				continue
			}
		}
		m.col = append(m.col, cols[p])
		m.val = append(m.val, vals[p])
		m.rowPtr[rows[p]+1]++
	}
	for i := range n {
		m.rowPtr[i+1] += m.rowPtr[i]
	}
	return m, nil
}

// Dims returns n for the n×n matrix.
func (m *CSR) Dims() int { return m.n }

// NNZ returns the number of stored entries (explicit zeros included).
func (m *CSR) NNZ() int { return len(m.val) }

// MulVecTo writes A·x into dst. It panics if len(dst) or len(x) is not n or
// if dst and x are the same slice.
func (m *CSR) MulVecTo(dst, x []float64) {
	if len(dst) != m.n || len(x) != m.n {
		panic(fmt.Sprintf("reference: CSR MulVecTo: len(dst)=%d, len(x)=%d, want %d", len(dst), len(x), m.n))
	}
	if m.n > 0 && &dst[0] == &x[0] {
		panic("reference: CSR MulVecTo: dst and x alias")
	}
	for i := range m.n {
		var s float64
		for k := m.rowPtr[i]; k < m.rowPtr[i+1]; k++ {
			s += m.val[k] * x[m.col[k]]
		}
		dst[i] = s
	}
}

// At returns A[i, j] (zero if not stored). It panics if i or j is outside
// [0, n).
func (m *CSR) At(i, j int) float64 {
	if i < 0 || i >= m.n || j < 0 || j >= m.n {
		panic(fmt.Sprintf("reference: CSR At(%d, %d) outside %d×%d", i, j, m.n, m.n))
	}
	cols := m.col[m.rowPtr[i]:m.rowPtr[i+1]]
	if k, ok := slices.BinarySearch(cols, j); ok {
		return m.val[m.rowPtr[i]+k]
	}
	return 0
}

// Row returns copies of the column indices (increasing) and values stored in
// row i. It panics if i is outside [0, n).
func (m *CSR) Row(i int) (cols []int, vals []float64) {
	if i < 0 || i >= m.n {
		panic(fmt.Sprintf("reference: CSR Row(%d) outside %d rows", i, m.n))
	}
	lo, hi := m.rowPtr[i], m.rowPtr[i+1]
	return slices.Clone(m.col[lo:hi]), slices.Clone(m.val[lo:hi])
}

// Triplets returns copies of the stored entries in row-major order, suitable
// for NewCSR or for building another sparse format.
func (m *CSR) Triplets() (rows, cols []int, vals []float64) {
	rows = make([]int, len(m.val))
	for i := range m.n {
		for k := m.rowPtr[i]; k < m.rowPtr[i+1]; k++ {
			rows[k] = i
		}
	}
	return rows, slices.Clone(m.col), slices.Clone(m.val)
}

// Diagonal returns a copy of the main diagonal.
func (m *CSR) Diagonal() []float64 {
	d := make([]float64, m.n)
	for i := range m.n {
		d[i] = m.At(i, i)
	}
	return d
}

// Dense returns A as a new dense matrix.
func (m *CSR) Dense() *mat.Dense {
	d := mat.NewDense(m.n, m.n, nil)
	for i := range m.n {
		for k := m.rowPtr[i]; k < m.rowPtr[i+1]; k++ {
			d.Set(i, m.col[k], m.val[k])
		}
	}
	return d
}

// FrobeniusNorm returns ‖A‖_F = (Σ a_ij²)^½, accumulated with scaling so it
// neither overflows nor underflows (the LAPACK dnrm2 idea).
func (m *CSR) FrobeniusNorm() float64 { return nrm2(m.val) }

// JacobiPreconditioner returns the preconditioner r ↦ D⁻¹r with D the
// diagonal of a, for use as CGSettings.Precond or GMRESSettings.Precond.
// It fails with ErrSingular if a diagonal entry is zero.
func JacobiPreconditioner(a *CSR) (Preconditioner, error) {
	if a == nil {
		return nil, fmt.Errorf("reference: JacobiPreconditioner: nil matrix: %w", ErrInput)
	}
	d := a.Diagonal()
	inv := make([]float64, len(d))
	for i, v := range d {
		if v == 0 {
			return nil, fmt.Errorf("reference: JacobiPreconditioner: zero diagonal at %d: %w", i, ErrSingular)
		}
		inv[i] = 1 / v
	}
	return func(dst, r []float64) {
		for i := range dst {
			dst[i] = inv[i] * r[i]
		}
	}, nil
}
