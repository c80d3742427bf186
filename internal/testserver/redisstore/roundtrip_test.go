package redisstore

import (
	"testing"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

// A stored response replays byte for byte, whatever its headers, body and
// resource id hold.
func FuzzResponseRoundTrip(f *testing.F) {
	url := testenv.RedisURL(f)
	storetest.FuzzResponseRoundTrip(f, openStore(f, url, newPrefix(f, url)), nil)
}
