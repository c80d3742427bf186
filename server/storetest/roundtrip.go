package storetest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// ResponseSeed is one seed of FuzzResponseRoundTrip: a response with one
// header, which the fuzz target gives two values.
type ResponseSeed struct {
	Status                  int
	HeaderName, HeaderValue string
	Body                    []byte
	ResourceID              string
}

// commonResponseSeeds are the seeds every store is fuzzed from: binary
// header values and bodies, empty and nil bodies, and the edge statuses.
func commonResponseSeeds() []ResponseSeed {
	return []ResponseSeed{
		{201, "Content-Type", "application/json", []byte(`{"id":"pay_1"}`), "pay_1"},
		{202, "Location", "/v1/operations/op_1", []byte{}, "op_1"},
		{500, "X-Bin", "caf\xe9", []byte{0, 0xff, '\n', 0x80}, ""},
		{999, "", "", []byte(nil), "id with spaces"},
		{100, "Retry-After", "1", []byte("\"quoted\" \\ and ✓"), "é"},
	}
}

// FuzzResponseRoundTrip fuzzes s with responses of any status, header
// bytes, body and resource id: every response s accepts must replay byte
// for byte. refusal returns what the error must say when s cannot hold
// resp, or "" when s must store it; a nil refusal means s stores every
// response with a status of 100-999. extra seeds follow the common ones.
func FuzzResponseRoundTrip(f *testing.F, s server.Store, refusal func(resp server.Response) string, extra ...ResponseSeed) {
	f.Helper()
	for _, seed := range append(commonResponseSeeds(), extra...) {
		f.Add(seed.Status, seed.HeaderName, seed.HeaderValue, seed.Body, seed.ResourceID)
	}
	f.Fuzz(func(t *testing.T, status int, name, value string, body []byte, resourceID string) {
		if status < 100 || status > 999 {
			t.Skip("stores refuse statuses outside 100-999")
		}
		ctx := t.Context()
		scope := NewScope()
		res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
		require.NoError(t, err)
		want := server.Response{Status: status, Header: http.Header{name: {value, value + "2"}}, Body: body, ResourceID: resourceID}
		err = s.Complete(ctx, server.Completion{Reservation: *res, Response: want, Retention: time.Minute})
		if refusal != nil {
			if reason := refusal(want); reason != "" {
				require.ErrorContains(t, err, reason)
				return
			}
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
