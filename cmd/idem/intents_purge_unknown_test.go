package main

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// TestPurge_NeverDeletesAnUnknownOutcomeWithoutForce: purge keeps every
// intent whose outcome is not proven (pending, accepted, expired, and
// failed with its operation gone, as earlier builds stored it) however
// old, unless --force; and pending and accepted ones even with --force.
// Each kind is a record of its own, so dropping any one guard fails here.
func TestPurge_NeverDeletesAnUnknownOutcomeWithoutForce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "idem.db")
	old := time.Now().Add(-72 * time.Hour)
	rec := func(key string, state keystore.State) *keystore.Record {
		return &keystore.Record{
			Key: key, Name: "batch/" + key, Method: http.MethodPost,
			URL: "https://api.example.com/v1/payouts", Fingerprint: "sha256:" + key,
			State: state, CreatedAt: old, UpdatedAt: old, Attempts: 1,
		}
	}
	pending := rec("pending", keystore.Pending)
	pending.MayHaveExecuted = true
	accepted := rec("accepted", keystore.Accepted)
	accepted.Operation = "https://api.example.com/v1/operations/op_accepted"
	accepted.Response = &keystore.Response{Status: 202}
	expired := rec("expired", keystore.Expired)
	gone := rec("gone", keystore.Failed)
	gone.Operation = "https://api.example.com/v1/operations/op_gone"
	gone.Response = &keystore.Response{Status: 410}
	require.True(t, gone.OperationGone())
	failed := rec("failed", keystore.Failed)
	failed.Response = &keystore.Response{Status: 422}
	paid := rec("paid", keystore.Succeeded)
	paid.Response = &keystore.Response{Status: 201}

	st, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)
	for _, r := range []*keystore.Record{pending, accepted, expired, gone, failed, paid} {
		_, created, err := st.Create(t.Context(), r)
		require.NoError(t, err)
		require.True(t, created, r.Key)
	}
	require.NoError(t, st.Close())
	left := func() []string {
		var keys []string
		for _, r := range readKeystore(t, path) {
			keys = append(keys, r.Key)
		}
		return keys
	}

	stdout, stderr, err := runIntentsCLI(t, nil, "purge", "--keystore", path, "--older-than", "24h", "--json")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, `"deleted": 2`, "only the proven outcomes go")
	assert.Contains(t, stdout, `"kept_unsettled": 2`)
	assert.Contains(t, stdout, `"kept_unknown": 2`)
	assert.ElementsMatch(t, []string{"pending", "accepted", "expired", "gone"}, left(),
		"no unsettled or unknown-outcome intent is deleted without --force")

	stdout, stderr, err = runIntentsCLI(t, nil, "purge", "--keystore", path, "--older-than", "24h", "--force", "--json")
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, `"deleted": 2`, "--force deletes the expired and the gone")
	assert.ElementsMatch(t, []string{"pending", "accepted"}, left(),
		"pending and accepted intents are never purged, not even with --force")
}
