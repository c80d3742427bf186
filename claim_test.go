package idem

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// sharedKeystore returns the location and options of a Postgres keystore
// in a schema of its own, dropped when the test ends, or skips the test.
func sharedKeystore(t *testing.T) (string, keystore.OpenOption) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_claim_")
	return dsn, keystore.WithPostgresOptions(&keystore.PostgresOptions{Schema: schema})
}

// worker is a Client on the shared keystore, as one process of a fleet.
func worker(t *testing.T, dsn string, opt keystore.OpenOption, opts ...Option) *Client {
	t.Helper()
	return newTestClient(t, append([]Option{WithKeystore(context.Background(), dsn, opt)}, opts...)...)
}

func TestDoSkipsAnIntentAnotherWorkerHolds(t *testing.T) {
	t.Parallel()
	dsn, opt := sharedKeystore(t)
	srv := idemtest.NewServer(t)
	a, b := worker(t, dsn, opt), worker(t, dsn, opt)
	require.NotEqual(t, a.ClaimOwner(), b.ClaimOwner())
	ctx := context.Background()

	in := begin(t, a, "order-1", paymentRequest(t, srv.URL, 100, "order-1"))
	held, err := a.ClaimPending(ctx, 10)
	require.NoError(t, err)
	require.Len(t, held, 1)
	assert.Equal(t, in.Key, held[0].Key)

	onB, err := b.Resume(ctx, in.Key)
	require.NoError(t, err)
	resp, err := b.Do(ctx, onB)
	assert.Nil(t, resp)
	require.ErrorIs(t, err, ErrIntentBusy)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, in.Key, ge.Key)
	assert.Equal(t, Pending, onB.State)
	assert.Zero(t, srv.Requests(), "a busy intent is not sent")

	resp, err = a.Do(ctx, held[0])
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)

	resp, err = b.Do(ctx, onB)
	require.NoError(t, err, "once settled, the intent replays on any worker")
	assert.True(t, IsReplay(resp))
	assert.Equal(t, Succeeded, onB.State)
	assert.Equal(t, 1, srv.PaymentCount())
	assert.Equal(t, 1, srv.Requests())
}

// TestDoReleasesItsClaim: an intent left pending by a give-up is free for
// the next worker at once, without waiting for the lease.
func TestDoReleasesItsClaim(t *testing.T) {
	t.Parallel()
	dsn, opt := sharedKeystore(t)
	srv := idemtest.NewServer(t)
	a := worker(t, dsn, opt, WithMaxAttempts(1), WithClaimLease(time.Hour))
	b := worker(t, dsn, opt, WithClaimLease(time.Hour), WithRequestEditor(bearer(testToken)))
	ctx := context.Background()

	in := begin(t, a, "", paymentRequest(t, srv.URL, 100, "r"))
	srv.FailNext(1, http.StatusServiceUnavailable, 0)
	_, err := a.Do(ctx, in)
	require.Error(t, err)
	require.Equal(t, Pending, in.State)

	got, err := b.ClaimPending(ctx, 10)
	require.NoError(t, err)
	require.Len(t, got, 1, "a's claim was released when its Do returned")
	resp, err := b.Do(ctx, got[0])
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 1, srv.PaymentCount())

	again, err := a.ClaimPending(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, again, "a settled intent is never claimed again")
}

// TestClaimOfAStoppedWorkerRunsOut: a worker that claimed and stopped
// holds the intent only until its lease ends.
func TestClaimOfAStoppedWorkerRunsOut(t *testing.T) {
	t.Parallel()
	dsn, opt := sharedKeystore(t)
	srv := idemtest.NewServer(t)
	stopped := worker(t, dsn, opt, WithClaimLease(200*time.Millisecond))
	b := worker(t, dsn, opt, WithRequestEditor(bearer(testToken)))
	ctx := context.Background()

	in := begin(t, stopped, "", paymentRequest(t, srv.URL, 100, "r"))
	held, err := stopped.ClaimPending(ctx, 1)
	require.NoError(t, err)
	require.Len(t, held, 1)

	_, err = b.Do(ctx, in)
	require.ErrorIs(t, err, ErrIntentBusy)
	require.Eventually(t, func() bool {
		_, err := b.Do(ctx, in)
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 1, srv.PaymentCount())
}

// TestLongDoKeepsItsClaim: while a Do runs for several leases, it renews
// its claim, so no other worker sends the intent meanwhile.
func TestLongDoKeepsItsClaim(t *testing.T) {
	t.Parallel()
	dsn, opt := sharedKeystore(t)
	const lease = 300 * time.Millisecond
	release := make(chan struct{})
	var arrived, sent atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		arrived.Store(1)
		<-release
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	a := worker(t, dsn, opt, WithClaimLease(lease))
	b := worker(t, dsn, opt, WithClaimLease(lease))
	ctx := context.Background()

	in := begin(t, a, "", paymentRequest(t, slow.URL, 100, "r"))
	done := make(chan error, 1)
	go func() {
		_, err := a.Do(ctx, in)
		done <- err
	}()
	require.Eventually(t, func() bool { return arrived.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(3 * lease) // three leases: only renewals keep the claim

	onB, err := b.Resume(ctx, in.Key)
	require.NoError(t, err)
	_, err = b.Do(ctx, onB)
	require.ErrorIs(t, err, ErrIntentBusy, "the running Do renewed its claim")
	claimed, err := b.ClaimPending(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, claimed)

	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), sent.Load())
}

func TestClaimPendingWithoutASharedKeystore(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	ctx := context.Background()
	for i := range 3 {
		begin(t, c, "", paymentRequest(t, srv.URL, 100+i, "r"))
	}
	got, err := c.ClaimPending(ctx, 2)
	require.NoError(t, err)
	assert.Len(t, got, 2, "the first intents of Pending")

	_, err = c.ClaimPending(ctx, 0)
	require.Error(t, err)
	resp, err := c.Do(ctx, got[0])
	require.NoError(t, err, "no claims without a Claimer")
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
}

func TestWithKeystore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "intents.db")
	c, err := New(WithKeystore(context.Background(), path, keystore.WithBoltOptions(&keystore.BoltOptions{NoSync: true})))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	assert.FileExists(t, path)

	_, err = New(WithKeystore(context.Background(), "mysql://app:s3cret@db/x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "idem: opening keystore")
	assert.NotContains(t, err.Error(), "s3cret")

	_, err = New(WithClaimLease(0))
	require.Error(t, err)
}
