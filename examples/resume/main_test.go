package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

func TestResumeRerunReplays(t *testing.T) {
	ts, err := testserver.New()
	require.NoError(t, err)
	defer ts.Close()
	hs := httptest.NewServer(ts.Handler())
	defer hs.Close()
	o := options{server: hs.URL, keystore: filepath.Join(t.TempDir(), "resume.db"), count: 3, token: "tok", batch: "b"}

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, o))
	assert.Contains(t, out.String(), "3 paid now, 0 paid by an earlier run")

	out.Reset()
	require.NoError(t, run(context.Background(), &out, o))
	assert.Contains(t, out.String(), "0 paid now, 3 paid by an earlier run")
	n, err := ts.Store().CountPayments(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	assert.Error(t, run(context.Background(), &out, options{count: 0}))
}

// TestTokenOnlyToTheServersOrigin runs the batch against a server whose
// payments answer 202 with an operation on another origin: the payment
// carries the token, the poll of the other origin does not.
func TestTokenOnlyToTheServersOrigin(t *testing.T) {
	var mu sync.Mutex
	auth := map[string][]string{} // "METHOD origin" -> Authorization values seen
	record := func(who string, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		auth[r.Method+" "+who] = append(auth[r.Method+" "+who], r.Header.Get("Authorization"))
	}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("other", r)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status": "succeeded"}`))
	}))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record("api", r)
		w.Header().Set("Location", other.URL+"/ops/1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"status": "pending"}`))
	}))
	defer api.Close()

	o := options{server: api.URL, keystore: filepath.Join(t.TempDir(), "resume.db"), count: 1, token: "tok_api", batch: "b"}
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, o))
	assert.Contains(t, out.String(), "1 paid now")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"Bearer tok_api"}, auth["POST api"])
	require.NotEmpty(t, auth["GET other"], "the operation was polled: %v", auth)
	for _, v := range auth["GET other"] {
		assert.Empty(t, v, "the token never reaches another origin")
	}
}

func TestTokenEditor(t *testing.T) {
	api, err := url.Parse("https://API.example.com/v1")
	require.NoError(t, err)
	edit := tokenEditor(api, "tok")
	for target, want := range map[string]string{
		"https://api.example.com:443/v1/payments": "Bearer tok",
		"https://ops.example.com/ops/1":           "",
		"http://api.example.com/v1/payments":      "",
		"https://api.example.com:8443/v1":         "",
	} {
		req, err := http.NewRequest(http.MethodGet, target, nil)
		require.NoError(t, err)
		require.NoError(t, edit(context.Background(), req))
		assert.Equal(t, want, req.Header.Get("Authorization"), target)
	}
}
