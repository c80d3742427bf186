package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPurge_DeletesOldFinishedIntentsOnly(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	// Old: one of each state. Pending ones are never purged, however old.
	ageRecords(t, p.path, 48*time.Hour, p.succeeded[0].Key, p.pending[0].Key, p.failed[0].Key)

	stdout, _, err := runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "24h", "--dry-run")
	require.NoError(t, err)
	assert.Equal(t, "would purge 2 finished intents not updated for 24h from "+p.path+" (dry run; nothing deleted)\n", stdout)
	assert.Len(t, readKeystore(t, p.path), 5)

	stdout, _, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "24h")
	require.NoError(t, err)
	assert.Equal(t, "purged 2 finished intents not updated for 24h from "+p.path+"\n", stdout)

	left := map[string]bool{}
	for _, r := range readKeystore(t, p.path) {
		left[r.Key] = true
	}
	assert.Equal(t, map[string]bool{
		p.succeeded[1].Key: true, p.pending[0].Key: true, p.pending[1].Key: true,
	}, left)

	stdout, _, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "24h")
	require.NoError(t, err)
	assert.Equal(t, "purged 0 finished intents not updated for 24h from "+p.path+"\n", stdout)
}

func TestPurge_CountMatchesDryRun(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	ageRecords(t, p.path, 2*time.Hour, p.succeeded[1].Key)

	stdout, _, err := runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "1h", "--dry-run")
	require.NoError(t, err)
	assert.Contains(t, stdout, "would purge 1 finished intent not updated for 1h")
	stdout, _, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "1h")
	require.NoError(t, err)
	assert.Contains(t, stdout, "purged 1 finished intent not updated for 1h")
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
	} {
		_, stderr, err := runIntentsCLI(t, nil, append([]string{"purge", "--keystore", p.path}, args...)...)
		requireOneLineError(t, stderr, err)
	}
	assert.Len(t, readKeystore(t, p.path), 5, "nothing was deleted")
}
