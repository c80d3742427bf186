package idemtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testserver"
)

// Payment is a payment as the server stores it.
type Payment = testserver.Payment

// AnonymousPrincipal is the principal of requests without Authorization.
const AnonymousPrincipal = testserver.AnonymousPrincipal

// Server is a reference server listening on a loopback port.
type Server struct {
	// URL is the base URL, http://127.0.0.1:port, without a trailing
	// slash.
	URL string

	http      *httptest.Server
	ref       *testserver.Server
	fatalf    func(format string, args ...any)
	closeOnce sync.Once
}

// NewServer starts a server and registers its Close with tb. Invalid
// options fail the test.
func NewServer(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s, err := start(tb.Fatalf, opts)
	if err != nil {
		tb.Fatalf("idemtest: %v", err)
		return nil
	}
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server outside a test, for examples and demos; the
// caller must Close it. Where a server from NewServer would fail its test
// (a bad FailNext status, reading a closed server), this one panics.
func Start(opts ...Option) (*Server, error) {
	return start(func(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }, opts)
}

func start(fatalf func(string, ...any), opts []Option) (*Server, error) {
	var cfg config
	for _, opt := range opts {
		opt(&cfg)
	}
	ref, err := testserver.New(cfg.opts...)
	if err != nil {
		return nil, err
	}
	ts := httptest.NewServer(ref.Handler())
	return &Server{URL: ts.URL, http: ts, ref: ref, fatalf: fatalf}, nil
}

// Client returns an HTTP client for the server. It keeps connections
// alive; see the package documentation on dropped connections.
func (s *Server) Client() *http.Client { return s.http.Client() }

// Close shuts the server down, blocking until its requests are done.
// Calling it again does nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.http.Close()
		_ = s.ref.Close() // the memory store's Close cannot fail
	})
}

// FailNext answers the next n POST requests with status, an
// application/problem+json document, and Retry-After when retryAfter > 0,
// before anything executes: no payment is made and the key stays free.
// status must be 400–599.
func (s *Server) FailNext(n, status int, retryAfter time.Duration) {
	if status < 400 || status > 599 {
		s.fatalf("idemtest: FailNext status must be 400-599, got %d", status)
		return
	}
	s.ref.Faults().FailNext(n, status, retryAfter)
}

// LoseNextResponses lets the next n POST requests execute fully (the
// payment is made, the key completed), then closes the connection without
// an answer.
func (s *Server) LoseNextResponses(n int) { s.ref.Faults().LoseNextResponses(n) }

// ResetNext resets the connection (TCP RST) of the next n POST requests
// before anything executes.
func (s *Server) ResetNext(n int) { s.ref.Faults().ResetNext(n) }

// SetHandlerDelay holds every POST request for d after its key is
// reserved, so a duplicate sent meanwhile gets 409 /in-progress. 0 ends
// the delay.
func (s *Server) SetHandlerDelay(d time.Duration) { s.ref.Faults().SetHandlerDelay(d) }

// ClearFaults disarms every fault.
func (s *Server) ClearFaults() { s.ref.Faults().Clear() }

// PaymentCount returns how many payments exist, for all principals.
func (s *Server) PaymentCount() int {
	n, err := s.ref.Store().CountPayments(context.Background())
	if err != nil {
		s.fatalf("idemtest: counting payments: %v", err)
	}
	return n
}

// InventoryAdjustments returns how many inventory adjustment groups the
// Shopify dialect's GraphQL endpoint (POST
// /admin/api/2026-04/graphql.json, WithDialect("shopify")) has made.
func (s *Server) InventoryAdjustments() int { return s.ref.InventoryAdjustments() }

// Payments returns the payments made with the bearer token ("" for
// requests without Authorization), newest first; under WithAccounts, the
// payments of the token's account, made with any of its tokens. A token
// is its own principal whatever it says: "anonymous" is not
// AnonymousPrincipal.
func (s *Server) Payments(token string) []Payment {
	payments, err := s.ref.Store().ListPayments(context.Background(), s.ref.PrincipalOf(token))
	if err != nil {
		s.fatalf("idemtest: listing payments: %v", err)
	}
	return payments
}

// Holding returns how many guarded requests hold their key right now:
// reserved, and their handler (or the delay of SetHandlerDelay) still
// running. A test that needs a key held by another request waits for it.
func (s *Server) Holding() int { return s.ref.Faults().Holding() }

// Requests returns how many POST requests to guarded routes arrived,
// faulted ones included: one per attempt, so retry tests can count them.
func (s *Server) Requests() int { return s.ref.GuardedRequests() }
