package testserver_test

import (
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
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
