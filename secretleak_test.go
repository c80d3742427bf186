package idem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/idemkit/idem/internal/testenv"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// leakSecret is the value of the secret query parameter of the leak tests:
// found anywhere but on the wire, it leaked.
const leakSecret = "sekrit-query-value-7731"

// leakWitness is a Client whose every text output is captured: a debug
// log in JSON, and a bbolt keystore file read raw at the end.
type leakWitness struct {
	c    *Client
	log  *testenv.SyncBuffer
	path string
}

func newLeakWitness(t *testing.T, opts ...Option) *leakWitness {
	t.Helper()
	w := &leakWitness{log: &testenv.SyncBuffer{}, path: filepath.Join(t.TempDir(), "intents.db")}
	logger := slog.New(slog.NewJSONHandler(w.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	all := append(fastOptions(), WithBoltStore(w.path, nil), WithLogger(logger), WithMaxAttempts(2),
		WithPolling(10*time.Millisecond, 200*time.Millisecond))
	c, err := New(append(all, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	w.c = c
	return w
}

// assertNoSecret checks the log, every stored record (as JSON) and the
// keystore file's bytes, then every text given, for secret.
func (w *leakWitness) assertNoSecret(t *testing.T, secret string, texts ...string) {
	t.Helper()
	recs, err := w.c.store.List(context.Background(), keystore.Filter{})
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	for _, r := range recs {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		assert.NotContains(t, string(b), secret, "a stored record")
	}
	assert.NotContains(t, w.log.String(), secret, "the debug log")
	require.NoError(t, w.c.Close())
	if w.path != "" {
		raw, err := os.ReadFile(w.path)
		require.NoError(t, err)
		assert.False(t, bytes.Contains(raw, []byte(secret)), "the keystore file")
	}
	for i, s := range texts {
		assert.NotContains(t, s, secret, "text %d", i)
	}
}

// errorTexts are err's text and the text of every error it wraps, with
// the URL of any *url.Error among them.
func errorTexts(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		out = append(out, e.Error())
		var ue *url.Error
		if errors.As(e, &ue) {
			out = append(out, ue.URL)
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// refusedURL is the URL of a port nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr
}

// resetServer reads each request and drops the connection unanswered.
func resetServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hangUp(w)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// hangUp closes the connection under w without an answer.
func hangUp(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a clean close
		}
		_ = conn.Close()
	}
}

// withLeakSecret is base with the secret query parameter.
func withLeakSecret(base string) string {
	return base + "/v1/payments?currency=EUR&api_key=" + leakSecret
}

// A secret query parameter never reaches the keystore, the debug log, the
// returned error or LastError, whatever way the transport fails: a
// refused connection, a reset, an answer cut off mid-body, a redirect to
// a server that refuses.
func TestSecretQueryParamNeverLeaksThroughTransportErrors(t *testing.T) {
	t.Parallel()
	midAnswer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 201 Created\r\nContent-Length: 100\r\n\r\n{\"id\":")
		_ = buf.Flush()
		_ = conn.Close()
	}))
	t.Cleanup(midAnswer.Close)
	refused := refusedURL(t)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server echoes the query into the Location, as some do.
		w.Header().Set("Location", refused+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	for name, base := range map[string]string{
		"refused":   refused,
		"reset":     resetServer(t).URL,
		"midAnswer": midAnswer.URL,
		"redirect":  redirector.URL,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newLeakWitness(t)
			leakThroughDo(t, w, name, base)
		})
		t.Run(name+"/memory", func(t *testing.T) {
			t.Parallel()
			w := newLeakWitness(t, WithStore(keystore.NewMemory()))
			w.path = "" // the memory keystore's records are checked, no file
			leakThroughDo(t, w, name, base)
		})
	}
}

// leakThroughDo begins a payment to base with the secret query parameter,
// lets Do fail, and checks every output of w and the error for the secret.
func leakThroughDo(t *testing.T, w *leakWitness, name, base string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, withLeakSecret(base), strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	in := begin(t, w.c, "leak/"+name, req)
	_, err = w.c.Do(context.Background(), in)
	require.Error(t, err)
	texts := append(errorTexts(err), in.LastError)
	assert.NotEmpty(t, in.LastError)
	pending, perr := w.c.Pending(context.Background())
	require.NoError(t, perr)
	for _, p := range pending {
		texts = append(texts, p.LastError, p.URL)
	}
	w.assertNoSecret(t, leakSecret, texts...)
}

// The give-up Transport returns names no secret query parameter either.
func TestTransportErrorsNeverCarryASecretQueryParam(t *testing.T) {
	t.Parallel()
	log := &testenv.SyncBuffer{}
	c := newTestClient(t, WithMaxAttempts(2),
		WithLogger(slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	for _, base := range []string{refusedURL(t), resetServer(t).URL} {
		req, err := http.NewRequest(http.MethodPost, withLeakSecret(base), strings.NewReader(`{"amount":1}`))
		require.NoError(t, err)
		resp, err := c.Transport().RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		require.Error(t, err)
		var ge *GiveUpError
		require.ErrorAs(t, err, &ge)
		for _, s := range errorTexts(err) {
			assert.NotContains(t, s, leakSecret)
		}
	}
	assert.NotContains(t, log.String(), leakSecret)
	assert.Contains(t, log.String(), "api_key=REDACTED", "the log still says which parameter it was")
}

// Polls of an accepted intent's operation that fail leave LastError and
// the log without the intent's secret query parameter, which polls of the
// intent's own origin carry.
func TestPollErrorsNeverCarryASecretQueryParam(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var pollQueries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", "/v1/operations/op_1")
			w.WriteHeader(http.StatusAccepted)
			return
		}
		mu.Lock()
		pollQueries = append(pollQueries, r.URL.RawQuery)
		mu.Unlock()
		hangUp(w)
	}))
	t.Cleanup(srv.Close)
	w := newLeakWitness(t)
	req, err := http.NewRequest(http.MethodPost, withLeakSecret(srv.URL), strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	in := begin(t, w.c, "leak/poll", req)
	resp, err := w.c.Do(context.Background(), in)
	require.NoError(t, err, "an operation that gives no answer leaves the intent accepted")
	resp.Body.Close()
	assert.Equal(t, Accepted, in.State)
	assert.Contains(t, in.LastError, "polling the operation")
	mu.Lock()
	require.NotEmpty(t, pollQueries)
	assert.Contains(t, pollQueries[0], "api_key="+leakSecret, "a poll of the intent's origin carries its credentials")
	mu.Unlock()
	w.assertNoSecret(t, leakSecret, in.LastError)
}

// A 202 whose Location carries a secret query parameter is stored without
// it: the keystore keeps the operation's URL as it keeps the intent's.
func TestOperationURLIsStoredWithoutSecretQueryParams(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", "/v1/operations/op_1?api_key="+leakSecret)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"status":"succeeded"}`))
	}))
	t.Cleanup(srv.Close)
	w := newLeakWitness(t)
	req, err := http.NewRequest(http.MethodPost, withLeakSecret(srv.URL), strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	in := begin(t, w.c, "leak/location", req)
	resp, err := w.c.Do(context.Background(), in)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, Succeeded, in.State)
	w.assertNoSecret(t, leakSecret, in.LastError)
}

// redactURL hides secret values and passwords, and keeps the rest.
func TestRedactURL(t *testing.T) {
	t.Parallel()
	secret := setOf(defaultSecretParams)
	for in, want := range map[string]string{
		"https://api.example.com/v1/p?api_key=k&x=1":         "https://api.example.com/v1/p?api_key=REDACTED&x=1",
		"https://u:pw@api.example.com/v1/p":                  "https://u:REDACTED@api.example.com/v1/p",
		"https://u@api.example.com/v1/p?Token=t&Signature=s": "https://u@api.example.com/v1/p?Signature=REDACTED&Token=REDACTED",
		"https://api.example.com/v1/p?currency=EUR":          "https://api.example.com/v1/p?currency=EUR",
	} {
		u, err := url.Parse(in)
		require.NoError(t, err)
		assert.Equal(t, want, redactURL(u, secret), in)
	}
}

// redactError keeps what the error is (a timeout stays a timeout, the
// wrapped errors stay reachable) and drops the secret from its text.
func TestRedactErrorKeepsTheErrorsKind(t *testing.T) {
	t.Parallel()
	secret := setOf(defaultSecretParams)
	u, err := url.Parse("http://127.0.0.1:1/v1/p?token=" + leakSecret)
	require.NoError(t, err)
	inner := &net.OpError{Op: "read", Net: "tcp", Source: leakAddr{}, Err: os.ErrDeadlineExceeded}
	orig := &url.Error{Op: "Post", URL: u.String(), Err: inner}
	require.Contains(t, orig.Error(), leakSecret)
	got := redactError(orig, u, secret)
	assert.NotContains(t, got.Error(), leakSecret)
	assert.ErrorIs(t, got, os.ErrDeadlineExceeded)
	var op *net.OpError
	assert.ErrorAs(t, got, &op)
	var ue *url.Error
	require.ErrorAs(t, got, &ue)
	assert.NotContains(t, ue.URL, leakSecret)
	assert.True(t, ue.Timeout(), "still a timeout")

	plain := errors.New("dial failed for " + leakSecret)
	assert.NotContains(t, redactError(plain, u, secret).Error(), leakSecret)
	assert.ErrorIs(t, redactError(plain, u, secret), plain)
	assert.Nil(t, redactError(nil, u, secret))
}

// leakAddr is an address whose text holds the secret, as a custom
// transport's error might.
type leakAddr struct{}

func (leakAddr) Network() string { return "tcp" }
func (leakAddr) String() string  { return "proxy-for-" + leakSecret }

// Whatever writes a URL into a message, the value of a secret query
// parameter in it does not survive: a request editor's error that names
// the request's URL reaches neither LastError, the keystore, the log, nor
// the text of the error Do returns.
func TestEditorErrorNamingTheURLLeavesNoSecret(t *testing.T) {
	t.Parallel()
	w := newLeakWitness(t, WithRequestEditor(func(_ context.Context, r *http.Request) error {
		return errors.New("no credentials for " + r.URL.String())
	}))
	req, err := http.NewRequest(http.MethodPost, withLeakSecret("http://127.0.0.1:9"), strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	in := begin(t, w.c, "leak/editor", req)
	_, err = w.c.Do(context.Background(), in)
	require.Error(t, err)
	assert.Contains(t, in.LastError, "api_key=REDACTED")
	// The text; the editor's own error stays reachable, as it was, for
	// errors.Is and errors.As.
	w.assertNoSecret(t, leakSecret, err.Error(), in.LastError)
}

// redactQueryText finds secret parameters in free text, and only them.
func TestRedactQueryText(t *testing.T) {
	t.Parallel()
	secret := setOf(defaultSecretParams)
	for in, want := range map[string]string{
		`Post "http://h/p?api_key=abc&x=1": EOF`:   `Post "http://h/p?api_key=REDACTED&x=1": EOF`,
		"see http://h/p?x=1&Access_Token=t0k#frag": "see http://h/p?x=1&Access_Token=REDACTED#frag",
		"a ?token= b":                "a ?token= b",
		"monkey=1 and ?currency=EUR": "monkey=1 and ?currency=EUR",
		"no query here":              "no query here",
		"http://h/p?api%5Fkey=v":     "http://h/p?api%5Fkey=REDACTED",
	} {
		assert.Equal(t, want, redactQueryText(in, secret), in)
	}
}
