package idem

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeCountingConn counts the writes made on a connection.
type writeCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCountingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// An attempt goes out in one write, header and body together, as a plain
// POST of an in-memory body does: net/http flushes the header on its own
// first for a body it does not know to be in memory, which costs a
// syscall and a packet per attempt.
func TestAnAttemptIsOneWrite(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	var writes atomic.Int64
	dialer := &net.Dialer{}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCountingConn{Conn: conn, writes: &writes}, nil
	}}}
	t.Cleanup(hc.CloseIdleConnections)

	plain := paymentRequest(t, srv.URL, 1, "plain")
	resp, err := hc.Do(plain)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, int64(1), writes.Load(), "a plain POST of an in-memory body is one write")

	c := newTestClient(t, WithHTTPClient(hc))
	for i := range 3 {
		in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "one-write"))
		before := writes.Load()
		resp, err := c.Do(context.Background(), in)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, int64(1), writes.Load()-before, "call %d", i)
	}
}
