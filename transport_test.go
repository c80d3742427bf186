package idem

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

func TestTransportMakesAPlainClientSafe(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	api := &http.Client{Transport: c.Transport()}

	srv.LoseNextResponses(1)
	srv.FailNext(1, http.StatusServiceUnavailable, 0)
	req := paymentRequest(t, srv.URL, 100, "transport")
	resp, err := api.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Contains(t, readBody(t, resp), `"id"`)
	assert.Equal(t, 1, srv.PaymentCount(), "the ephemeral key made the retries safe")
	assert.Empty(t, req.Header.Get("Idempotency-Key"), "the caller's request is not modified")
}

func TestTransportKeepsTheCallersKey(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	api := &http.Client{Transport: c.Transport()}

	for range 2 {
		req := paymentRequest(t, srv.URL, 100, "own key")
		req.Header.Set("Idempotency-Key", "callers-own-key-1")
		resp, err := api.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
	}
	assert.Equal(t, 1, srv.PaymentCount())
}

func TestTransportReturnsTheLastResponseOnGiveUp(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t, WithMaxAttempts(2))
	api := &http.Client{Transport: c.Transport()}

	srv.FailNext(5, http.StatusServiceUnavailable, 0)
	resp, err := api.Do(paymentRequest(t, srv.URL, 100, "down"))
	require.Nil(t, resp)
	require.ErrorIs(t, err, ErrRetriesExhausted, "giving up is an error, never a plain 503")
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	require.NotNil(t, ge.Response, "the last answer comes with the give-up")
	assert.Equal(t, http.StatusServiceUnavailable, ge.Response.StatusCode)
	assert.Contains(t, readBody(t, ge.Response), "injected-fault", "the body is intact")
}

func TestTransportUnkeyedUnsafeMethodIsNotResent(t *testing.T) {
	t.Parallel()
	// A server that reads the request and drops the connection: the
	// outcome of a request no key protects is unknown.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	requests := make(chan struct{}, 10)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = conn.Read(buf)
			requests <- struct{}{}
			conn.Close()
		}
	}()
	c := newTestClient(t)
	api := &http.Client{Transport: c.Transport()}
	req, err := http.NewRequest("PURGE", "http://"+ln.Addr().String()+"/cache", strings.NewReader("x"))
	require.NoError(t, err)
	_, err = api.Do(req)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Len(t, requests, 1, "sent once, never resent")
}

func TestTransportHonoursTheDeadline(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	api := &http.Client{Transport: c.Transport()}

	srv.FailNext(1, http.StatusServiceUnavailable, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := api.Do(paymentRequest(t, srv.URL, 100, "deadline").WithContext(ctx))
	require.ErrorIs(t, err, ErrWaitBeyondDeadline)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	require.NotNil(t, ge.Response)
	assert.Equal(t, http.StatusServiceUnavailable, ge.Response.StatusCode)
	assert.NoError(t, ctx.Err(), "returned at once, not after the deadline")
}

func TestTransportRejectsBadRequests(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	rt := c.Transport()
	req, err := http.NewRequest(http.MethodPost, "https://example.com/x", io.NopCloser(io.LimitReader(zeroReader{}, MaxBodySize+1)))
	require.NoError(t, err)
	_, err = rt.RoundTrip(req)
	assert.ErrorIs(t, err, ErrInvalidRequest)

	require.NoError(t, c.Close())
	_, err = rt.RoundTrip(req)
	assert.True(t, errors.Is(err, ErrClosed))
}
