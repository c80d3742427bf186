package testserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for payouts and retention.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// startServer runs a reference server on a loopback httptest.Server.
func startServer(t *testing.T, opts ...Option) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(opts...)
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		assert.NoError(t, s.Close())
	})
	return s, ts
}

// call is one request to the test server.
type call struct {
	method      string
	path        string
	token       string // bearer token; "" sends no Authorization
	key         string // Idempotency-Key; "" sends none
	contentType string // default application/json when body is set
	body        string
	header      http.Header
}

// reply is a fully read response.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) problemType() string {
	var p Problem
	_ = json.Unmarshal(r.body, &p)
	return strings.TrimPrefix(p.Type, ProblemTypePrefix)
}

func (r reply) problem(t *testing.T) Problem {
	t.Helper()
	require.Equal(t, "application/problem+json", r.header.Get("Content-Type"), "body: %s", r.body)
	var p Problem
	require.NoError(t, json.Unmarshal(r.body, &p))
	return p
}

func (c call) request(t *testing.T, baseURL string) *http.Request {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(context.Background(), c.method, baseURL+c.path, body)
	require.NoError(t, err)
	for name, values := range c.header {
		req.Header[name] = values
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.key != "" {
		req.Header.Set("Idempotency-Key", c.key)
	}
	switch {
	case c.contentType != "":
		req.Header.Set("Content-Type", c.contentType)
	case c.body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// do sends c and reads the whole response.
func do(t *testing.T, client *http.Client, baseURL string, c call) reply {
	t.Helper()
	resp, err := client.Do(c.request(t, baseURL))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: body}
}

// pay is a valid payment request with key.
func pay(token, key string) call {
	return call{method: http.MethodPost, path: "/v1/payments", token: token, key: key,
		body: `{"amount":1000,"currency":"EUR","reference":"order-42"}`}
}

func decodePayment(t *testing.T, r reply) Payment {
	t.Helper()
	require.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	var p Payment
	require.NoError(t, json.Unmarshal(r.body, &p))
	return p
}

func paymentCount(t *testing.T, s *Server) int {
	t.Helper()
	n, err := s.Store().CountPayments(context.Background())
	require.NoError(t, err)
	return n
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	cases := map[string]Option{
		"lease":                WithServerLease(-time.Second),
		"retention":            WithServerRetention(0),
		"max body":             WithServerMaxBody(0),
		"payout delay":         WithPayoutDelay(-time.Second),
		"sweep interval":       WithSweepInterval(-time.Minute),
		"clock":                WithServerClock(nil),
		"admin token":          WithAdminToken("has space"),
		"store timeout":        WithServerStoreTimeout(0),
		"3 × store timeout 3s": WithServerLease(2 * time.Second),
	}
	for name, opt := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := New(opt)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), name)
		})
	}
}

func TestCloseKeepsAGivenStoreOpenAndIsIdempotent(t *testing.T) {
	t.Parallel()
	store := NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	s, err := New(WithStore(store))
	require.NoError(t, err)
	assert.Same(t, store, s.Store())

	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = store.CountPayments(context.Background())
	assert.NoError(t, err, "a store the server did not create stays open")
}

func TestCloseClosesTheStoreItCreated(t *testing.T) {
	t.Parallel()
	s, err := New()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Store().CountPayments(context.Background())
	assert.Error(t, err)
}

func TestHeadFollowsGet(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t)
	r := do(t, ts.Client(), ts.URL, call{method: http.MethodHead, path: "/v1/payments"})
	assert.Equal(t, http.StatusOK, r.status)
	assert.Empty(t, r.body)
}
