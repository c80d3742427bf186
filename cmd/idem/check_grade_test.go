package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// storedAnswer is a 4xx answer kept for its key.
type storedAnswer struct {
	status int
	header http.Header
	body   []byte
}

// errorStoringServer is the reference server behind a layer that does what
// draft-07 §2.6 allows: the 4xx answer (other than 409) to the first
// request of a key is stored and replayed to every later request with
// that key.
func errorStoringServer(t *testing.T) string {
	t.Helper()
	ref := idemtest.NewServer(t)
	target, err := url.Parse(ref.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var (
		mu     sync.Mutex
		firsts = map[string]bool{}
		stored = map[string]storedAnswer{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" || r.Method != http.MethodPost {
			proxy.ServeHTTP(w, r)
			return
		}
		id := r.Header.Get("Authorization") + "\x00" + key
		mu.Lock()
		s, replay := stored[id]
		first := !firsts[id]
		firsts[id] = true
		mu.Unlock()
		if replay {
			for k, v := range s.header {
				w.Header()[k] = v
			}
			w.WriteHeader(s.status)
			_, _ = w.Write(s.body)
			return
		}
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		// A 409 is a duplicate refused while another runs, no completed
		// operation's result: never stored.
		if first && rec.Code >= 400 && rec.Code < 500 && rec.Code != http.StatusConflict {
			mu.Lock()
			stored[id] = storedAnswer{rec.Code, rec.Header().Clone(), bytes.Clone(rec.Body.Bytes())}
			mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCheck_StoredErrorPassesTheDraft: a server that stores its 422 and
// replays it follows draft-07 §2.6 ("success or an error"): the draft
// profile exits 0; the idem profile grades this project's rule and quotes
// the sentence it goes beyond.
func TestCheck_StoredErrorPassesTheDraft(t *testing.T) {
	t.Parallel()
	base := errorStoringServer(t)

	stdout, stderr, err := runCheckCLI(t, base, "--bursts", "2", "--burst-width", "4", "--json")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	var draft checkReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &draft))
	assert.Zero(t, draft.Failed, stdout)
	for _, c := range draft.Checks {
		assert.NotContains(t, []string{idemtest.CheckErrorNotStored, idemtest.CheckMissingKey, idemtest.CheckInvalidKey}, c.ID)
	}

	stdout, _, err = runCheckCLI(t, base, "--profile", "idem", "--bursts", "2", "--burst-width", "4", "--json")
	assert.Equal(t, 1, exitCode(err), "err: %v\n%s", err, stdout)
	var idem checkReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &idem))
	var graded bool
	for _, c := range idem.Checks {
		if c.ID == idemtest.CheckErrorNotStored {
			graded = true
			assert.True(t, c.Failed(), c.Detail)
			assert.Equal(t, idemtest.LevelIdem, c.Level)
			assert.Contains(t, c.Quote, `The resource SHOULD respond with the result of the previously completed operation, success or an error.`)
		}
	}
	assert.True(t, graded, stdout)
}

// TestCheck_IdemProfileWithAProviderDialectIsRefused: the idem profile is
// not silently dropped under a provider dialect; the run is refused with
// exit status 2 before any request.
func TestCheck_IdemProfileWithAProviderDialectIsRefused(t *testing.T) {
	t.Parallel()
	srv, requests := nonIdempotentServer(t)

	stdout, stderr, err := runCheckCLI(t, srv.URL, "--dialect", "stripe", "--profile", "idem")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	require.ErrorIs(t, err, idemtest.ErrProfileNotForDialect)
	assert.Contains(t, err.Error(), "drop --profile idem")
	assert.Empty(t, stdout)
	assertOneLine(t, stderr)
	assert.Zero(t, requests.Load())

	_, _, err = runCheckCLI(t, srv.URL, "--dialect", "idem", "--profile", "idem", "--bursts", "1")
	assert.Equal(t, 1, exitCode(err), "the draft dialect under its project name keeps the idem profile: %v", err)
}
