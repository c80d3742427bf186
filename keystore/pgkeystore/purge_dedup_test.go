package pgkeystore_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// A purge that forgot a name let a re-run of the batch begin it again
// under a new key, and the server, unable to match it, paid again. With
// a tombstone the name keeps its key until the retention cutoff.
func TestPurgedNamesKeepTheirKeys(t *testing.T) {
	t.Parallel()
	t.Run("bolt", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "intents.db")
		testPurgedNamesKeepTheirKeys(t, func() keystore.Store {
			s, err := keystore.OpenBolt(path, nil)
			require.NoError(t, err)
			return s
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		dsn := testenv.PostgresDSN(t)
		opts := &pgkeystore.Options{Schema: testenv.PostgresSchema(t, dsn, "idem_kpd_")}
		testPurgedNamesKeepTheirKeys(t, func() keystore.Store {
			s, err := pgkeystore.Open(context.Background(), dsn, opts)
			require.NoError(t, err)
			return s
		})
	})
}

// testPurgedNamesKeepTheirKeys runs a batch of one payment, purges it,
// and runs the batch again; open opens the same keystore each time.
func testPurgedNamesKeepTheirKeys(t *testing.T, open func() keystore.Store) {
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	const name = "batch-7/payment-1"
	body := `{"amount": 777, "currency": "EUR", "reference": "batch-7-1"}`
	run := func(body string, do bool) (*idem.Intent, error) {
		client, err := idem.New(idem.WithStore(open())) // closes the store
		require.NoError(t, err)
		defer client.Close()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/payments", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		in, err := client.Begin(ctx, name, req)
		if err != nil || !do {
			return in, err
		}
		resp, err := client.Do(ctx, in)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		return in, nil
	}
	purge := func(req keystore.PurgeRequest) keystore.PurgeResult {
		s := open()
		defer s.Close()
		res, err := s.Purge(ctx, req)
		require.NoError(t, err)
		return res
	}

	first, err := run(body, true)
	require.NoError(t, err)
	require.Equal(t, 1, srv.PaymentCount())
	time.Sleep(5 * time.Millisecond)
	res := purge(keystore.PurgeRequest{OlderThan: time.Now(), KeepNamesAfter: time.Now().Add(-24 * time.Hour)})
	assert.Equal(t, keystore.PurgeResult{Tombstoned: 1}, res)

	again, err := run(body, true)
	require.NoError(t, err)
	assert.Equal(t, first.Key, again.Key, "the same name and payload get the same key back")
	assert.Equal(t, idem.Succeeded, again.State)
	assert.Equal(t, 1, srv.PaymentCount(), "the re-run paid nothing")
	_, err = run(`{"amount": 977, "currency": "EUR", "reference": "batch-7-1"}`, false)
	assert.ErrorIs(t, err, idem.ErrIntentConflict, "another payload under the name is a conflict")

	// Past the retention cutoff the tombstone is gone for good.
	res = purge(keystore.PurgeRequest{OlderThan: time.Now(), KeepNamesAfter: time.Now()})
	assert.Equal(t, keystore.PurgeResult{Deleted: 1}, res)
	s := open()
	_, err = s.Get(ctx, first.Key)
	assert.ErrorIs(t, err, keystore.ErrNotFound)
	require.NoError(t, s.Close())
}
