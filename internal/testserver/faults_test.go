package testserver

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freshClient opens a new connection per request, so a dropped connection
// surfaces as an error instead of net/http retrying it on another pooled
// connection (it may, for requests carrying Idempotency-Key).
func freshClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// signallingStore reports each successful reservation, so tests can order
// requests without sleeping.
type signallingStore struct {
	*MemoryStore
	reserved chan struct{}
}

func (s *signallingStore) Reserve(ctx context.Context, scope Scope, key, fingerprint string, lease time.Duration) (*Reservation, *Record, error) {
	res, rec, err := s.MemoryStore.Reserve(ctx, scope, key, fingerprint, lease)
	if res != nil {
		select {
		case s.reserved <- struct{}{}:
		default:
		}
	}
	return res, rec, err
}

func TestFailNextAnswersBeforeExecution(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t)
	s.Faults().FailNext(2, http.StatusServiceUnavailable, 2*time.Second)

	for i := range 2 {
		r := do(t, ts.Client(), ts.URL, pay("alice", "k"))
		require.Equal(t, http.StatusServiceUnavailable, r.status)
		assert.Equal(t, ProblemInjectedFault, r.problem(t).Type[len(ProblemTypePrefix):])
		assert.Equal(t, "2", r.header.Get("Retry-After"))
		assert.Equal(t, 1-i, s.Faults().Snapshot().FailNext.Count)
	}
	assert.Equal(t, 0, paymentCount(t, s), "a failed request makes no effect")

	r := do(t, ts.Client(), ts.URL, pay("alice", "k"))
	assert.Equal(t, http.StatusCreated, r.status, "nothing was stored under the key")
	assert.Empty(t, r.header.Get("Idempotent-Replayed"))
	assert.Equal(t, 3, s.GuardedRequests())
}

func TestFailNextSkipsUnguardedRequests(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t)
	s.Faults().FailNext(1, http.StatusTooManyRequests, 0)
	assert.Equal(t, http.StatusOK, do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments"}).status)
	r := do(t, ts.Client(), ts.URL, pay("", "k"))
	assert.Equal(t, http.StatusTooManyRequests, r.status)
	assert.Empty(t, r.header.Get("Retry-After"))
	assert.Equal(t, 1, s.GuardedRequests())
}

func TestFaultSettersNormaliseBadValues(t *testing.T) {
	t.Parallel()
	var f Faults
	f.FailNext(-3, 200, -time.Second)
	f.LoseNextResponses(-1)
	f.ResetNext(-1)
	f.SetHandlerDelay(-time.Second)
	assert.Equal(t, FaultState{FailNext: FailNextState{Status: DefaultFailStatus}}, f.Snapshot())
	f.FailNext(1, 502, time.Second)
	f.LoseNextResponses(2)
	f.ResetNext(3)
	f.SetHandlerDelay(time.Millisecond)
	f.Clear()
	assert.Equal(t, FaultState{}, f.Snapshot())
}

func TestOneShotFaultsAreConsumedOneAtATime(t *testing.T) {
	t.Parallel()
	var f Faults
	f.FailNext(1, 500, 0)
	f.ResetNext(1)
	f.LoseNextResponses(1)
	var got []faultKind
	for range 4 {
		kind, _, _ := f.take()
		got = append(got, kind)
	}
	assert.Equal(t, []faultKind{faultReset, faultFail, faultLose, faultNone}, got)
}

// TestLostResponseKeepsTheEffectAndReplays is the case retries exist for:
// the payment was made, the answer never arrived, the retry with the same
// key gets the original answer instead of paying twice.
func TestLostResponseKeepsTheEffectAndReplays(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t)
	s.Faults().LoseNextResponses(1)

	_, err := freshClient().Do(pay("alice", "k").request(t, ts.URL))
	require.Error(t, err, "the response is lost")
	assert.False(t, errors.Is(err, syscall.ECONNRESET), "a lost response closes the connection, it does not reset it: %v", err)
	assert.Equal(t, 1, paymentCount(t, s), "the payment was made")

	r := do(t, freshClient(), ts.URL, pay("alice", "k"))
	p := decodePayment(t, r)
	assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	stored, err := s.Store().ListPayments(context.Background(), s.PrincipalOf("alice"))
	require.NoError(t, err)
	require.Len(t, stored, 1)
	assert.Equal(t, stored[0].ID, p.ID)
	assert.Equal(t, 2, s.GuardedRequests())
}

func TestResetConnectionMakesNoEffect(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t)
	s.Faults().ResetNext(1)

	_, err := freshClient().Do(pay("alice", "k").request(t, ts.URL))
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ECONNRESET)
	assert.Equal(t, 0, paymentCount(t, s))

	r := do(t, freshClient(), ts.URL, pay("alice", "k"))
	assert.Equal(t, http.StatusCreated, r.status)
	assert.Empty(t, r.header.Get("Idempotent-Replayed"), "the reset request reserved nothing")
}

// TestHandlerDelayHoldsTheKey shows the delay runs after the reservation:
// a duplicate meanwhile gets 409, and a request cancelled during the delay
// executes nothing and frees its key.
func TestHandlerDelayHoldsTheKey(t *testing.T) {
	t.Parallel()
	store := &signallingStore{MemoryStore: NewMemoryStore(), reserved: make(chan struct{}, 1)}
	s, ts := startServer(t, WithStore(store))
	s.Faults().SetHandlerDelay(time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	firstDone := make(chan error, 1)
	go func() {
		resp, err := freshClient().Do(pay("alice", "k").request(t, ts.URL).WithContext(ctx))
		if err == nil {
			resp.Body.Close()
		}
		firstDone <- err
	}()
	select {
	case <-store.reserved:
	case <-time.After(30 * time.Second):
		t.Fatal("the first request never reserved its key")
	}

	dup := do(t, freshClient(), ts.URL, pay("alice", "k"))
	assert.Equal(t, http.StatusConflict, dup.status)
	assert.Equal(t, ProblemInProgress, dup.problemType())
	assert.NotEmpty(t, dup.header.Get("Retry-After"))

	cancel()
	require.Error(t, <-firstDone)
	s.Faults().SetHandlerDelay(0)

	// The cancelled request releases its key once its handler returns;
	// until then a retry may still see 409.
	var r reply
	for range 1000 {
		if r = do(t, freshClient(), ts.URL, pay("alice", "k")); r.status != http.StatusConflict {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
	assert.Empty(t, r.header.Get("Idempotent-Replayed"))
	assert.Equal(t, 1, paymentCount(t, s))
}
