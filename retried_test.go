package idem

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flakyServer answers the first fails requests 503 with a body of
// bodySize bytes, then 201, and counts the connections it was opened.
func flakyServer(t *testing.T, fails int, bodySize int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) <= int64(fails) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(strings.Repeat("e", bodySize)))
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// Retried answers with bodies over 4 KiB are read to their end, so every
// attempt of a call goes over one connection.
func TestRetriedLargeAnswersKeepTheConnection(t *testing.T) {
	t.Parallel()
	srv, conns := flakyServer(t, 3, 256<<10)
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "big-503"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 4, in.Attempts)
	assert.EqualValues(t, 1, conns.Load(), "one connection for all four attempts")
}

// A call whose context ends during a backoff wait still hands back the
// last answer with its give-up.
func TestContextEndingDuringAWaitKeepsTheLastAnswer(t *testing.T) {
	t.Parallel()
	srv, _ := flakyServer(t, 100, 10)
	c := newTestClient(t, WithBackoffPolicy(func(int) time.Duration { return 10 * time.Second }))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "cancel-wait"))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	resp, err := c.Do(ctx, in)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, resp, "the last answer comes back")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "eeeeeeeeee", readBody(t, resp))
	assert.Equal(t, Pending, in.State)
}
