package ane

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBudget(t *testing.T) {
	b := NewBudget(3)
	for i := range 3 {
		require.NoError(t, b.Take(), "compile %d", i)
	}
	require.Equal(t, 3, b.Used())
	require.Equal(t, 0, b.Remaining())
	err := b.Take()
	require.ErrorIs(t, err, ErrBudget)
	require.Contains(t, err.Error(), "3 of 3")
	require.Equal(t, 3, b.Used(), "a refused compile is not counted")

	b.SetLimit(4)
	require.Equal(t, 4, b.Limit())
	require.NoError(t, b.Take())
	require.ErrorIs(t, b.Take(), ErrBudget)

	b.SetLimit(1) // below what was used
	require.Equal(t, 0, b.Remaining())
	require.ErrorIs(t, b.Take(), ErrBudget)

	require.ErrorIs(t, NewBudget(0).Take(), ErrBudget)
	require.ErrorIs(t, NewBudget(-5).Take(), ErrBudget)

	require.Equal(t, DefaultCompileBudget, ProcessBudget().Limit())
	require.Equal(t, 100, DefaultCompileBudget)
}

func TestBudgetConcurrent(t *testing.T) {
	const limit, tries = 20, 64
	b := NewBudget(limit)
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range tries {
		wg.Go(func() {
			if b.Take() == nil {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(limit), ok.Load())
	require.Equal(t, limit, b.Used())
}
