package main

import (
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// The fault this guards against: purge deleted an expired intent whose
// payment the server had made (its answer was lost), and re-running the
// batch began the name under a new key and paid again.
func TestPurge_KeepsExpiredIntentsSoARerunDoesNotPayAgain(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	path := filepath.Join(t.TempDir(), "intents.db")
	const name = "order-21/payment"
	run := func() (*idem.Intent, error) {
		client, err := idem.New(idem.WithBoltStore(path, &keystore.BoltOptions{NoSync: true}), idem.WithMaxAttempts(1))
		require.NoError(t, err)
		defer client.Close()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/payments",
			strings.NewReader(`{"amount": 2100, "currency": "EUR", "reference": "order-21"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		in, err := client.Begin(t.Context(), name, req)
		require.NoError(t, err)
		resp, err := client.Do(t.Context(), in)
		if resp != nil {
			resp.Body.Close()
		}
		return in, err
	}

	// The payment is made, its answer lost; two days later the intent is
	// past the retention and expires.
	srv.LoseNextResponses(1)
	in, err := run()
	require.ErrorIs(t, err, idem.ErrOutcomeUnknown)
	require.Equal(t, 1, srv.PaymentCount())
	ageRecords(t, path, 48*time.Hour, in.Key)
	in, err = run()
	require.ErrorIs(t, err, idem.ErrKeyExpired)
	require.Equal(t, idem.Expired, in.State)
	ageRecords(t, path, 48*time.Hour, in.Key)

	stdout, stderr, err := runIntentsCLI(t, nil, "purge", "--keystore", path, "--older-than", "24h")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, ": 0 deleted, 0 tombstoned\n")
	assert.Contains(t, stdout, "kept 1 intent whose outcome is not settled (1 expired or with its operation gone, outcome unknown: ")
	assert.Contains(t, stdout, "--force")
	stdout, stderr, err = runIntentsCLI(t, nil, "purge", "--keystore", path, "--older-than", "24h", "--dry-run", "--json")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, `"kept_unknown": 1`)

	again, err := run()
	require.ErrorIs(t, err, idem.ErrKeyExpired, "the name still finds its expired intent")
	assert.Equal(t, in.Key, again.Key)
	assert.Equal(t, 1, srv.PaymentCount(), "one payment on the server's ledger")

	// --force purges it, and says nothing was kept.
	stdout, stderr, err = runIntentsCLI(t, nil, "purge", "--keystore", path, "--older-than", "24h", "--force")
	require.NoError(t, err, stderr)
	assert.Equal(t, "purged settled intents not updated for 24h from "+path+": 1 deleted, 0 tombstoned\n", stdout)
	_, err = run()
	assert.False(t, errors.Is(err, idem.ErrKeyExpired), "a forced purge forgot the name: %v", err)
}
