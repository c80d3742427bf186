package keystore_test

import (
	"testing"

	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/storetest"
)

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) keystore.Store { return keystore.NewMemory() })
}
