package idem_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/saga"
)

// An unfinished saga run keeps its steps' intents through the scheduled
// purge, past their retention: a step found purged would pass for one
// never sent, and never be undone. Once the run completes, they go.
func TestScheduledPurgeKeepsTheStepsOfAnOpenRun(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	// The store times the run by the wall clock; the Client's clock
	// starts there and moves by hand.
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c, err := idem.New(idem.WithClockForTest(clock), idem.WithRetention(time.Hour), idem.WithPurgeEvery(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	s, err := saga.New(c)
	require.NoError(t, err)
	ctx := context.Background()
	run, err := s.Run(ctx, "order-1")
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/payments", strings.NewReader(`{"amount":100,"currency":"EUR","reference":"order-1"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tok_test_secret_4242")
	resp, err := run.Step(ctx, "charge", req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	advance(2 * time.Hour) // past the retention

	res, err := idem.PurgeNowForTest(c)
	require.NoError(t, err)
	require.Zero(t, res.Deleted, "the open run's step stays")
	held, err := c.Keystore().List(ctx, keystore.Filter{})
	require.NoError(t, err)
	require.Len(t, held, 1)

	require.NoError(t, run.Complete(ctx))
	res, err = idem.PurgeNowForTest(c)
	require.NoError(t, err)
	require.Equal(t, 1, res.Deleted, "a finished run's steps are purged like any intent")
}
