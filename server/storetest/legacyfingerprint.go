package storetest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// RunLegacyFingerprints checks, on the store newStore returns, that the
// layer answers records stored under the first fingerprint layout
// (server.Fingerprint, before the request target was fingerprinted) as it
// did before the upgrade: a completed key replays, an abandoned
// reservation is taken over by its retry, and another payload is still
// key reuse.
func RunLegacyFingerprints(t *testing.T, newStore func(t *testing.T) server.Store) {
	t.Helper()
	t.Run("CompletedRecordReplays", func(t *testing.T) {
		t.Parallel()
		testLegacyCompletedReplays(t, newStore(t))
	})
	t.Run("AbandonedReservationIsTakenOver", func(t *testing.T) {
		t.Parallel()
		testLegacyReservationTakenOver(t, newStore(t))
	})
}

const legacyBody = `{"amount":1000,"currency":"EUR"}`

// legacyLayer is the layer over s with every request acting for scope's
// principal, and the handler's run count.
func legacyLayer(t *testing.T, s server.Store, scope server.Scope) (http.Handler, *atomic.Int32) {
	t.Helper()
	m, err := server.New(s, server.WithPrincipal(func(*http.Request) (string, error) { return scope.Principal, nil }))
	require.NoError(t, err)
	runs := &atomic.Int32{}
	return m.Wrap(scope.Route, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"pay_new"}`))
	})), runs
}

func legacyPost(h http.Handler, scope server.Scope, key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, scope.Route, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(server.KeyHeader, key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func testLegacyCompletedReplays(t *testing.T, s server.Store) {
	scope, key := UniqueScope(t), NewKey()
	legacy := server.Fingerprint(scope.Method, scope.Route, []byte(legacyBody))
	res := MustReserve(t, s, scope, key, legacy, longLease)
	stored := SampleResponse(`{"id":"pay_1"}`)
	require.NoError(t, Complete(t, s, res, stored, time.Hour))

	h, runs := legacyLayer(t, s, scope)
	again := legacyPost(h, scope, key, legacyBody)
	assert.Equal(t, http.StatusCreated, again.Code)
	assert.Equal(t, "true", again.Header().Get(server.ReplayedHeader), "a retry of a key completed before the upgrade replays")
	assert.Equal(t, string(stored.Body), again.Body.String())
	other := legacyPost(h, scope, key, `{"amount":5000,"currency":"EUR"}`)
	assert.Equal(t, http.StatusUnprocessableEntity, other.Code, "another payload is still key reuse")
	assert.Zero(t, runs.Load(), "nothing runs again")
}

func testLegacyReservationTakenOver(t *testing.T, s server.Store) {
	scope, key := UniqueScope(t), NewKey()
	legacy := server.Fingerprint(scope.Method, scope.Route, []byte(legacyBody))
	MustReserve(t, s, scope, key, legacy, time.Millisecond)

	h, runs := legacyLayer(t, s, scope)
	Eventually(t, "the retry takes the expired reservation over", func() (bool, error) {
		w := legacyPost(h, scope, key, legacyBody)
		switch w.Code {
		case http.StatusCreated:
			return true, nil
		case http.StatusConflict:
			return false, nil // the lease has not expired yet by the store's clock
		}
		t.Fatalf("retry of an abandoned reservation: got %d %s", w.Code, w.Body)
		return false, nil
	})
	assert.Equal(t, int32(1), runs.Load())
	replay := legacyPost(h, scope, key, legacyBody)
	assert.Equal(t, "true", replay.Header().Get(server.ReplayedHeader))
	assert.Equal(t, int32(1), runs.Load())
}
