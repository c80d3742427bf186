package idem

import (
	"context"
	"errors"
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
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// sharedKeystore returns the location and options of a Postgres keystore
// in a schema of its own, dropped when the test ends, or skips the test.
func sharedKeystore(t *testing.T) (string, keystore.OpenOption) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_claim_")
	return dsn, pgkeystore.WithOptions(&pgkeystore.Options{Schema: schema})
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

	// Begin claims the new intent for its creator: no other worker takes it.
	in := begin(t, a, "order-1", paymentRequest(t, srv.URL, 100, "order-1"))
	taken, err := b.ClaimPending(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, taken, "a fresh intent belongs to its creator")
	held := []*Intent{in}

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

	in := begin(t, stopped, "", paymentRequest(t, srv.URL, 100, "r")) // claimed by Begin

	_, err := b.Do(ctx, in)
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
	// Renewals come every third of the lease: a lease of a second leaves
	// a loaded machine two thirds of a second for each, where 300 ms left
	// it 200 ms.
	const lease = time.Second
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

// A producer that begins intents for a fleet and closes hands them over at
// once: Close releases the claims Begin took on intents it never sent.
func TestCloseReleasesTheClaimsOfUnsentIntents(t *testing.T) {
	t.Parallel()
	dsn, opt := sharedKeystore(t)
	srv := idemtest.NewServer(t)
	producer := worker(t, dsn, opt, WithClaimLease(time.Hour))
	b := worker(t, dsn, opt, WithRequestEditor(bearer(testToken)))
	ctx := context.Background()
	for i := range 3 {
		begin(t, producer, "", paymentRequest(t, srv.URL, 100+i, "produced"))
	}
	none, err := b.ClaimPending(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, none, "held by their producer")
	require.NoError(t, producer.Close())

	got, err := b.ClaimPending(ctx, 10)
	require.NoError(t, err)
	require.Len(t, got, 3, "released at close, not after the hour-long lease")
	for _, in := range got {
		_, err := b.Do(ctx, in)
		require.NoError(t, err)
	}
	assert.Equal(t, 3, srv.PaymentCount())
}

// A worker whose claim another worker took over cannot write over that
// worker's result: its late give-up (Pending, no answer) is refused, the
// stored answer stays, and Do hands back the stored answer instead.
func TestAStaleWorkerNeverOverwritesTheNewOwnersResult(t *testing.T) {
	t.Parallel()
	dsn, opt := sharedKeystore(t)
	srv := idemtest.NewServer(t)
	stale := worker(t, dsn, opt, WithClaimLease(100*time.Millisecond))
	owner := worker(t, dsn, opt, WithRequestEditor(bearer(testToken)))
	ctx := context.Background()

	in := begin(t, stale, "", paymentRequest(t, srv.URL, 100, "stale"))
	before, err := stale.store.Get(ctx, in.Key)
	require.NoError(t, err)
	// The stale worker's lease lapses (it stalled); the other worker takes
	// the intent over and settles it.
	require.Eventually(t, func() bool {
		_, err := owner.Do(ctx, in)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)
	require.Equal(t, Succeeded, in.State)

	// The stale worker wakes up and records its give-up under its claim.
	claimer := stale.store.(keystore.Claimer)
	late := before.Clone()
	late.Attempts, late.LastError = 1, "gave up: retries exhausted"
	err = stale.write(withHeldClaim(ctx, claimer, stale.ClaimOwner()), stale.update, late)
	require.Error(t, err)
	assert.True(t, errors.Is(err, keystore.ErrClaimLost) || errors.Is(err, keystore.ErrSettled), "refused: %v", err)

	got, err := stale.store.Get(ctx, in.Key)
	require.NoError(t, err)
	assert.Equal(t, Succeeded, got.State, "the new owner's result stands")
	require.NotNil(t, got.Response, "its answer is not lost")
	assert.Equal(t, http.StatusCreated, got.Response.Status)
	assert.Equal(t, 1, srv.PaymentCount())
}
