package idem

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closingServer answers the first request on each connection and closes
// the connection after reading the second, without an answer: the case
// in which net/http's Transport resends a "replayable" request (one with
// an Idempotency-Key) on a new connection by itself.
type closingServer struct {
	ln       net.Listener
	requests atomic.Int64
	wg       sync.WaitGroup
}

func newClosingServer(t *testing.T) *closingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &closingServer{ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.accept()
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *closingServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *closingServer) accept() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(conn)
		}()
	}
}

func (s *closingServer) serve(conn net.Conn) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		count := s.requests.Add(1)
		if n > 1 {
			return // read, then hang up without an answer
		}
		body := fmt.Sprintf(`{"id":"pay_%d"}`, count)
		_, _ = fmt.Fprintf(conn, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

// With one attempt per call, every request the server receives is an
// attempt the client made and counted: net/http resends nothing by itself.
func TestEveryRequestOnTheWireIsACountedAttempt(t *testing.T) {
	t.Parallel()
	srv := newClosingServer(t)
	c := newTestClient(t, WithMaxAttempts(1))
	attempts := 0
	for i := range 20 {
		in := begin(t, c, "", paymentRequest(t, srv.url(), 100+i, fmt.Sprintf("wire-%d", i)))
		_, err := c.Do(context.Background(), in)
		if err != nil {
			assert.ErrorIs(t, err, ErrOutcomeUnknown, "a request read and not answered may have taken effect")
			assert.Equal(t, Pending, in.State)
		}
		attempts += in.Attempts
	}
	assert.Equal(t, 20, attempts)
	assert.EqualValues(t, attempts, srv.requests.Load(), "requests received = attempts recorded")
}

// The same holds for Transport, and for a keyed request without a body.
func TestTransportResendsNothingHidden(t *testing.T) {
	t.Parallel()
	srv := newClosingServer(t)
	c := newTestClient(t, WithMaxAttempts(1))
	hc := &http.Client{Transport: c.Transport()}
	for range 20 {
		req, err := http.NewRequest(http.MethodPost, srv.url()+"/v1/capture", nil)
		require.NoError(t, err)
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
			_ = resp.Body.Close()
		}
	}
	assert.EqualValues(t, 20, srv.requests.Load())
}
