package storetest

import (
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// The helpers below are the contract suite's own, exported for the
// suites of stores built on top of a server.Store (the reference
// server's payments stores, a store of your own).

// Eventually calls try every pollEvery until it reports done, and fails
// the test if that takes longer than waitAtMost or try returns an error.
// Unlike require.Eventually it runs try on the test's goroutine, so try may
// assert and write the caller's variables.
func Eventually(t *testing.T, what string, try func() (done bool, err error)) {
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

// UniqueScope returns a POST scope with a fresh principal.
func UniqueScope(t *testing.T) server.Scope {
	t.Helper()
	return server.Scope{Principal: "tok_" + rand.Text(), Method: http.MethodPost, Route: "/v1/payments"}
}

// NewKey returns a fresh random key.
func NewKey() string { return rand.Text() }

// FingerprintOf stands in for server.Fingerprint: stores treat it as
// an opaque string.
func FingerprintOf(payload string) string {
	return server.Fingerprint(http.MethodPost, "/v1/payments", []byte(payload))
}

// SampleResponse is a 201 answer with body, as a payments handler gives.
func SampleResponse(body string) server.Response {
	return server.Response{
		Status:     http.StatusCreated,
		Header:     http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/payments/pay_1"}},
		Body:       []byte(body),
		ResourceID: "pay_1",
	}
}

// MustReserve reserves a key that must be free.
func MustReserve(t *testing.T, s server.Store, scope server.Scope, key, fp string, lease time.Duration) server.Reservation {
	t.Helper()
	res, rec, err := s.Reserve(t.Context(), scope, key, fp, lease)
	require.NoError(t, err)
	require.Nil(t, rec, "a free key must not return a record")
	require.NotNil(t, res, "a free key must be reserved")
	return *res
}

// MustFind reserves a key that must be taken and returns its record.
func MustFind(t *testing.T, s server.Store, scope server.Scope, key, fp string) server.Record {
	t.Helper()
	res, rec, err := s.Reserve(t.Context(), scope, key, fp, longLease)
	require.NoError(t, err)
	require.Nil(t, res, "a taken key must not be reserved again")
	require.NotNil(t, rec, "a taken key must return its record")
	return *rec
}

// Complete stores resp as the answer of res, kept for retention.
func Complete(t *testing.T, s server.Store, res server.Reservation, resp server.Response, retention time.Duration) error {
	t.Helper()
	return s.Complete(t.Context(), server.Completion{Reservation: res, Response: resp, Retention: retention})
}

// AssertSameResponse checks that got is the stored form of want.
func AssertSameResponse(t *testing.T, want server.Response, got *server.Response) {
	t.Helper()
	if !assert.NotNil(t, got, "completed record has no response") {
		return
	}
	assert.Equal(t, want.Status, got.Status)
	assert.Equal(t, want.Header, got.Header)
	assert.Equal(t, want.Body, got.Body)
	assert.Equal(t, want.ResourceID, got.ResourceID)
}
