package idem

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

func payoutRequest(t *testing.T, baseURL string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payouts",
		strings.NewReader(`{"amount": 5000, "currency": "EUR", "reference": "payout"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	return req
}

func operationStatus(t *testing.T, resp *http.Response) string {
	t.Helper()
	var doc struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(readBody(t, resp)), &doc))
	return doc.Status
}

func TestDoPollsAnAcceptedOperationToItsEnd(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithPayoutDelay(100*time.Millisecond))
	// The server rounds Retry-After up to a second; the ceiling keeps the
	// test fast.
	c := newTestClient(t, WithRetryAfterCeiling(50*time.Millisecond), WithPolling(20*time.Millisecond, 5*time.Second))

	in := begin(t, c, "", payoutRequest(t, srv.URL))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "succeeded", operationStatus(t, resp))
	assert.Equal(t, Succeeded, in.State)
	assert.Contains(t, in.Operation, "/v1/operations/")

	again, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.True(t, IsLocalReplay(again))
	assert.Equal(t, "succeeded", operationStatus(t, again))
}

func TestDoHandsBackAcceptedAndResumesPolling(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithPayoutDelay(300*time.Millisecond))
	noPolling := newTestClient(t, WithPolling(time.Second, 0))

	in := begin(t, noPolling, "", payoutRequest(t, srv.URL))
	resp, err := noPolling.Do(context.Background(), in)
	require.NoError(t, err, "accepted is not an error")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "pending", operationStatus(t, resp))
	assert.Equal(t, Accepted, in.State)
	pending, err := noPolling.Pending(context.Background())
	require.NoError(t, err)
	assert.Len(t, pending, 1, "an accepted intent is still to be settled")

	// A later Do polls; it never resends the payout.
	noPolling.cfg.pollMax = 5 * time.Second
	noPolling.cfg.pollInterval = 20 * time.Millisecond
	noPolling.cfg.raCeiling = 50 * time.Millisecond
	var posts, gets int
	noPolling.cfg.editor = func(_ context.Context, r *http.Request) error {
		if r.Method == http.MethodPost {
			posts++
		} else {
			gets++
		}
		return nil
	}
	resp, err = noPolling.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, "succeeded", operationStatus(t, resp))
	assert.Equal(t, Succeeded, in.State)
	assert.Zero(t, posts, "the payout is never resent")
	assert.Positive(t, gets)
}

func TestOperationURL(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "https://a.example/v1/operations/op_1", operationURL("https://a.example/v1/payouts", "/v1/operations/op_1"))
	assert.Equal(t, "https://b.example/x", operationURL("https://a.example/v1/payouts", "https://b.example/x"))
}

// acceptingServer answers every POST 202 with location as its operation
// and serves op for the operation's GETs.
func acceptingServer(t *testing.T, location func(srvURL string) string, op http.HandlerFunc) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.Header().Set("Location", location(srv.URL))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"status":"pending"}`))
			return
		}
		op(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A server that keeps answering "pending, retry after 0 seconds" must
// not turn polling into a busy loop: the polling interval is the
// shortest wait between polls.
func TestPollingNeverSpinsOnRetryAfterZero(t *testing.T) {
	t.Parallel()
	var polls atomic.Int64
	srv := acceptingServer(t, func(u string) string { return "/v1/operations/op_1" }, func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		w.Header().Set("Retry-After", "0")
		w.Header().Set("Location", "/v1/operations/op_1")
		w.WriteHeader(http.StatusAccepted)
	})
	const interval, bound = 50 * time.Millisecond, 300 * time.Millisecond
	c := newTestClient(t, WithPolling(interval, bound))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "spin"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, Accepted, in.State)
	assert.Positive(t, polls.Load())
	assert.LessOrEqual(t, polls.Load(), int64(bound/interval), "polls within the bound, one interval apart at least")
}

// An operation on another origin is polled without the intent's
// secrets: a 202's Location is the server's word, and a token is only
// for the host it was given for.
func TestPollingAnotherOriginSendsNoSecrets(t *testing.T) {
	t.Parallel()
	var elsewhere seen
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.record(r)
		_, _ = w.Write([]byte(`{"status":"succeeded"}`))
	}))
	t.Cleanup(other.Close)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	srv := acceptingServer(t, func(string) string { return otherURL + "/v1/operations/op_1" }, http.NotFound)

	c := newTestClient(t, WithPolling(10*time.Millisecond, 5*time.Second), WithSecretHeaders("X-Api-Key"))
	req := paymentRequest(t, srv.URL, 1, "elsewhere")
	req.Header.Set("X-Api-Key", "sekrit-api-key")
	in := begin(t, c, "", req)
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, `{"status":"succeeded"}`, readBody(t, resp))
	reqs := elsewhere.all()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		assert.Empty(t, r.header.Get("Authorization"), "the token went to another origin")
		assert.Empty(t, r.header.Get("X-Api-Key"), "a secret header went to another origin")
	}
}

// A Location that is not an http or https URL is not followed.
func TestPollingIgnoresANonHTTPLocation(t *testing.T) {
	t.Parallel()
	srv := acceptingServer(t, func(string) string { return "file:///etc/passwd" }, http.NotFound)
	c := newTestClient(t, WithPolling(10*time.Millisecond, 5*time.Second))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "file"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, Accepted, in.State)
	assert.Empty(t, in.Operation, "nothing to poll")
}
