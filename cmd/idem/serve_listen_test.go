package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dialServe opens a raw TCP connection to a server started by startServe.
func dialServe(t *testing.T, url string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// waitClosed reads conn until the server closes it and returns how long
// after since that was; it fails the test if the server keeps it open
// past hangGuard, which only stops a hang. since is taken before the
// connection was dialled, so the server's timer cannot have started
// before it: the time returned is never less than the server's timeout,
// however slow the machine (a lower bound that load cannot break).
func waitClosed(t *testing.T, conn net.Conn, since time.Time) time.Duration {
	t.Helper()
	const hangGuard = time.Minute
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(hangGuard)))
	_, err := io.Copy(io.Discard, conn)
	require.NoError(t, err, "the server kept the connection open past %v", hangGuard)
	return time.Since(since)
}

// A client that sends all of a request but the last body byte is cut off
// after --read-timeout, not left to hold the connection.
func TestServe_ReadTimeoutClosesStalledBodies(t *testing.T) {
	t.Parallel()
	const readTimeout = 300 * time.Millisecond
	url, _, _ := startServe(t, nil, "--read-timeout", readTimeout.String())
	dialled := time.Now()
	conn := dialServe(t, url)
	body := `{"amount":1000,"currency":"EUR"}`
	_, err := io.WriteString(conn, "POST /v1/payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Authorization: Bearer tok\r\nIdempotency-Key: stall-1\r\n"+
		"Content-Length: "+itoa(len(body))+"\r\n\r\n"+body[:len(body)-1])
	require.NoError(t, err)
	assert.GreaterOrEqual(t, waitClosed(t, conn, dialled), readTimeout, "not closed before the timeout")
}

// An idle keep-alive connection is closed after --idle-timeout.
func TestServe_IdleTimeoutClosesKeepAlives(t *testing.T) {
	t.Parallel()
	const idleTimeout = 300 * time.Millisecond
	url, _, _ := startServe(t, nil, "--idle-timeout", idleTimeout.String())
	dialled := time.Now()
	conn := dialServe(t, url)
	_, err := io.WriteString(conn, "GET /v1/payments HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, resp.Close, "the server offers keep-alive")

	assert.GreaterOrEqual(t, waitClosed(t, conn, dialled), idleTimeout, "not closed before the timeout")
}

// A declared Content-Length far past the body limit is refused at once
// with 413: it never sizes a buffer, and the server does not wait for a
// body that will not come.
func TestServe_HugeContentLengthIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	url, _, _ := startServe(t, nil)
	conn := dialServe(t, url)
	_, err := io.WriteString(conn, "POST /v1/payments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Authorization: Bearer tok\r\nIdempotency-Key: huge-1\r\nContent-Length: 1099511627776\r\n\r\n{")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

// Timeouts of 0 would disable them, so they are refused.
func TestServe_RejectsNonPositiveTimeouts(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"--read-header-timeout", "--read-timeout", "--write-timeout", "--idle-timeout"} {
		err := runServeArgs(t, flag, "0s")
		require.Error(t, err, flag)
		assert.Contains(t, err.Error(), flag+" must be positive")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
