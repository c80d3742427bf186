package idem

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Credentials in the URL (https://user:password@host/) are a secret like
// Authorization: the keystore keeps the URL without them, and every
// attempt of this process still sends them, as Basic credentials.
func TestURLCredentialsNeverReachTheKeystore(t *testing.T) {
	t.Parallel()
	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.record(r)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	withCreds := strings.Replace(srv.URL, "http://", "http://merchant:sekrit-url-password@", 1)

	path := filepath.Join(t.TempDir(), "intents.db")
	c, err := New(append(fastOptions(), WithBoltStore(path, nil))...)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, withCreds+"/v1/payments", strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	in := begin(t, c, "url-creds", req)
	assert.NotContains(t, in.URL, "sekrit-url-password")
	assert.Equal(t, srv.URL+"/v1/payments", in.URL)
	_, err = c.Do(context.Background(), in)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	reqs := got.all()
	require.Len(t, reqs, 1)
	user, pass, ok := (&http.Request{Header: reqs[0].header}).BasicAuth()
	require.True(t, ok, "the URL's credentials are sent")
	assert.Equal(t, "merchant", user)
	assert.Equal(t, "sekrit-url-password", pass)

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.False(t, bytes.Contains(raw, []byte("sekrit-url-password")), "the keystore file holds the URL's password")
}

// The same payload with or without credentials in the URL is the same
// intent: credentials are not part of the payload.
func TestURLCredentialsDoNotChangeTheFingerprint(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	mk := func(rawURL string) *http.Request {
		req, err := http.NewRequest(http.MethodPost, rawURL, strings.NewReader(`{"amount":1}`))
		require.NoError(t, err)
		return req
	}
	a := begin(t, c, "same", mk("https://user:one@api.example.com/v1/payments"))
	// The same credentials as a header: the same principal, and the URL
	// without them the same payload.
	bare := mk("https://api.example.com/v1/payments")
	bare.SetBasicAuth("user", "one")
	b := begin(t, c, "same", bare)
	assert.Equal(t, a.Key, b.Key)
}

// The request editor runs on every attempt, after the key is set: it may
// add credentials, but the key it cannot change, or a retry would be a
// new request to the server.
func TestRequestEditorCannotChangeTheKey(t *testing.T) {
	t.Parallel()
	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.record(r)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, WithRequestEditor(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Idempotency-Key", "editor-key")
		r.Header.Add("idempotency-key", "second")
		r.Header.Set("Authorization", "Bearer from-editor")
		return nil
	}))
	// Begun without credentials: the editor's are the intent's.
	req := paymentRequest(t, srv.URL, 1, "editor")
	req.Header.Del("Authorization")
	in := begin(t, c, "", req)
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	reqs := got.all()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{in.Key}, reqs[0].header.Values("Idempotency-Key"))
	assert.Equal(t, "Bearer from-editor", reqs[0].header.Get("Authorization"))
}

// A stored answer keeps what a replay needs, never a credential: no
// Set-Cookie (a session the server handed to one process) and none of
// the authentication exchange headers.
func TestStoredResponseKeepsNoCredentials(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "sekrit-session"})
		w.Header().Set("Authentication-Info", `nextnonce="sekrit-nonce"`)
		w.Header().Set("Proxy-Authentication-Info", `nextnonce="sekrit-proxy-nonce"`)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/payments/pay_1")
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "cookie"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.NotEmpty(t, resp.Header.Get("Set-Cookie"), "the live answer is the server's, whole")

	replay, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	require.True(t, IsLocalReplay(replay))
	for _, name := range []string{"Set-Cookie", "Authentication-Info", "Proxy-Authentication-Info"} {
		assert.Empty(t, replay.Header.Get(name), "%s is stored", name)
	}
	assert.Equal(t, "application/json", replay.Header.Get("Content-Type"))
	assert.Equal(t, "/v1/payments/pay_1", replay.Header.Get("Location"))
}

// The stored answer is the server's as it came: a caller changing the
// response Do returned (its header shared with the answer the memory
// keystore encoded) never changes what later replays show.
func TestChangingTheReturnedResponseNeverChangesTheStoredAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/payments/pay_1")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"pay_1"}`))
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t)
	require.True(t, c.storeEncodesSettled(), "the default store takes the shared header")
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "scribble"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	resp.Header["Location"][0] = "/changed"
	resp.Header.Set("X-Added", "1")
	resp.Header.Del("Content-Type")

	replay, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	require.True(t, IsLocalReplay(replay))
	assert.Equal(t, "/v1/payments/pay_1", replay.Header.Get("Location"))
	assert.Equal(t, "application/json", replay.Header.Get("Content-Type"))
	assert.Empty(t, replay.Header.Get("X-Added"))
	assert.Equal(t, `{"id":"pay_1"}`, readBody(t, replay))
}
