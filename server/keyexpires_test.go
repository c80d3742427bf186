package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// expiresOf reads the Idempotency-Key-Expires of an answer.
func expiresOf(t *testing.T, h http.Header) time.Time {
	t.Helper()
	v := h.Get(server.KeyExpiresHeader)
	require.NotEmpty(t, v, "%s missing", server.KeyExpiresHeader)
	at, err := http.ParseTime(v)
	require.NoError(t, err, "an HTTP-date")
	return at
}

// The stored answer and every replay tell the client until when its key
// is kept: the store's expiry of the record.
func TestKeyExpiresOnStoredAnswersAndReplays(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	const retention = 2 * time.Hour
	wrapped := mustNew(t, store, server.WithRetention(retention)).Wrap(paymentsRoute, http.HandlerFunc(createdHandler))

	before := time.Now()
	first := serve(wrapped, post("expires-1", paymentBody))
	after := time.Now()
	require.Equal(t, http.StatusCreated, first.Code)
	at := expiresOf(t, first.Header())
	// The retention from some instant of the request, however long it
	// took; an HTTP-date drops the fraction of a second.
	assert.WithinRange(t, at, before.Add(retention).Truncate(time.Second), after.Add(retention))

	replay := serve(wrapped, post("expires-1", paymentBody))
	require.True(t, replayed(replay))
	assert.WithinDuration(t, at, expiresOf(t, replay.Header()), time.Minute, "the replay says the record's expiry")
	assert.Equal(t, replay.Header().Get(server.KeyExpiresHeader), serve(wrapped, post("expires-1", paymentBody)).Header().Get(server.KeyExpiresHeader),
		"every replay says the same")
}

// An answer that is not stored keeps no key: it says nothing of expiry.
func TestKeyExpiresAbsentWhenNothingIsKept(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	failing := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	rec := serve(failing, post("expires-2", paymentBody))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Empty(t, rec.Header().Get(server.KeyExpiresHeader), "a released key is not kept")

	h := newBlockingHandler()
	blocking := r.idem.Wrap(paymentsRoute, h)
	done := make(chan struct{})
	go func() { defer close(done); serve(blocking, post("expires-3", paymentBody)) }()
	<-h.entered
	busy := serve(blocking, post("expires-3", paymentBody))
	require.Equal(t, http.StatusConflict, busy.Code)
	assert.Empty(t, busy.Header().Get(server.KeyExpiresHeader))
	close(h.release)
	<-done
}

func createdHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":"pay_1"}`))
}
