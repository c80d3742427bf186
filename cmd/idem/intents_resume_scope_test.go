package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// seen is what a recording server saw of one request.
type seen struct {
	method, path string
	header       http.Header
}

// recorder is an HTTP server on a port of its own (so an origin of its
// own) that keeps every request it gets.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newRecorder(t *testing.T, handler http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, seen{req.Method, req.URL.Path, req.Header.Clone()})
		r.mu.Unlock()
		handler(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

// beginIntents writes a bbolt keystore holding one pending intent per
// request, as a program that crashed before sending them leaves it.
func beginIntents(t *testing.T, reqs ...*http.Request) (string, []*idem.Intent) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "idem.db")
	client, err := idem.New(idem.WithBoltStore(path, &keystore.BoltOptions{NoSync: true}))
	require.NoError(t, err)
	defer client.Close()
	var out []*idem.Intent
	for i, req := range reqs {
		in, err := client.Begin(t.Context(), req.URL.Path+"/"+string(rune('a'+i)), req)
		require.NoError(t, err)
		out = append(out, in)
	}
	return path, out
}

// postJSON is a payment-like POST to target, with token as its bearer
// credentials unless token is "".
func postJSON(t *testing.T, target, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader([]byte(`{"amount": 1500, "currency": "EUR", "reference": "r-1"}`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// TestResume_CredentialsStayOnTheIntentsOrigin resumes intents on two
// origins (the reference server, and a small server whose 202 and 307
// point to a third, "other" origin): the intents' own origins get --token
// and --header on every request, sends and polls alike; the poll of the
// operation and the redirect on the other origin get neither.
func TestResume_CredentialsStayOnTheIntentsOrigin(t *testing.T) {
	t.Parallel()
	other := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"status": "succeeded"}`))
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id": "tr_landed"}`))
	})
	own := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/moved" {
			http.Redirect(w, r, other.URL+"/v1/landing", http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Location", other.URL+"/ops/1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status": "pending"}`))
	})
	ref := idemtest.NewServer(t, idemtest.WithPayoutDelay(0))
	path, intents := beginIntents(t,
		postJSON(t, own.URL+"/v1/transfers", testToken),
		postJSON(t, own.URL+"/v1/moved", testToken),
		postJSON(t, ref.URL+"/v1/payouts", testToken),
		postJSON(t, ref.URL+"/v1/payments", testToken),
	)

	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", path, "--no-progress",
		"--token", testToken, "--header", "X-Tenant: acme")
	require.NoError(t, err, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "resumed 4 intents: 4 succeeded")
	got := states(t, path)
	for _, in := range intents {
		assert.Equal(t, keystore.Succeeded, got[in.Key], in.URL)
	}

	ownReqs := own.requests()
	require.Len(t, ownReqs, 2)
	for _, r := range ownReqs {
		assert.Equal(t, "Bearer "+testToken, r.header.Get("Authorization"), r.path)
		assert.Equal(t, "acme", r.header.Get("X-Tenant"), r.path)
	}
	otherReqs := other.requests()
	paths := map[string]bool{}
	for _, r := range otherReqs {
		paths[r.method+" "+r.path] = true
		assert.Empty(t, r.header.Values("Authorization"), "%s %s on another origin", r.method, r.path)
		assert.Empty(t, r.header.Values("X-Tenant"), "%s %s on another origin", r.method, r.path)
	}
	assert.True(t, paths["GET /ops/1"], "the 202's operation was polled on the other origin: %v", paths)
	assert.True(t, paths["POST /v1/landing"], "the 307 was followed to the other origin: %v", paths)
	// The reference server answers only an authenticated caller: the
	// payment and the payout's poll (on its own origin) had the token.
	assert.Len(t, ref.Payments(testToken), 1)
}

// TestResume_OriginFlagRestrictsCredentials gives --origin an origin the
// first intent is not on: its sends carry neither --token nor --header,
// while the intent on the origin given gets them.
func TestResume_OriginFlagRestrictsCredentials(t *testing.T) {
	t.Parallel()
	own := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id": "tr_1"}`))
	})
	ref := idemtest.NewServer(t)
	// Begun without credentials, the first intent takes whatever its
	// attempts are given, so only the scope keeps the token from it.
	path, intents := beginIntents(t,
		postJSON(t, own.URL+"/v1/transfers", ""),
		postJSON(t, ref.URL+"/v1/payments", testToken),
	)
	refOrigin := strings.Replace(ref.URL, "http://", "HTTP://", 1) + "/" // another spelling of the one origin

	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", path, "--no-progress",
		"--token", testToken, "--header", "X-Tenant: acme", "--origin", refOrigin)
	require.NoError(t, err, "stdout: %s\nstderr: %s", stdout, stderr)
	got := states(t, path)
	for _, in := range intents {
		assert.Equal(t, keystore.Succeeded, got[in.Key], in.URL)
	}
	reqs := own.requests()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].header.Values("Authorization"), "--origin leaves this origin out")
	assert.Empty(t, reqs[0].header.Values("X-Tenant"))
	assert.Len(t, ref.Payments(testToken), 1, "the origin given got the token")

	for _, bad := range []string{"ftp://example.com", "https://", "https://api.example.com/v1", "https://u:p@api.example.com", "::"} {
		_, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", path, "--no-progress", "--origin", bad)
		requireOneLineError(t, stderr, err)
		assert.Contains(t, stderr, "--origin", bad)
	}
}

func TestOrigins(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{"http://example.com", "http://EXAMPLE.com:80/v1/payments"},
		{"https://Example.com/", "HTTPS://example.com:443"},
		{"http://[::1]:8080", "http://[::1]:8080/ops/1"},
	}
	for _, p := range same {
		a, err := url.Parse(p[0])
		require.NoError(t, err)
		b, err := url.Parse(p[1])
		require.NoError(t, err)
		oa, _ := originOf(a)
		ob, _ := originOf(b)
		assert.Equal(t, oa, ob, p)
	}
	set := originSet{}
	o, err := parseOrigin("https://api.example.com")
	require.NoError(t, err)
	set[o] = true
	for raw, want := range map[string]bool{
		"https://api.example.com/v1/payments": true,
		"https://API.example.com:443/x":       true,
		"http://api.example.com/v1/payments":  false, // another scheme
		"https://api.example.com:8443/":       false, // another port
		"https://ops.example.com/op/1":        false,
		"https://api.example.com.evil/":       false,
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		assert.Equal(t, want, set.has(u), raw)
	}
	assert.Equal(t, "", set.leavesOut("https://api.example.com/v1"))
	assert.Equal(t, "https://ops.example.com:8443", set.leavesOut("https://OPS.example.com:8443/op"))
	assert.Equal(t, "http://[::1]:8080", origin{"http", "::1", "8080"}.String())
	assert.Equal(t, "https://api.example.com", o.String())
}
