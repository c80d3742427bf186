package idem

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// A purge with names kept (the default of `idem intents purge`) leaves a
// tombstone: re-running the batch gets the same key back and replays
// locally, never a second payment.
func TestRerunAfterAPurgeDoesNotPayAgain(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	path := filepath.Join(t.TempDir(), "intents.db")
	ctx := context.Background()
	c, err := New(append(fastOptions(), WithBoltStore(path, nil))...)
	require.NoError(t, err)
	in := begin(t, c, "batch/1", paymentRequest(t, srv.URL, 100, "batch-1"))
	_, err = c.Do(ctx, in)
	require.NoError(t, err)
	require.NoError(t, c.Close())

	st, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	now := time.Now()
	res, err := st.Purge(ctx, keystore.PurgeRequest{OlderThan: now.Add(time.Second), KeepNamesAfter: now.Add(-DefaultRetention)})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.Positive(t, res.Tombstoned, "purged to a tombstone: %+v", res)

	c2 := newTestClient(t, WithBoltStore(path, nil))
	again := begin(t, c2, "batch/1", paymentRequest(t, srv.URL, 100, "batch-1"))
	assert.Equal(t, in.Key, again.Key, "the name still finds its key")
	assert.False(t, again.Purged.IsZero())
	resp, err := c2.Do(ctx, again)
	require.NoError(t, err)
	assert.True(t, IsLocalReplay(resp))
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get(PurgedHeader))
	assert.Equal(t, 1, srv.PaymentCount())
}
