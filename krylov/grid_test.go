package krylov

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anemone-go/anemone/dataflow"
	"github.com/anemone-go/anemone/reference"
)

// TestGridOperatorPastOneRow: a user GridOperator of 160×130 = 20,800
// unknowns (past MaxUnknowns, so impossible on [1, n] vectors) solves to
// 1e-10 by CG and by GMRES, its vectors on the grid. The grid is not square,
// so a swapped nx and ny would give a wrong operator and fail the check
// against the host residual.
func TestGridOperatorPastOneRow(t *testing.T) {
	const nx, ny = 160, 130
	op := newJumpDiffusion(nx, ny)
	require.Greater(t, nx*ny, MaxUnknowns)
	b := randVec(nx*ny, 5)
	dev := simDevice(t, "sim")
	for _, solver := range []struct {
		name  string
		solve func(Operator, []float64, *Settings) (Result, error)
	}{{"CG", CG}, {"GMRES", GMRES}} {
		t.Run(solver.name, func(t *testing.T) {
			res, err := solver.solve(op, b, &Settings{Device: dev, MaxDispatches: 2000})
			require.NoError(t, err)
			require.True(t, res.Converged)
			require.LessOrEqual(t, reference.RelResidual(hostOp{op}, res.X, b), 1e-10)
		})
	}
}

// badGrid is a GridOperator whose Grid or DeviceApply is wrong.
type badGrid struct {
	*jumpDiffusion
	nx, ny int
	flat   bool // DeviceApply returns [1, n] instead of the grid
}

func (b badGrid) Grid() (int, int) { return b.nx, b.ny }

func (b badGrid) DeviceApply(g *dataflow.Graph, u dataflow.Value, scale int) dataflow.Value {
	y := b.jumpDiffusion.DeviceApply(g, u, scale)
	if b.flat {
		return g.Reshape(y, dataflow.Shape{1, b.Dims()})
	}
	return y
}

// TestGridOperatorErrors: a Grid() that does not match Dims, or a grid past
// the device's limits, is refused before any graph is built, and a
// DeviceApply that leaves the grid is refused with the shapes named.
func TestGridOperatorErrors(t *testing.T) {
	base := newJumpDiffusion(8, 8)
	b := randVec(64, 1)
	dev := simDevice(t, "sim")
	for _, c := range []struct {
		name string
		op   Operator
		want error
	}{
		{"grid does not match Dims", badGrid{jumpDiffusion: base, nx: 8, ny: 9}, ErrShape},
		{"zero grid", badGrid{jumpDiffusion: base, nx: 0, ny: 64}, ErrShape},
		{"flat DeviceApply", badGrid{jumpDiffusion: base, nx: 8, ny: 8, flat: true}, ErrShape},
	} {
		for _, solve := range []func(Operator, []float64, *Settings) (Result, error){CG, GMRES} {
			_, err := solve(c.op, b, &Settings{Device: dev})
			require.ErrorIs(t, err, c.want, c.name)
		}
	}
	wide := &jumpDiffusion{nx: MaxGridWidth + 1, ny: 1}
	_, err := deviceShape("CG", wide)
	require.True(t, errors.Is(err, ErrUnsupported), "%v", err)
	require.Contains(t, err.Error(), "unknowns")
}

// TestGridOperatorTiny: a user GridOperator of one point, one row, one
// column and 3×2 solves by CG and GMRES to Tol, checked against the host's
// own residual, and b = 0 gives x = 0.
func TestGridOperatorTiny(t *testing.T) {
	dev := simDevice(t, "sim")
	for _, sz := range [][2]int{{1, 1}, {1, 7}, {7, 1}, {3, 2}} {
		op := newJumpDiffusion(sz[0], sz[1])
		b := randVec(sz[0]*sz[1], 3)
		for name, solve := range map[string]func(Operator, []float64, *Settings) (Result, error){"CG": CG, "GMRES": GMRES} {
			res, err := solve(op, b, &Settings{Device: dev})
			require.NoError(t, err, "%s %v", name, sz)
			require.LessOrEqual(t, reference.RelResidual(hostOp{op}, res.X, b), DefaultTol, "%s %v", name, sz)
			res, err = solve(op, make([]float64, len(b)), &Settings{Device: dev})
			require.NoError(t, err)
			require.Equal(t, make([]float64, len(b)), res.X)
		}
	}
}

// TestGridOperatorJacobi: Jacobi scaling of a user GridOperator is applied
// on the device on the grid (its diagonal a grid-shaped constant).
func TestGridOperatorJacobi(t *testing.T) {
	op := newJumpDiffusion(24, 20)
	pre, err := Jacobi(op)
	require.NoError(t, err)
	b := randVec(24*20, 9)
	res, err := CG(op, b, &Settings{Device: simDevice(t, "sim"), Precond: pre})
	require.NoError(t, err)
	require.LessOrEqual(t, reference.RelResidual(hostOp{op}, res.X, b), DefaultTol)
}
