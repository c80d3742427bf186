package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/server"
)

var downstreamSecret = []byte("0123456789abcdef-downstream")

// downstreamAPI is a guarded /orders whose handler answers the
// downstream key of purpose (or the error's text, with 500); the
// principal is the X-Tenant header.
func downstreamAPI(t *testing.T, purpose string, opts ...server.Option) http.Handler {
	t.Helper()
	opts = append([]server.Option{server.WithPrincipal(func(r *http.Request) (string, error) {
		return r.Header.Get("X-Tenant"), nil
	})}, opts...)
	layer, err := server.New(server.NewMemoryStore(), opts...)
	require.NoError(t, err)
	return layer.Wrap("/orders", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := server.DownstreamKey(r, purpose)
		if err != nil {
			// 400 runs before execution (Choice 2): the key stays free.
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(key))
	}))
}

// downstreamOf posts to api as tenant with the inbound key and returns
// the status and body.
func downstreamOf(api http.Handler, tenant, key string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"a"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Tenant", tenant)
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// A downstream key is a UUID that depends on the tenant, the inbound key
// and the purpose, never on the inbound key alone, and is the same on
// every replica with the same secret.
func TestDownstreamKeyIsScopedByTenantKeyAndPurpose(t *testing.T) {
	t.Parallel()
	charge := downstreamAPI(t, "charge", server.WithDownstreamSecret(downstreamSecret))
	replica := downstreamAPI(t, "charge", server.WithDownstreamSecret(downstreamSecret))
	refund := downstreamAPI(t, "refund", server.WithDownstreamSecret(downstreamSecret))
	otherSecret := downstreamAPI(t, "charge", server.WithDownstreamSecret([]byte("another secret of 16+ bytes")))

	status, a := downstreamOf(charge, "tenant-a", "k-1")
	require.Equal(t, http.StatusOK, status, a)
	u, err := uuid.Parse(a)
	require.NoError(t, err)
	assert.Len(t, a, 36)
	assert.Equal(t, uuid.Version(8), u.Version())
	assert.Equal(t, uuid.RFC4122, u.Variant())

	_, onReplica := downstreamOf(replica, "tenant-a", "k-1")
	assert.Equal(t, a, onReplica, "another replica with the same secret derives the same key")
	_, b := downstreamOf(charge, "tenant-b", "k-1")
	assert.NotEqual(t, a, b, "two tenants sending one inbound key get two downstream keys")
	_, other := downstreamOf(charge, "tenant-a", "k-2")
	assert.NotEqual(t, a, other)
	_, r := downstreamOf(refund, "tenant-a", "k-1")
	assert.NotEqual(t, a, r, "another purpose, another key")
	_, s := downstreamOf(otherSecret, "tenant-a", "k-1")
	assert.NotEqual(t, a, s)

	assert.Equal(t, independentDownstreamKey(downstreamSecret, "tenant-a", http.MethodPost, "/orders", "k-1", "charge"), a,
		"the layout PROTOCOL documents")
}

// independentDownstreamKey computes the documented layout on its own:
// HMAC-SHA-256 over length-prefixed fields, the first 16 bytes as a
// version-8 UUID.
func independentDownstreamKey(secret []byte, fields ...string) string {
	mac := hmac.New(sha256.New, secret)
	for _, f := range append([]string{"idem-downstream-key-v1"}, fields...) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		mac.Write(n[:])
		mac.Write([]byte(f))
	}
	var u uuid.UUID
	copy(u[:], mac.Sum(nil))
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}

func TestDownstreamKeyRefusesWhatItCannotDerive(t *testing.T) {
	t.Parallel()
	status, body := downstreamOf(downstreamAPI(t, "charge"), "tenant-a", "k-1")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, server.ErrNoDownstreamSecret.Error())

	for _, purpose := range []string{"", "two words", strings.Repeat("p", 129), "caf\u00e9"} {
		status, body = downstreamOf(downstreamAPI(t, purpose, server.WithDownstreamSecret(downstreamSecret)), "tenant-a", "k-1")
		assert.Equal(t, http.StatusBadRequest, status, "purpose %q", purpose)
		assert.Contains(t, body, server.ErrDownstreamPurpose.Error())
	}

	_, err := server.DownstreamKey(httptest.NewRequest(http.MethodPost, "/orders", nil), "charge")
	assert.ErrorIs(t, err, server.ErrNotHeld, "a request that did not come through the layer")
	_, err = server.DownstreamKey(nil, "charge")
	assert.ErrorIs(t, err, server.ErrNotHeld)

	_, err = server.New(server.NewMemoryStore(), server.WithAnonymous(), server.WithDownstreamSecret([]byte("short")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at least 16 bytes")
}

// A consumer under Once derives keys the same way, from its scope and
// message id.
func TestDownstreamKeyUnderOnce(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	scope := server.Scope{Principal: "publisher", Method: "CONSUME", Route: "orders"}
	var got string
	_, err := server.Once(context.Background(), store, scope, "msg-1", "fp", func(ctx context.Context) ([]byte, error) {
		held, ok := server.HeldFrom(ctx)
		if !ok {
			return nil, errors.New("no held reservation")
		}
		var err error
		got, err = held.DownstreamKey("charge")
		return nil, err
	}, server.WithDownstreamSecret(downstreamSecret))
	require.NoError(t, err)
	assert.Equal(t, independentDownstreamKey(downstreamSecret, "publisher", "CONSUME", "orders", "msg-1", "charge"), got)
}

// Every shipped dialect takes a downstream key as a key of its own, so
// idem.WithIntentKey accepts it whichever provider is called.
func TestDownstreamKeyFitsEveryDialect(t *testing.T) {
	t.Parallel()
	_, key := downstreamOf(downstreamAPI(t, "charge", server.WithDownstreamSecret(downstreamSecret)), "tenant-a", "k-1")
	for _, name := range dialect.Names() {
		d, err := dialect.ByName(name)
		require.NoError(t, err)
		assert.NoError(t, d.CheckKey(key), "dialect %s", name)
	}
}
