package testserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryStoreContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) testserver.Store {
		s := testserver.NewMemoryStore()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
	storetest.RunReservationGrace(t, func(t *testing.T, grace time.Duration) testserver.Store {
		s := testserver.NewMemoryStore(testserver.WithReservationGrace(grace))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// Two handles on one memory store behave like two replicas on one
// database: the replica cases hold for the store the tests use most.
func TestMemoryStoreReplicas(t *testing.T) {
	t.Parallel()
	storetest.RunReplicas(t, func(t *testing.T) (a, b testserver.Store) {
		s := testserver.NewMemoryStore()
		t.Cleanup(func() { _ = s.Close() })
		return s, s
	})
}

// FuzzMemoryResponseRoundTrip holds the memory store's encoded responses
// to the replay contract every store meets.
func FuzzMemoryResponseRoundTrip(f *testing.F) {
	s := testserver.NewMemoryStore()
	f.Cleanup(func() { _ = s.Close() })
	storetest.FuzzResponseRoundTrip(f, s, nil)
}

func TestMemoryStoreListsEqualTimesNewestInsertFirst(t *testing.T) {
	t.Parallel()
	s := testserver.NewMemoryStore()
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	created := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, id := range []string{"pay_a", "pay_b", "pay_c"} {
		require.NoError(t, s.CreatePayment(ctx, testserver.Payment{ID: id, Principal: "tok", Created: created}, nil))
	}
	list, err := s.ListPayments(ctx, "tok")
	require.NoError(t, err)
	require.Len(t, list, 3)
	assert.Equal(t, []string{"pay_c", "pay_b", "pay_a"}, []string{list[0].ID, list[1].ID, list[2].ID})
}

func TestMemoryStorePaymentsFailAfterClose(t *testing.T) {
	t.Parallel()
	s := testserver.NewMemoryStore()
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is harmless")
	ctx := context.Background()
	assert.Error(t, s.CreatePayment(ctx, testserver.Payment{}, nil), "payment without id")
	assert.Error(t, s.CreateOperation(ctx, testserver.Operation{}, nil), "operation without id")
	_, err := s.CountPayments(ctx)
	assert.Error(t, err)
	_, err = s.GetPayment(ctx, "tok", "pay_x")
	assert.Error(t, err)
	assert.NotErrorIs(t, err, testserver.ErrNotFound, "a closed store is not an empty one")
}
