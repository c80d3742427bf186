package pgstore

import (
	"testing"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

// BenchmarkReserveComplete measures one request's store work on a fresh
// key: the reservation, then the completion.
func BenchmarkReserveComplete(b *testing.B) {
	dsn := testenv.PostgresDSN(b)
	storetest.BenchmarkReserveComplete(b, openStore(b, dsn, newSchema(b, dsn)))
}
