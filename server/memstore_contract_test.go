package server_test

import (
	"testing"
	"time"

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) server.Store {
		s := server.NewMemoryStore()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
	storetest.RunLegacyFingerprints(t, func(t *testing.T) server.Store {
		s := server.NewMemoryStore()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
	storetest.RunReservationGrace(t, func(t *testing.T, grace time.Duration) server.Store {
		s := server.NewMemoryStore(server.WithReservationGrace(grace))
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
