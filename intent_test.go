package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/canonjson"
	"github.com/idemkit/idem/keystore"
)

const exampleURL = "https://api.example.com/v1/payments"

func TestBeginPersistsBeforeReturning(t *testing.T) {
	t.Parallel()
	store := keystore.NewMemory()
	c, err := New(WithStore(store))
	require.NoError(t, err)
	defer c.Close()

	req := paymentRequest(t, "https://api.example.com", 1000, "r")
	in := begin(t, c, "order-1/payment", req)
	assert.Equal(t, Pending, in.State)
	assert.Len(t, in.Key, 36, "a UUID")
	assert.Equal(t, http.MethodPost, in.Method)

	rec, err := store.Get(context.Background(), in.Key)
	require.NoError(t, err)
	assert.Equal(t, "order-1/payment", in.Name)
	assert.Equal(t, keystore.ScopedName("order-1/payment", rec.Principal), rec.Name, "stored under its principal")
	assert.NotEmpty(t, rec.Principal)
	assert.NotContains(t, rec.Principal, testToken)
	assert.JSONEq(t, `{"amount":1000,"currency":"EUR","reference":"r"}`, string(rec.Body))
	assert.Empty(t, rec.Header.Get("Authorization"), "secrets are never stored")
	assert.Equal(t, "application/json", rec.Header.Get("Content-Type"))

	// The caller's request is left readable.
	body, err := io.ReadAll(req.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), "1000")
}

func TestBeginRejectsBadInput(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	ctx := context.Background()
	mk := func(method, rawURL, body string) *http.Request {
		r, err := http.NewRequest(method, rawURL, strings.NewReader(body))
		require.NoError(t, err)
		return r
	}
	withKey := mk(http.MethodPost, exampleURL, "{}")
	withKey.Header.Set("Idempotency-Key", "mine")
	noURL := mk(http.MethodPost, exampleURL, "{}")
	noURL.URL = nil
	huge := mk(http.MethodPost, exampleURL, "")
	huge.Body = io.NopCloser(io.LimitReader(zeroReader{}, MaxBodySize+1))
	huge.GetBody = nil

	cases := map[string]*http.Request{
		"nil":         nil,
		"no url":      noURL,
		"ftp":         mk(http.MethodPost, "ftp://example.com/x", "{}"),
		"no host":     {Method: http.MethodPost, URL: &url.URL{Scheme: "https", Path: "/x"}},
		"own key":     withKey,
		"body > 10MB": huge,
	}
	for name, req := range cases {
		_, err := c.Begin(ctx, "", req)
		assert.ErrorIs(t, err, ErrInvalidRequest, name)
	}

	bad := newTestClient(t, WithKeyGenerator(func() (string, error) { return "has space", nil }))
	_, err := bad.Begin(ctx, "", mk(http.MethodPost, exampleURL, "{}"))
	assert.ErrorContains(t, err, "invalid key")
	failing := newTestClient(t, WithKeyGenerator(func() (string, error) { return "", errors.New("no entropy") }))
	_, err = failing.Begin(ctx, "", mk(http.MethodPost, exampleURL, "{}"))
	assert.ErrorContains(t, err, "no entropy")
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestBeginNamedIsIdempotentAcrossRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "intents.db")
	ctx := context.Background()

	c, err := New(WithBoltStore(path, nil))
	require.NoError(t, err)
	first := begin(t, c, "order-7/payment", paymentRequest(t, "https://api.example.com", 700, "seven"))
	// Same payload, keys in another order and other white space: same intent.
	same, err := http.NewRequest(http.MethodPost, "https://api.example.com/v1/payments",
		strings.NewReader(`{"reference":"seven","currency":"EUR",  "amount":700}`))
	require.NoError(t, err)
	same.Header.Set("Authorization", "Bearer "+testToken)
	again := begin(t, c, "order-7/payment", same)
	assert.Equal(t, first.Key, again.Key)
	require.NoError(t, c.Close())

	c, err = New(WithBoltStore(path, nil))
	require.NoError(t, err)
	defer c.Close()
	restarted := begin(t, c, "order-7/payment", paymentRequest(t, "https://api.example.com", 700, "seven"))
	assert.Equal(t, first.Key, restarted.Key, "the same intent after a restart")

	_, err = c.Begin(ctx, "order-7/payment", paymentRequest(t, "https://api.example.com", 701, "seven"))
	assert.ErrorIs(t, err, ErrIntentConflict)
	assert.ErrorContains(t, err, "order-7/payment")

	unnamed1 := begin(t, c, "", paymentRequest(t, "https://api.example.com", 700, "seven"))
	unnamed2 := begin(t, c, "", paymentRequest(t, "https://api.example.com", 700, "seven"))
	assert.NotEqual(t, unnamed1.Key, unnamed2.Key, "an empty name always starts a new intent")

	resumed, err := c.Resume(ctx, first.Key)
	require.NoError(t, err)
	assert.Equal(t, "order-7/payment", resumed.Name)
	_, err = c.Resume(ctx, "no-such-key")
	assert.ErrorIs(t, err, keystore.ErrNotFound)
}

func TestBeginConcurrentNamedGivesOneKey(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	const callers = 16
	keys := make([]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, err := c.Begin(context.Background(), "shared", paymentRequest(t, "https://api.example.com", 1, "x"))
			if assert.NoError(t, err) {
				keys[i] = in.Key
			}
		}()
	}
	wg.Wait()
	for _, k := range keys {
		assert.Equal(t, keys[0], k)
	}
}

func TestSecretsNeverReachTheBoltFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "intents.db")
	c, err := New(WithBoltStore(path, nil), WithSecretHeaders("X-Api-Secret"))
	require.NoError(t, err)
	req := paymentRequest(t, "https://api.example.com", 100, "secret")
	req.Header.Set("X-Api-Secret", "sekrit-header-value")
	req.Header.Set("Cookie", "session=cookie-value-123")
	begin(t, c, "with-secrets", req)
	require.NoError(t, c.Close())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, secret := range []string{testToken, "sekrit-header-value", "cookie-value-123"} {
		assert.False(t, bytes.Contains(raw, []byte(secret)), "the keystore file holds %q", secret)
	}
	assert.True(t, bytes.Contains(raw, []byte("with-secrets")), "the intent itself is stored")
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	a := Fingerprint("POST", exampleURL, []byte(`{"a":1,"b":[1,2]}`))
	assert.Equal(t, a, Fingerprint("POST", exampleURL, []byte(" {\"b\": [1, 2], \"a\": 1.0}\n")), "canonical JSON")
	assert.NotEqual(t, a, Fingerprint("PATCH", exampleURL, []byte(`{"a":1,"b":[1,2]}`)), "method counts")
	assert.NotEqual(t, a, Fingerprint("POST", exampleURL+"?x=1", []byte(`{"a":1,"b":[1,2]}`)), "URL counts")
	assert.NotEqual(t, a, Fingerprint("POST", exampleURL, []byte(`{"a":2,"b":[1,2]}`)), "body counts")
	assert.NotEqual(t, Fingerprint("POST", exampleURL, []byte("a=1&b=2")), Fingerprint("POST", exampleURL, []byte("b=2&a=1")), "non-JSON is raw")
	assert.NotEqual(t, Fingerprint("POST", "ab", nil), Fingerprint("POS", "Tab", nil), "fields are separated")
	assert.NotEqual(t, Fingerprint("POST", "u\x00", []byte("b")), Fingerprint("POST", "u", []byte("\x00b")), "a separator byte cannot shift a boundary")
	assert.Len(t, a, 64)
}

// A raw body whose bytes equal another body's canonical form is another
// payload: the kind of body is part of what is hashed.
func TestFingerprintSeparatesRawFromCanonicalJSON(t *testing.T) {
	t.Parallel()
	// Duplicate names are not JSON for RFC 8785: hashed raw.
	assert.NotEqual(t, Fingerprint("POST", exampleURL, []byte(`{"a":1,"a":1}`)), Fingerprint("POST", exampleURL, []byte(`{"a":1}`)))
	// An inexact number is hashed raw, and its raw bytes are exactly the
	// canonical form of no other body; the rounded amount stays apart.
	assert.NotEqual(t,
		Fingerprint("POST", exampleURL, []byte(`{"amount":9007199254740993}`)),
		Fingerprint("POST", exampleURL, []byte(`{"amount":9007199254740992}`)))
	assert.NotEqual(t,
		Fingerprint("POST", exampleURL, []byte(`[1e-400]`)),
		Fingerprint("POST", exampleURL, []byte(`[0]`)))
}

// Two amounts a double cannot tell apart are two payments: a Begin under
// the same name with the other amount is a correction, not the same
// intent.
func TestBeginNeverMergesAmountsBeyondFloat64(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	mk := func(amount string) *http.Request {
		req, err := http.NewRequest(http.MethodPost, exampleURL, strings.NewReader(`{"amount":`+amount+`,"currency":"EUR"}`))
		require.NoError(t, err)
		return req
	}
	first := begin(t, c, "order-big", mk("9007199254740993"))
	_, err := c.Begin(context.Background(), "order-big", mk("9007199254740992"))
	require.ErrorIs(t, err, ErrIntentConflict, "2^53+1 and 2^53 are different amounts")

	again := begin(t, c, "order-big", mk("9007199254740993"))
	assert.Equal(t, first.Key, again.Key, "the same body is the same intent")

	exact := begin(t, c, "order-exact", mk("9007199254740992"))
	respelled := begin(t, c, "order-exact", mk("9007199254740992.0"))
	assert.Equal(t, exact.Key, respelled.Key, "an exact number may be spelled another way")
}

func FuzzFingerprint(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"a":1}`, `[1,2,3]`, `"str"`, `1e3`, `{"b":1,"a":{"d":[true,null],"c":"é"}}`, `not json`, "\xff\xfe", `[9007199254740993]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fp := Fingerprint("POST", exampleURL, []byte(body))
		require.Len(t, fp, 64)
		require.Equal(t, fp, Fingerprint("POST", exampleURL, []byte(body)), "deterministic")
		require.NotEqual(t, fp, Fingerprint("PATCH", exampleURL, []byte(body)), "method counts")
		// Re-serialising a JSON body in another order or spacing keeps it.
		if _, isJSON := canonjson.Canonical([]byte(body)); !isJSON {
			return // not exact JSON: hashed raw, spacing included
		}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil || dec.More() {
			return
		}
		reformatted, err := json.MarshalIndent(v, " ", "\t")
		if err != nil {
			return
		}
		require.Equal(t, fp, Fingerprint("POST", exampleURL, reformatted), "canonical form of %q", body)
	})
}
