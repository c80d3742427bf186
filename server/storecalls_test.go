package server_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// hangGuard only stops a test from hanging when the bound under test is
// missing from the code; no test asserts against it, so a slow or loaded
// machine cannot fail a test by it.
const hangGuard = time.Minute

// errHangGuard is what a stalled store call returns when hangGuard, not
// the context it was given, ended it.
var errHangGuard = errors.New("test: the store call was given no bound; the hang guard ended it")

// storeCallSeen is what one store call was given, and how its context
// stood when it returned.
type storeCallSeen struct {
	op          string
	began       time.Time // when the store was called
	deadline    time.Time // its context's deadline
	hasDeadline bool
	ended       error     // its context's Err when the call returned
	returned    time.Time // when the call returned
}

// storeCalls records the store calls a test's store was given. The
// bounds tests assert on these deadlines, which the code under test set,
// never on how long a call took: that is the machine's speed.
type storeCalls struct {
	mu    sync.Mutex
	calls []storeCallSeen
	began chan string // op of each call as it begins
}

func newStoreCalls() *storeCalls { return &storeCalls{began: make(chan string, 64)} }

// watch records that op was called with ctx; the returned func records
// how ctx stood when the call returned.
func (s *storeCalls) watch(ctx context.Context, op string) func() {
	seen := storeCallSeen{op: op, began: time.Now()}
	seen.deadline, seen.hasDeadline = ctx.Deadline()
	select {
	case s.began <- op:
	default:
	}
	return func() {
		seen.ended, seen.returned = ctx.Err(), time.Now()
		s.mu.Lock()
		s.calls = append(s.calls, seen)
		s.mu.Unlock()
	}
}

// stall blocks as a store that never answers does, until ctx ends (or
// the hang guard), recording the call.
func (s *storeCalls) stall(ctx context.Context, op string) error {
	defer s.watch(ctx, op)()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(hangGuard):
		return errHangGuard
	}
}

// reset forgets the calls recorded so far: those made before the stall.
func (s *storeCalls) reset() {
	s.mu.Lock()
	s.calls = nil
	s.mu.Unlock()
	for len(s.began) > 0 {
		<-s.began
	}
}

// of returns the recorded calls of op.
func (s *storeCalls) of(op string) []storeCallSeen {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storeCallSeen
	for _, c := range s.calls {
		if c.op == op {
			out = append(out, c)
		}
	}
	return out
}

// requireEndedByBound checks that every recorded call of op (there is at
// least one) was given a deadline of bound from when the layer started
// on it (no earlier than notBefore, the instant before the test called
// the layer, plus bound; no later than the call's own start plus bound),
// and was ended by that deadline, not before it. Both are properties of the code, true
// on any machine at any load, and false when the bound is missing.
func requireEndedByBound(t *testing.T, s *storeCalls, op string, notBefore time.Time, bound time.Duration) {
	t.Helper()
	calls := s.of(op)
	require.NotEmpty(t, calls, "the store's %s was called", op)
	for _, c := range calls {
		require.True(t, c.hasDeadline, "%s was given a context with a deadline", op)
		assert.False(t, c.deadline.After(c.began.Add(bound)), "%s: deadline %s after the call began, want at most %s", op, c.deadline.Sub(c.began), bound)
		assert.False(t, c.deadline.Before(notBefore.Add(bound)), "%s: deadline %s after the test started it, want at least %s", op, c.deadline.Sub(notBefore), bound)
		// A store that set the deadline on its socket (go-redis) may see
		// it pass a moment before the context's own timer fires: either
		// shows the deadline ended the call, not an error before it.
		assert.True(t, errors.Is(c.ended, context.DeadlineExceeded) || !c.returned.Before(c.deadline),
			"%s was ended by its deadline, not before it (context: %v)", op, c.ended)
	}
}

// stallingStore is a real memory store whose Reserve blocks until its
// context ends, as a store that never answers does.
type stallingStore struct {
	*server.MemoryStore
	seen *storeCalls
}

func (s stallingStore) Reserve(ctx context.Context, _ server.Scope, _, _ string, _ time.Duration) (*server.Reservation, *server.Record, error) {
	return nil, nil, s.seen.stall(ctx, "reserve")
}

// stallingCompleteStore is a real memory store whose Complete blocks
// until its context ends.
type stallingCompleteStore struct {
	*server.MemoryStore
	seen *storeCalls
}

func (s stallingCompleteStore) Complete(ctx context.Context, _ server.Completion) error {
	return s.seen.stall(ctx, "complete")
}

// stallingReleaseStore is a real memory store whose Release blocks until
// its context ends.
type stallingReleaseStore struct {
	*server.MemoryStore
	seen *storeCalls
}

func (s stallingReleaseStore) Release(ctx context.Context, _ server.Reservation) error {
	return s.seen.stall(ctx, "release")
}

// watchedStore is a real store (Postgres, Redis) whose Reserve and
// Complete calls are recorded as they pass through.
type watchedStore struct {
	server.Store
	seen *storeCalls
}

func (s watchedStore) Reserve(ctx context.Context, scope server.Scope, key, fingerprint string, lease time.Duration) (*server.Reservation, *server.Record, error) {
	defer s.seen.watch(ctx, "reserve")()
	return s.Store.Reserve(ctx, scope, key, fingerprint, lease)
}

func (s watchedStore) Complete(ctx context.Context, c server.Completion) error {
	defer s.seen.watch(ctx, "complete")()
	return s.Store.Complete(ctx, c)
}
