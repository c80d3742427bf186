package redisstore

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// completedValue is what the scripts write for a completion: the state
// letter, expiry, creation time and fingerprint before the response.
func completedValue(expires, created int64, fp string, r server.Response) string {
	head := "C" + strconv.FormatInt(expires, 10) + ":" + strconv.FormatInt(created, 10) + ":" +
		strconv.Itoa(len(fp)) + ":" + fp
	return head + string(encodeResponse(r))
}

// A response comes back as it went in, whatever bytes its parts hold:
// separators, digits and newlines in names, values, ids and bodies, a nil
// header apart from an empty one, a name without values.
func TestStringRecordRoundTrip(t *testing.T) {
	t.Parallel()
	scope := server.Scope{Principal: "p", Method: "POST", Route: "/r"}
	for _, r := range []server.Response{
		{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"pay_1"}`), ResourceID: "pay_1"},
		{Status: 204},
		{Status: 200, Header: http.Header{}, Body: []byte("12:3:"), ResourceID: "4:x"},
		{Status: 500, Header: http.Header{"X-A": {"1:2", "", "\n"}, "X-Empty": {}, "X-Nil": nil, "3:": {"0:"}}, Body: []byte{0, ':', '9'}},
	} {
		v := completedValue(1700000003600000, 1700000000000, "fp:with:colons", r)
		rec, err := parseStringRecord(scope, "k", v)
		require.NoError(t, err, "%q", v)
		assert.Equal(t, server.StateCompleted, rec.State)
		assert.Equal(t, "fp:with:colons", rec.Fingerprint)
		assert.Equal(t, time.UnixMilli(1700000003600000), rec.ExpiresAt)
		assert.Equal(t, time.UnixMilli(1700000000000), rec.CreatedAt)
		require.NotNil(t, rec.Response)
		assert.Equal(t, r.Status, rec.Response.Status)
		assert.Equal(t, r.Header, rec.Response.Header)
		assert.Equal(t, string(r.Body), string(rec.Response.Body))
		assert.Equal(t, r.ResourceID, rec.Response.ResourceID)
	}

	rec, err := parseStringRecord(scope, "k", "R1700000060000:1700000000000:TOKEN:fp:with:colons")
	require.NoError(t, err)
	assert.Equal(t, server.StateReserved, rec.State)
	assert.Equal(t, "TOKEN", rec.Token)
	assert.Equal(t, "fp:with:colons", rec.Fingerprint)
	assert.Equal(t, time.UnixMilli(1700000060000), rec.LeaseExpires)
}

// A damaged record is an error, never a panic or a half-read response.
func FuzzParseStringRecord(f *testing.F) {
	f.Add(completedValue(2, 1, "fp", server.Response{Status: 201, Header: http.Header{"A": {"b"}}, Body: []byte("x"), ResourceID: "r"}))
	f.Add("R2:1:T:fp")
	f.Add("C2:1:99:fp")
	f.Add("C2:1:2:fp201:0:99999:")
	f.Add("")
	f.Add("X")
	f.Fuzz(func(t *testing.T, v string) {
		rec, err := parseStringRecord(server.Scope{}, "k", v)
		if err == nil && rec.State == server.StateCompleted {
			assert.NotNil(t, rec.Response)
		}
	})
}

// Every value the tests above accept is rejected once cut short inside
// its response.
func TestTruncatedRecordIsAnError(t *testing.T) {
	t.Parallel()
	v := completedValue(2, 1, "fp", server.Response{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, ResourceID: "pay_1"})
	for cut := 1; cut < len(v); cut++ {
		if _, err := parseStringRecord(server.Scope{}, "k", v[:cut]); err == nil {
			// A cut inside the body is undetectable by design: the body is
			// what is left. Here the body is empty, so every cut is inside
			// a counted field.
			t.Errorf("a record cut to %q was read", v[:cut])
		}
	}
}
