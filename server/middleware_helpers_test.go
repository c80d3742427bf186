package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

const paymentsRoute = "/v1/payments"

// syncBuffer is a bytes.Buffer safe for a logger and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// rig is the idempotency layer over a memory store with a manual clock.
type rig struct {
	clock *manualClock
	store *server.MemoryStore
	idem  *server.Middleware
	logs  *syncBuffer
}

func newRig(t *testing.T, opts ...server.Option) *rig {
	t.Helper()
	clock := newManualClock()
	store := server.NewMemoryStore(server.WithClock(clock.Now))
	t.Cleanup(func() { _ = store.Close() })
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts = append([]server.Option{server.WithLogger(logger)}, opts...)
	return &rig{clock: clock, store: store, idem: mustNew(t, store, opts...), logs: logs}
}

// call describes one request to a wrapped handler.
type call struct {
	method string
	route  string
	token  string   // bearer token; empty sends no Authorization
	keys   []string // Idempotency-Key header values
	body   string
}

func post(key, body string) call {
	return call{method: http.MethodPost, route: paymentsRoute, keys: []string{key}, body: body}
}

func (c call) withToken(token string) call { c.token = token; return c }

func (c call) request() *http.Request {
	r := httptest.NewRequest(c.method, c.route, strings.NewReader(c.body))
	r.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	for _, k := range c.keys {
		r.Header.Add(server.KeyHeader, k)
	}
	return r
}

// serve runs c through h and returns the recorded answer.
func serve(h http.Handler, c call) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, c.request())
	return rec
}

// problemType returns the suffix of a problem answer's type, or "" when
// the answer is not a problem document.
func problemType(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	if rec.Header().Get("Content-Type") != "application/problem+json" {
		return ""
	}
	var p server.Problem
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	require.True(t, strings.HasPrefix(p.Type, server.ProblemTypePrefix), "problem type %q", p.Type)
	require.Equal(t, rec.Code, p.Status)
	return strings.TrimPrefix(p.Type, server.ProblemTypePrefix)
}

func replayed(rec *httptest.ResponseRecorder) bool {
	return rec.Header().Get(server.ReplayedHeader) == "true"
}

// countingHandler answers 201 JSON naming how many times it ran, with a
// Location, a resource id, a header kept for replays and one that is not.
type countingHandler struct {
	calls atomic.Int32
}

func (h *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	id := fmt.Sprintf("pay_%d", n)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", paymentsRoute+"/"+id)
	w.Header().Set(server.ResourceIDHeader, id)
	w.Header().Set("X-Request-Cost", "7")
	w.Header().Set("X-Trace", fmt.Sprintf("trace-%d", n))
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"id":%q,"run":%d,"echo":%q}`, id, n, body)
}

func (h *countingHandler) runs() int { return int(h.calls.Load()) }

// statusHandler answers status with a small JSON body on every run.
type statusHandler struct {
	status int
	calls  atomic.Int32
}

func (h *statusHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := h.calls.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(h.status)
	_, _ = fmt.Fprintf(w, `{"status":%d,"run":%d}`, h.status, n)
}

// panicHandler panics on every run.
type panicHandler struct {
	calls atomic.Int32
}

func (h *panicHandler) ServeHTTP(http.ResponseWriter, *http.Request) {
	h.calls.Add(1)
	panic("payment processor exploded")
}

// acceptedHandler answers 202 with an operation document, as a handler
// with a long-running external effect does.
type acceptedHandler struct {
	calls atomic.Int32
}

func (h *acceptedHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := h.calls.Add(1)
	id := fmt.Sprintf("op_%d", n)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/v1/operations/"+id)
	w.Header().Set("Retry-After", "2")
	w.WriteHeader(http.StatusAccepted)
	_, _ = fmt.Fprintf(w, `{"id":%q,"status":"pending"}`, id)
}

// blockingHandler blocks its first run until release is closed, after
// telling entered; later runs answer at once. Every run answers 201 with
// the run number.
type blockingHandler struct {
	entered chan struct{}
	release chan struct{}
	calls   atomic.Int32
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *blockingHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := h.calls.Add(1)
	if n == 1 {
		close(h.entered)
		<-h.release
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"run":%d}`, n)
}

// brokenStore is a Store whose Reserve always fails, as when the database
// is unreachable.
type brokenStore struct {
	server.Store
}

func (brokenStore) Reserve(context.Context, server.Scope, string, string, time.Duration) (*server.Reservation, *server.Record, error) {
	return nil, nil, errors.New("dial tcp 10.0.0.7:5432: connection refused")
}

// failingCompleteStore is a Store whose Complete fails.
type failingCompleteStore struct {
	server.Store
}

func (failingCompleteStore) Complete(context.Context, server.Completion) error {
	return errors.New("connection reset by peer")
}

// newBenchKey returns a distinct key for i.
func newBenchKey(i int) string { return fmt.Sprintf("key-%d", i) }

// testSecret keys the principal hash of every test layer.
var testSecret = []byte("test principal secret")

// mustNew is server.New scoping keys by bearer token under the test
// secret, requests without one anonymous, failing t on error.
func mustNew(t testing.TB, store server.Store, opts ...server.Option) *server.Middleware {
	t.Helper()
	base := []server.Option{server.WithPrincipal(server.BearerPrincipal(testSecret)), server.WithAnonymous()}
	m, err := server.New(store, append(base, opts...)...)
	require.NoError(t, err)
	return m
}
