package pgkeystore

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// The fault this guards against: worker A's lease lapsed, B took the
// intent over and stored its answer, then A gave up and wrote Pending
// over it, so the answer was lost and the intent sent again.
func TestPostgresLapsedClaimCannotOverwrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	a, b := openPostgresIn(t, schema, nil), openPostgresIn(t, schema, nil)
	r := pendingRecord(1)
	_, _, err := a.Create(ctx, r)
	require.NoError(t, err)

	ok, err := a.ClaimKey(ctx, r.Key, "A", 50*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool {
		ok, err := b.ClaimKey(ctx, r.Key, "B", time.Minute)
		return err == nil && ok
	}, 5*time.Second, 10*time.Millisecond, "A's lease lapses and B takes over")
	done := r.Clone()
	done.State, done.Attempts, done.UpdatedAt = keystore.Succeeded, 1, r.UpdatedAt.Add(time.Second)
	done.Response = &keystore.Response{Status: 201, Header: http.Header{"Location": {"/pay/1"}}, Body: []byte(`{"id":"pay_1"}`)}
	require.NoError(t, b.UpdateClaimed(ctx, done, "B"))

	late := r.Clone()
	late.Attempts, late.LastError, late.UpdatedAt = 1, "gave up", r.UpdatedAt.Add(2*time.Second)
	err = a.UpdateClaimed(ctx, late, "A")
	require.ErrorIs(t, err, keystore.ErrClaimLost)
	assert.ErrorContains(t, err, keystore.KeyRef(r.Key))
	assert.NotContains(t, err.Error(), r.Key)
	assert.ErrorIs(t, a.Update(ctx, late), keystore.ErrSettled, "unfenced, the downgrade is refused all the same")

	got, err := a.Get(ctx, r.Key)
	require.NoError(t, err)
	assert.Equal(t, keystore.Succeeded, got.State)
	assert.Equal(t, done.Response, got.Response, "B's answer is intact")

	// After B releases, A's claim is still gone: B may have written.
	require.NoError(t, b.Unclaim(ctx, r.Key, "B"))
	assert.ErrorIs(t, a.UpdateClaimed(ctx, done, "A"), keystore.ErrClaimLost)
	assert.ErrorIs(t, a.UpdateClaimed(ctx, pendingRecord(99), "A"), keystore.ErrNotFound)
}

func TestPostgresUpdateClaimedByTheHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)
	r := pendingRecord(1)
	r.Name = "order-1"
	_, _, err := p.Create(ctx, r)
	require.NoError(t, err)
	assert.ErrorIs(t, p.UpdateClaimed(ctx, r, "A"), keystore.ErrClaimLost, "no claim is not a claim")

	ok, err := p.ClaimKey(ctx, r.Key, "A", 50*time.Millisecond)
	require.NoError(t, err)
	require.True(t, ok)
	r.Attempts = 1
	require.NoError(t, p.UpdateClaimed(ctx, r, "A"))
	time.Sleep(60 * time.Millisecond)
	r.Attempts = 2
	require.NoError(t, p.UpdateClaimed(ctx, r, "A"), "a lapsed claim nobody took is still A's")

	renamed := r.Clone()
	renamed.Name = "order-2"
	assert.ErrorContains(t, p.UpdateClaimed(ctx, renamed, "A"), "name is immutable")
	done := r.Clone()
	done.State = keystore.Failed
	require.NoError(t, p.UpdateClaimed(ctx, done, "A"))
	assert.ErrorIs(t, p.UpdateClaimed(ctx, r, "A"), keystore.ErrSettled)
	got, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assert.Equal(t, keystore.Failed, got.State)
	assert.Equal(t, 2, got.Attempts)
}

// The fault this guards against: a ClaimPending loop took an intent its
// creator had just begun, and the creator's own send was "busy".
func TestPostgresCreateClaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	creator, other := openPostgresIn(t, schema, nil), openPostgresIn(t, schema, nil)
	r := pendingRecord(1)
	r.Name = "order-1"
	stored, created, err := creator.CreateClaimed(ctx, r, "creator", time.Minute)
	require.NoError(t, err)
	require.True(t, created)
	assert.Equal(t, r.Key, stored.Key)

	recs, err := other.Claim(ctx, "loop", time.Minute, 10)
	require.NoError(t, err)
	assert.Empty(t, recs, "a new intent is its creator's while the lease lives")
	ok, err := other.ClaimKey(ctx, r.Key, "loop", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok)
	ok, err = creator.ClaimKey(ctx, r.Key, "creator", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok, "the creator's own claim renews")
	r.Attempts = 1
	require.NoError(t, creator.UpdateClaimed(ctx, r, "creator"))

	// Same name again: the existing record, unclaimed by the new caller.
	again := pendingRecord(2)
	again.Name = "order-1"
	existing, created, err := other.CreateClaimed(ctx, again, "loop", time.Minute)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, r.Key, existing.Key)
	assert.ErrorIs(t, other.UpdateClaimed(ctx, r, "loop"), keystore.ErrClaimLost)
	_, _, err = other.CreateClaimed(ctx, pendingRecord(1), "loop", time.Minute)
	assert.ErrorIs(t, err, keystore.ErrDuplicateKey)

	// A short lease runs out like any claim.
	short := pendingRecord(3)
	_, _, err = creator.CreateClaimed(ctx, short, "creator", 50*time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		recs, err := other.Claim(ctx, "loop", time.Minute, 10)
		return err == nil && len(recs) == 1 && recs[0].Key == short.Key
	}, 5*time.Second, 10*time.Millisecond)

	_, _, err = creator.CreateClaimed(ctx, pendingRecord(4), "", time.Minute)
	assert.Error(t, err, "an empty owner")
	_, _, err = creator.CreateClaimed(ctx, pendingRecord(4), "creator", 0)
	assert.Error(t, err, "no lease")
	_, err = creator.Get(ctx, pendingRecord(4).Key)
	assert.ErrorIs(t, err, keystore.ErrNotFound, "refused claims write nothing")
}
