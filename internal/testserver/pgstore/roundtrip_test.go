package pgstore

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

// A stored response replays byte for byte, whatever its headers and body
// hold; a resource id PostgreSQL text cannot hold is refused clearly.
func FuzzResponseRoundTrip(f *testing.F) {
	dsn := testenv.PostgresDSN(f)
	s := openStore(f, dsn, newSchema(f, dsn))
	storetest.FuzzResponseRoundTrip(f, s, func(resp testserver.Response) string {
		if strings.ContainsRune(resp.ResourceID, 0) || !utf8.ValidString(resp.ResourceID) {
			// A resource id is text; headers and body are bytes.
			return "resource id"
		}
		return ""
	},
		storetest.ResponseSeed{Status: 201, HeaderName: "0", HeaderValue: "0", Body: []byte("0"), ResourceID: "\x00"},
		storetest.ResponseSeed{Status: 201, HeaderName: "X", HeaderValue: "v", Body: []byte("b"), ResourceID: "\xff"},
	)
}
