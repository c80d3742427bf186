package idem

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 2xx whose body breaks off mid-read is not a success to store: the
// intent stays Pending, and the resume gets the server's replay.
func TestDoTruncatedBodyKeepsTheIntentPending(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			w.Header().Set(ReplayedHeader, "true")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"pay_1"}`)
			return
		}
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"pa`)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, WithMaxAttempts(1))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "cut"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, Pending, in.State, "a cut body is never stored as the answer")

	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"pay_1"}`, readBody(t, resp))
	assert.Equal(t, Succeeded, in.State)
}

// A context cancelled while the answer's body is read leaves the intent
// Pending, resumable with its key.
func TestDoCancelledMidBodyKeepsTheIntentPending(t *testing.T) {
	t.Parallel()
	flushed := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"pa`)
		w.(http.Flusher).Flush()
		close(flushed)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "cancel"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-flushed; cancel() }()
	_, err := c.Do(ctx, in)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, Pending, in.State)
	assert.Equal(t, 1, in.Attempts)
}

// Transport cannot buffer a body over MaxBodySize that it cannot rewind:
// it fails at once, without sending a byte, and closes the body.
func TestTransportRejectsAnOversizedStreamingBody(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	c := newTestClient(t)
	body := &closeTracker{Reader: io.LimitReader(zeroReader{}, MaxBodySize+1)}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/upload", body)
	require.NoError(t, err)
	_, err = (&http.Client{Transport: c.Transport()}).Do(req)
	require.ErrorIs(t, err, ErrInvalidRequest)
	assert.True(t, body.closed.Load(), "the body is closed")
	assert.Zero(t, hits.Load(), "nothing was sent")
}

type closeTracker struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeTracker) Close() error { c.closed.Store(true); return nil }

// Over HTTP/2 the key and the answer are the same as over HTTP/1.1.
func TestDoOverHTTP2(t *testing.T) {
	t.Parallel()
	var got seen
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.record(r)
		if !strings.HasPrefix(r.Proto, "HTTP/2") {
			w.WriteHeader(http.StatusHTTPVersionNotSupported)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newTestClient(t, WithHTTPClient(srv.Client()))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "h2"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	reqs := got.all()
	require.Len(t, reqs, 1)
	assert.Equal(t, in.Key, reqs[0].header.Get("Idempotency-Key"))
}

// Close while a Do runs: the Do ends with an error or its answer, never
// a hang, and the intent is not lost from a store that outlives it.
func TestCloseWhileDoRuns(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	c, err := New(fastOptions()...)
	require.NoError(t, err)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "closing"))
	done := make(chan error, 1)
	go func() {
		_, err := c.Do(context.Background(), in)
		done <- err
	}()
	<-entered
	require.NoError(t, c.Close())
	close(release)
	err = <-done
	if err != nil {
		assert.NotContains(t, err.Error(), "panic")
	}
	_, err = c.Do(context.Background(), in)
	assert.ErrorIs(t, err, ErrClosed)
}
