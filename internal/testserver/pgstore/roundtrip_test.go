package pgstore

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// A stored response replays byte for byte, whatever its headers and body
// hold; a resource id PostgreSQL text cannot hold is refused clearly.
func FuzzResponseRoundTrip(f *testing.F) {
	dsn := testDSN(f)
	s := openStore(f, dsn, newSchema(f, dsn))
	f.Add(201, "Content-Type", "application/json", []byte(`{"id":"pay_1"}`), "pay_1")
	f.Add(202, "Location", "/v1/operations/op_1", []byte{}, "op_1")
	f.Add(500, "X-Bin", "caf\xe9", []byte{0, 0xff, '\n', 0x80}, "")
	f.Add(999, "", "", []byte(nil), "id with spaces")
	f.Add(100, "Retry-After", "1", []byte("\"quoted\" \\ and ✓"), "é")
	f.Add(201, "0", "0", []byte("0"), "\x00")
	f.Add(201, "X", "v", []byte("b"), "\xff")
	f.Fuzz(func(t *testing.T, status int, name, value string, body []byte, resourceID string) {
		if status < 100 || status > 999 {
			t.Skip("stores refuse statuses outside 100-999")
		}
		ctx := t.Context()
		scope := newScope()
		res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
		require.NoError(t, err)
		want := testserver.Response{Status: status, Header: http.Header{name: {value, value + "2"}}, Body: body, ResourceID: resourceID}
		err = s.Complete(ctx, testserver.Completion{Reservation: *res, Response: want, Retention: time.Minute})
		if strings.ContainsRune(resourceID, 0) || !utf8.ValidString(resourceID) {
			// A resource id is text; headers and body are bytes.
			require.ErrorContains(t, err, "resource id")
			return
		}
		require.NoError(t, err)

		_, rec, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Equal(t, want.Status, rec.Response.Status)
		assert.Equal(t, want.Header, rec.Response.Header)
		assert.Equal(t, string(want.Body), string(rec.Response.Body))
		assert.Equal(t, want.ResourceID, rec.Response.ResourceID)
	})
}
