package testserver_test

import (
	"testing"

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
}
