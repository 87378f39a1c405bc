package precision

import (
	"fmt"
	"math"

	"github.com/anemone-go/anemone/internal/isnil"
	"gonum.org/v1/gonum/mat"
)

// Limits of the limb split.
const (
	// MaxBits is the widest digit: with |d| ≤ 2^(b−1), a product of two
	// digits is an integer of magnitude ≤ 2^(2b−2) = 1024 at b = 6, exact in
	// fp16 (whose integers are exact up to 2048); at b = 7 products reach
	// 4096 and need 12 bits, which fp16 would round.
	MaxBits = 6
	// MaxLimbs is the largest limb count: 12 limbs of 6 bits are 72 bits,
	// past float64's 53, so more limbs could add nothing.
	MaxLimbs = 12
	// DefaultBits is the digit width of Compensated products.
	DefaultBits = 6
	// DefaultLimbs is the limb count of Compensated products: error about
	// 40·2^(−6·4) ≈ 2e-6 by the rule of thumb, measured below 1e-6 on random
	// 1024×1024 products (docs/NUMERICS.md §2: 6.5e-7).
	DefaultLimbs = 4
)

// float64Limbs returns the limb count Float64 mode uses: enough b-bit
// digits to cover float64's 53-bit significand, ⌈53/b⌉ (9 at b = 6).
func float64Limbs(bits int) int { return min((53+bits-1)/bits, MaxLimbs) }

// VectorLimbs is a float64 vector split into Bits-bit balanced signed
// digits with one shared exponent:
//
//	x_i ≈ 2^Exp · Σ_l Digits[l][i] · 2^(−Bits·(l+1))
//
// Every digit is an integer with |d| ≤ 2^(Bits−1), exact in fp16. Exp is
// chosen so that max|x|·2^−Exp ∈ [¼, ½); then each digit is the rounded
// remainder of the previous ones and |x_i − Join_i| ≤ 2^(Exp−Bits·L−1) for
// L limbs: a relative error ≤ 2^(1−Bits·L) of max|x|.
type VectorLimbs struct {
	Exp    int
	Bits   int
	Digits [][]float64 // L × n
}

// MatrixLimbs is a matrix split like VectorLimbs, with one exponent per row:
//
//	a_ij ≈ 2^RowExp[i] · Σ_l Digits[l][i·Cols+j] · 2^(−Bits·(l+1))
type MatrixLimbs struct {
	RowExp     []int
	Bits       int
	Digits     [][]float64 // L × (Rows·Cols), row-major
	Rows, Cols int
}

// checkLimbs validates a limb count and digit width.
func checkLimbs(fn string, limbs, bits int) error {
	if limbs < 1 || limbs > MaxLimbs {
		return fmt.Errorf("precision: %s: %d limbs, want 1 to %d: %w", fn, limbs, MaxLimbs, ErrInvalid)
	}
	if bits < 1 || bits > MaxBits {
		return fmt.Errorf("precision: %s: %d-bit digits, want 1 to %d (digit products must be exact in fp16): %w", fn, bits, MaxBits, ErrInvalid)
	}
	return nil
}

// SplitVector splits x into limbs digits of bits bits each (see
// VectorLimbs). limbs must lie in [1, MaxLimbs] and bits in [1, MaxBits]
// (ErrInvalid); NaN or ±Inf is ErrRange. An all-zero x has Exp 0 and zero
// digits. x is not modified.
func SplitVector(x []float64, limbs, bits int) (VectorLimbs, error) {
	if err := checkLimbs("SplitVector", limbs, bits); err != nil {
		return VectorLimbs{}, err
	}
	v := VectorLimbs{Bits: bits, Digits: make([][]float64, limbs)}
	for l := range v.Digits {
		v.Digits[l] = make([]float64, len(x))
	}
	e, err := splitRow("SplitVector", x, bits, v.Digits, 0)
	if err != nil {
		return VectorLimbs{}, err
	}
	v.Exp = e
	return v, nil
}

// SplitMatrix splits a into limbs digits of bits bits each, with one
// exponent per row (see MatrixLimbs). Errors as SplitVector; a nil matrix
// is an error wrapping ErrShape.
func SplitMatrix(a mat.Matrix, limbs, bits int) (MatrixLimbs, error) {
	if err := checkLimbs("SplitMatrix", limbs, bits); err != nil {
		return MatrixLimbs{}, err
	}
	if isnil.Matrix(a) {
		return MatrixLimbs{}, fmt.Errorf("precision: SplitMatrix: nil matrix: %w", ErrShape)
	}
	r, c := a.Dims()
	m := MatrixLimbs{RowExp: make([]int, r), Bits: bits, Digits: make([][]float64, limbs), Rows: r, Cols: c}
	for l := range m.Digits {
		m.Digits[l] = make([]float64, r*c)
	}
	row := make([]float64, c)
	for i := range r {
		for j := range c {
			row[j] = a.At(i, j)
		}
		e, err := splitRow("SplitMatrix", row, bits, m.Digits, i*c)
		if err != nil {
			return MatrixLimbs{}, fmt.Errorf("%w (row %d)", err, i)
		}
		m.RowExp[i] = e
	}
	return m, nil
}

// splitRow writes the digits of x into digits[l][off:off+len(x)] and
// returns the shared exponent. Every step is exact in float64: t·2^b is a
// power-of-two scaling, and t·2^b − round(t·2^b) is the exact remainder.
func splitRow(fn string, x []float64, bits int, digits [][]float64, off int) (int, error) {
	m, err := maxAbs(fn, x)
	if err != nil || m == 0 {
		return 0, err
	}
	_, p := math.Frexp(m) // m ∈ [2^(p−1), 2^p)
	e := p + 1            // m·2^−e ∈ [¼, ½)
	radix := float64(int(1) << bits)
	// Adding and subtracting 1.5·2⁵² rounds a float64 of magnitude below
	// 2⁵¹ to the nearest integer, ties to even, exactly as RoundToEven.
	const round = 0x1.8p52
	// e ∈ [−1072, maxSplitExp]; 2^−e is a float64 unless e < −1023.
	scale := math.Ldexp(1, -e)
	for i, v := range x {
		// |t| ≤ ½; exact unless t is a float64 subnormal (then correctly
		// rounded, the same by multiplication or Ldexp).
		t := v * scale
		if e < -1000 {
			t = math.Ldexp(v, -e)
		}
		for _, row := range digits {
			t *= radix // exact; |t| ≤ 2^(b−1)
			d := (t + round) - round
			row[off+i] = d // |d| ≤ 2^(b−1)
			t -= d         // exact; |t| ≤ ½
		}
	}
	return e, nil
}

// Limbs is the number of limbs.
func (v VectorLimbs) Limbs() int { return len(v.Digits) }

// maxSplitExp is the largest exponent a split gives (max|x| = MaxFloat64).
const maxSplitExp = 1025

// Join reconstructs the float64 vector 2^Exp·Σ_l d_l·2^(−Bits·(l+1)),
// adding the smallest limbs first. The join of a split of finite x is
// finite: where the digits sum to 2¹⁰²⁴ (x within the last digit's rounding
// of ±math.MaxFloat64) it is ±math.MaxFloat64.
func (v VectorLimbs) Join() []float64 {
	if len(v.Digits) == 0 {
		return nil
	}
	out := make([]float64, len(v.Digits[0]))
	for i := range out {
		out[i] = joinDigits(v.Digits, i, v.Bits, v.Exp)
	}
	return out
}

// Limbs is the number of limbs.
func (m MatrixLimbs) Limbs() int { return len(m.Digits) }

// Join reconstructs the matrix, row by row as VectorLimbs.Join.
func (m MatrixLimbs) Join() *mat.Dense {
	if m.Rows == 0 || m.Cols == 0 {
		return &mat.Dense{}
	}
	out := mat.NewDense(m.Rows, m.Cols, nil)
	for i := range m.Rows {
		for j := range m.Cols {
			out.Set(i, j, joinDigits(m.Digits, i*m.Cols+j, m.Bits, m.RowExp[i]))
		}
	}
	return out
}

// joinDigits is element k of a join. The digits of a finite value never
// join to ±Inf: next to the largest float64 values (|x| > (1 − 2^−(b·L+1))
// ·2¹⁰²⁴) the rounded digits can sum to exactly ½ at exponent 1025, that is
// 2¹⁰²⁴, one step past float64's range; that sum is clamped to
// ±math.MaxFloat64, which is closer to x and within the split's bound.
func joinDigits(digits [][]float64, k, bits, exp int) float64 {
	s := 0.0
	for l := len(digits) - 1; l >= 0; l-- {
		s += math.Ldexp(digits[l][k], -bits*(l+1))
	}
	y := ldexp(s, exp)
	if math.IsInf(y, 0) && !math.IsInf(s, 0) && exp <= maxSplitExp {
		y = math.Copysign(math.MaxFloat64, s)
	}
	return y
}
