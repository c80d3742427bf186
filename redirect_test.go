package idem

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seen is what a test server recorded of the requests it got.
type seen struct {
	mu   sync.Mutex
	reqs []seenRequest
}

type seenRequest struct {
	method, path, body string
	header             http.Header
}

func (s *seen) record(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, seenRequest{method: r.Method, path: r.URL.Path, body: string(body), header: r.Header.Clone()})
}

func (s *seen) all() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.reqs...)
}

// A 307 or 308 answering a POST is followed with the same method, body
// and key: the key is what keeps the resend safe.
func TestDoFollowsTemporaryRedirectWithTheKey(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		var got seen
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.record(r)
			if r.URL.Path == "/v1/payments" {
				http.Redirect(w, r, "/v2/payments", code)
				return
			}
			w.WriteHeader(http.StatusCreated)
		}))
		t.Cleanup(srv.Close)
		c := newTestClient(t)
		in := begin(t, c, "", paymentRequest(t, srv.URL, 1000, "moved"))
		resp, err := c.Do(context.Background(), in)
		require.NoError(t, err, "status %d", code)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Equal(t, Succeeded, in.State)

		reqs := got.all()
		require.Len(t, reqs, 2)
		assert.Equal(t, http.MethodPost, reqs[1].method)
		assert.Equal(t, reqs[0].body, reqs[1].body)
		assert.Equal(t, in.Key, reqs[1].header.Get("Idempotency-Key"), "the key survives a %d", code)
		assert.Equal(t, "Bearer "+testToken, reqs[1].header.Get("Authorization"), "same host: credentials follow")
	}
}

// net/http turns a POST answered 301, 302 or 303 into a GET of the
// Location. For an intent that would store the GET's answer as the
// POST's: a payment never made, reported Succeeded. The 3xx is the answer
// instead, never followed and never resent. A 303 says the server
// processed the request and points at the result (RFC 9110 §15.4.4): the
// intent is Succeeded with the 303 stored. A 301 or 302 may follow a
// processed POST (the old Post/Redirect/Get) or none at all: the outcome
// is unknown, and the intent stays Pending, for a reconciliation.
func TestDoDoesNotTurnAPostIntoAGetOnRedirect(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		var got seen
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.record(r)
			if r.Method == http.MethodPost {
				http.Redirect(w, r, "/v1/payments/list", code)
				return
			}
			_, _ = io.WriteString(w, `{"payments":[]}`)
		}))
		t.Cleanup(srv.Close)
		c := newTestClient(t)
		in := begin(t, c, "", paymentRequest(t, srv.URL, 1000, "see-other"))
		resp, err := c.Do(context.Background(), in)
		require.NotNil(t, resp)
		assert.Equal(t, code, resp.StatusCode)
		assert.Equal(t, "/v1/payments/list", resp.Header.Get("Location"))
		if code == http.StatusSeeOther {
			require.NoError(t, err)
			assert.Equal(t, Succeeded, in.State, "a 303 answers a processed request")
		} else {
			require.ErrorIs(t, err, ErrOutcomeUnknown, "status %d", code)
			assert.NotErrorIs(t, err, ErrFinalFailure, "status %d is not a refusal", code)
			assert.Equal(t, Pending, in.State, "a POST answered %d may have been processed", code)
			assert.True(t, in.MayHaveExecuted)
		}
		reqs := got.all()
		require.Len(t, reqs, 1, "neither followed as a GET nor resent")
		assert.Equal(t, http.MethodPost, reqs[0].method)
	}
}

// A redirect to another host carries no secret header: net/http strips
// Authorization and Cookie itself, but knows nothing of the headers a
// caller marks secret.
func TestDoRedirectToAnotherHostDropsSecrets(t *testing.T) {
	t.Parallel()
	var elsewhere seen
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.record(r)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(other.Close)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another host name, same listener
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/v1/payments", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)

	c := newTestClient(t, WithSecretHeaders("X-Api-Key"))
	req := paymentRequest(t, srv.URL, 1000, "cross-host")
	req.Header.Set("X-Api-Key", "sekrit-api-key")
	req.Header.Set("Cookie", "session=sekrit-cookie")
	in := begin(t, c, "", req)
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)

	reqs := elsewhere.all()
	require.Len(t, reqs, 1)
	assert.Empty(t, reqs[0].header.Get("X-Api-Key"), "a secret header followed a redirect to another host")
	assert.Empty(t, reqs[0].header.Get("Authorization"))
	assert.Empty(t, reqs[0].header.Get("Cookie"))
	assert.Equal(t, in.Key, reqs[0].header.Get("Idempotency-Key"))
}

// net/http sets Referer on a redirect to the redirected request's URL, query
// and all: a secret query parameter must not reach another origin that way.
func TestDoRedirectToAnotherHostSendsNoRefererWithASecret(t *testing.T) {
	t.Parallel()
	var elsewhere seen
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.record(r)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(other.Close)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, otherURL+"/v1/payments", code)
		}))
		t.Cleanup(srv.Close)
		c := newTestClient(t)
		req := paymentRequest(t, srv.URL, 1000, "referer")
		req.URL.RawQuery = "api_key=sekrit-query-key"
		in := begin(t, c, "", req)
		_, err := c.Do(context.Background(), in)
		require.NoError(t, err)
	}
	reqs := elsewhere.all()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		assert.NotContains(t, r.header.Get("Referer"), "sekrit-query-key", "the secret went to another origin in Referer")
	}
}
