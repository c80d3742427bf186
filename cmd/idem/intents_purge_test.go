package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

func TestPurge_DeletesOldSettledIntentsOnly(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	// Old: one of each state. Pending ones are never purged, however old.
	ageRecords(t, p.path, 48*time.Hour, p.succeeded[0].Key, p.pending[0].Key, p.failed[0].Key)

	stdout, _, err := runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "24h", "--dry-run")
	require.NoError(t, err)
	assert.Equal(t, "would purge settled intents not updated for 24h from "+p.path+": 2 deleted, 0 tombstoned (dry run; nothing changed)\n"+
		"kept 1 intent whose outcome is not settled (1 pending or accepted: unsettled, never purged; resume or settle it)\n", stdout)
	assert.Len(t, readKeystore(t, p.path), 5)

	stdout, _, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "24h")
	require.NoError(t, err)
	assert.Equal(t, "purged settled intents not updated for 24h from "+p.path+": 2 deleted, 0 tombstoned\n"+
		"kept 1 intent whose outcome is not settled (1 pending or accepted: unsettled, never purged; resume or settle it)\n", stdout)

	left := map[string]bool{}
	for _, r := range readKeystore(t, p.path) {
		left[r.Key] = true
	}
	assert.Equal(t, map[string]bool{
		p.succeeded[1].Key: true, p.pending[0].Key: true, p.pending[1].Key: true,
	}, left)

	stdout, _, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "24h")
	require.NoError(t, err)
	assert.Equal(t, "purged settled intents not updated for 24h from "+p.path+": 0 deleted, 0 tombstoned\n"+
		"kept 1 intent whose outcome is not settled (1 pending or accepted: unsettled, never purged; resume or settle it)\n", stdout)
}

func TestPurge_ShorterThanTheRetentionNeedsForce(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	_, stderr, err := runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "1s")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "--older-than 1s is shorter than --retention 24h")
	assert.Contains(t, stderr, "names stay bound to their keys as tombstones until the retention has passed; without them a re-run would pay again")
	assert.Contains(t, stderr, "--force")
	_, stderr, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "2h", "--retention", "3h")
	requireOneLineError(t, stderr, err)
	for _, r := range readKeystore(t, p.path) {
		assert.True(t, r.Purged.IsZero(), "nothing was purged")
	}
	assert.Len(t, readKeystore(t, p.path), 5)
}

// The fault this guards against: `purge --older-than 1s` dropped settled
// intents, and re-running the batch began the same names under new keys,
// so every payment was made again.
func TestPurge_ForceKeepsTombstonesSoARerunGetsItsKeys(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	time.Sleep(10 * time.Millisecond)

	stdout, _, err := runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "1ms", "--force", "--json")
	require.NoError(t, err)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	assert.Equal(t, map[string]any{
		"keystore": p.path, "older_than": "1ms", "retention": "24h", "dry_run": false,
		"deleted": 0.0, "tombstoned": 3.0, "kept_unsettled": 2.0, "kept_unknown": 0.0,
	}, rep)
	for _, r := range readKeystore(t, p.path) {
		if r.State.Settled() {
			assert.False(t, r.Purged.IsZero(), r.Key)
			assert.Nil(t, r.Body, "a tombstone keeps no body")
		}
	}

	stdout, _, err = runIntentsCLI(t, nil, "list", "--keystore", p.path, "--state", "succeeded")
	require.NoError(t, err)
	assert.Contains(t, stdout, "succeeded (purged)")
	stdout, _, err = runIntentsCLI(t, nil, "show", "--keystore", p.path, p.succeeded[0].Key)
	require.NoError(t, err)
	assert.Contains(t, stdout, "Purged:")
	assert.Contains(t, stdout, "(body purged)")

	// The batch runs again: the same names and payloads get their keys.
	rerun := func(name string, body []byte) (*idem.Intent, error) {
		client, err := idem.New(idem.WithBoltStore(p.path, &keystore.BoltOptions{NoSync: true}))
		require.NoError(t, err)
		defer client.Close()
		req, err := http.NewRequest(http.MethodPost, p.srv.URL+"/v1/payments", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		return client.Begin(t.Context(), name, req)
	}
	payment0 := []byte(`{"amount": 1000, "currency": "EUR", "reference": "order-0"}`)
	in, err := rerun("order-0/payment", payment0)
	require.NoError(t, err)
	assert.Equal(t, p.succeeded[0].Key, in.Key, "the tombstone keeps the name bound to its key")
	assert.Equal(t, idem.Succeeded, in.State)
	_, err = rerun("order-0/payment", []byte(`{"amount": 9999, "currency": "EUR", "reference": "order-0"}`))
	assert.ErrorIs(t, err, idem.ErrIntentConflict, "the tombstone's fingerprint still tells another payload")

	// Once the retention has passed, tombstones go for good.
	time.Sleep(10 * time.Millisecond)
	stdout, _, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "1ms", "--retention", "1ms")
	require.NoError(t, err)
	assert.Equal(t, "purged settled intents not updated for 1ms from "+p.path+": 3 deleted, 0 tombstoned\n"+
		"kept 2 intents whose outcome is not settled (2 pending or accepted: unsettled, never purged; resume or settle them)\n", stdout)
	assert.Len(t, readKeystore(t, p.path), 2, "the pending intents")
	in, err = rerun("order-0/payment", payment0)
	require.NoError(t, err)
	assert.NotEqual(t, p.succeeded[0].Key, in.Key, "a name past the retention is free again")
}

func TestPurge_DryRunCountsTombstones(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	ageRecords(t, p.path, 2*time.Hour, p.succeeded[1].Key)

	stdout, _, err := runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "1h", "--force", "--dry-run")
	require.NoError(t, err)
	assert.Equal(t, "would purge settled intents not updated for 1h from "+p.path+": 0 deleted, 1 tombstoned (dry run; nothing changed)\n"+
		"tombstones keep their names bound to their keys until 24h after creation, so a re-run gets the same keys\n", stdout)
	stdout, _, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "1h", "--retention", "1h")
	require.NoError(t, err)
	assert.Contains(t, stdout, "1 deleted, 0 tombstoned")
}

func TestPurge_BadFlagsAreOneLine(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	for _, args := range [][]string{
		{},
		{"--older-than", "0s"},
		{"--older-than", "-24h"},
		{"--older-than", "a day"},
		{"--older-than", "24h", "extra"},
		{"--older-than", "24h", "--retention", "0s"},
		{"--older-than", "1h"},
	} {
		_, stderr, err := runIntentsCLI(t, nil, append([]string{"purge", "--keystore", p.path}, args...)...)
		requireOneLineError(t, stderr, err)
	}
	assert.Len(t, readKeystore(t, p.path), 5, "nothing was deleted")
}
