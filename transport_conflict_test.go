package idem

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// businessConflictServer answers every POST with a business 409 (the
// transfer conflicts with the account's state), never a word about the
// key, and counts the requests.
func businessConflictServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"error":"account_frozen","message":"the source account is frozen"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func transferRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/transfers", strings.NewReader(`{"amount":100}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// A 409 to the first attempt of a request whose key Transport minted for
// it cannot be that key's request in progress (no earlier request carries
// the key): it is the server's answer to this request, returned as a
// plain transport would, after one request.
func TestTransportReturnsABusinessConflictToAFreshKey(t *testing.T) {
	t.Parallel()
	srv, requests := businessConflictServer(t)
	c := newTestClient(t)
	api := &http.Client{Transport: c.Transport()}
	resp, err := api.Do(transferRequest(t, srv.URL))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), "account_frozen")
	assert.EqualValues(t, 1, requests.Load(), "one request: the answer is final")
}

// With the caller's own key the 409 may be that key's earlier request
// still running (draft-07 §2.7), so it is retried within the attempts;
// the give-up carries the server's last answer, body readable.
func TestTransportGiveUpOnAConflictCarriesTheAnswer(t *testing.T) {
	t.Parallel()
	srv, requests := businessConflictServer(t)
	c := newTestClient(t, WithMaxAttempts(3))
	api := &http.Client{Transport: c.Transport()}
	req := transferRequest(t, srv.URL)
	req.Header.Set("Idempotency-Key", "caller-key-1")
	resp, err := api.Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	require.Error(t, err)
	var ge *GiveUpError
	require.True(t, errors.As(err, &ge), "the give-up is a *GiveUpError: %v", err)
	assert.ErrorIs(t, err, ErrRetriesExhausted)
	assert.Equal(t, http.StatusConflict, ge.LastStatus)
	require.NotNil(t, ge.Response, "the give-up carries the last answer")
	body, err := io.ReadAll(ge.Response.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), "account_frozen")
	assert.EqualValues(t, 3, requests.Load(), "bounded by the attempts")
}
