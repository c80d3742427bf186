package storetest

import (
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Durations the payments cases wait on, as in server/storetest.
const (
	longLease     = time.Hour
	longRetention = time.Hour
	pollEvery     = 10 * time.Millisecond
	waitAtMost    = 5 * time.Second
)

// eventually calls try every pollEvery until it reports done, and fails
// the test if that takes longer than waitAtMost or try returns an error.
// Unlike require.Eventually it runs try on the test's goroutine, so try may
// assert and write the caller's variables.
func eventually(t *testing.T, what string, try func() (done bool, err error)) {
	t.Helper()
	deadline := time.Now().Add(waitAtMost)
	for {
		done, err := try()
		require.NoError(t, err)
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v", what, waitAtMost)
		}
		time.Sleep(pollEvery)
	}
}

// uniqueScope returns a POST scope with a fresh principal.
func uniqueScope(t *testing.T) testserver.Scope {
	t.Helper()
	return testserver.Scope{Principal: "tok_" + rand.Text(), Method: http.MethodPost, Route: "/v1/payments"}
}

func newKey() string { return rand.Text() }

// fingerprintOf stands in for testserver.Fingerprint: stores treat it as
// an opaque string.
func fingerprintOf(payload string) string {
	return testserver.Fingerprint(http.MethodPost, "/v1/payments", []byte(payload))
}

func sampleResponse(body string) testserver.Response {
	return testserver.Response{
		Status:     http.StatusCreated,
		Header:     http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/payments/pay_1"}},
		Body:       []byte(body),
		ResourceID: "pay_1",
	}
}

// mustReserve reserves a key that must be free.
func mustReserve(t *testing.T, s testserver.Store, scope testserver.Scope, key, fp string, lease time.Duration) testserver.Reservation {
	t.Helper()
	res, rec, err := s.Reserve(t.Context(), scope, key, fp, lease)
	require.NoError(t, err)
	require.Nil(t, rec, "a free key must not return a record")
	require.NotNil(t, res, "a free key must be reserved")
	return *res
}

// mustFind reserves a key that must be taken and returns its record.
func mustFind(t *testing.T, s testserver.Store, scope testserver.Scope, key, fp string) testserver.Record {
	t.Helper()
	res, rec, err := s.Reserve(t.Context(), scope, key, fp, longLease)
	require.NoError(t, err)
	require.Nil(t, res, "a taken key must not be reserved again")
	require.NotNil(t, rec, "a taken key must return its record")
	return *rec
}

func complete(t *testing.T, s testserver.Store, res testserver.Reservation, resp testserver.Response, retention time.Duration) error {
	t.Helper()
	return s.Complete(t.Context(), testserver.Completion{Reservation: res, Response: resp, Retention: retention})
}

func assertSameResponse(t *testing.T, want testserver.Response, got *testserver.Response) {
	t.Helper()
	if !assert.NotNil(t, got, "completed record has no response") {
		return
	}
	assert.Equal(t, want.Status, got.Status)
	assert.Equal(t, want.Header, got.Header)
	assert.Equal(t, want.Body, got.Body)
	assert.Equal(t, want.ResourceID, got.ResourceID)
}

// NewPayment returns a succeeded payment of principal with a fresh id,
// created now to the microsecond, the finest time every store keeps.
func NewPayment(principal string) testserver.Payment {
	return testserver.Payment{
		ID: "pay_" + rand.Text(), Principal: principal, Amount: 100, Currency: "EUR",
		Status: "succeeded", Created: time.Now().UTC().Truncate(time.Microsecond),
	}
}
