package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

func TestList_TableShowsEveryIntentWithoutSecretsOrBodies(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)

	stdout, stderr, err := runIntentsCLI(t, nil, "list", "--keystore", p.path)
	require.NoError(t, err, stderr)
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	require.Len(t, lines, 1+len(p.all()), stdout)
	assert.Regexp(t, `^KEY\s+NAME\s+PRINCIPAL\s+STATE\s+METHOD\s+URL\s+ATTEMPTS\s+AGE\s+LAST$`, lines[0])
	for i, in := range p.all() {
		row := lines[1+i] // oldest first, the order they were begun
		assert.True(t, strings.HasPrefix(row, in.Key), row)
		assert.Contains(t, row, in.Name)
		assert.Contains(t, row, string(in.State))
		assert.Contains(t, row, "POST")
	}
	assert.Contains(t, lines[1], "201 Created")
	assert.Contains(t, lines[3], "503", "a pending intent shows its last error")
	assert.NotContains(t, stdout, testToken)
	assert.NotContains(t, stdout, "reference", "bodies are never in the table")
}

func TestList_FiltersByStateAndAge(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	ageRecords(t, p.path, 2*time.Hour, p.pending[0].Key, p.succeeded[0].Key)

	stdout, _, err := runIntentsCLI(t, nil, "list", "--keystore", p.path, "--state", "pending,failed")
	require.NoError(t, err)
	assert.Contains(t, stdout, p.pending[0].Key)
	assert.Contains(t, stdout, p.pending[1].Key)
	assert.Contains(t, stdout, p.failed[0].Key)
	assert.NotContains(t, stdout, p.succeeded[0].Key)

	stdout, _, err = runIntentsCLI(t, nil, "list", "--keystore", p.path, "--older-than", "1h")
	require.NoError(t, err)
	assert.Contains(t, stdout, p.pending[0].Key)
	assert.Contains(t, stdout, p.succeeded[0].Key)
	assert.NotContains(t, stdout, p.pending[1].Key)

	stdout, _, err = runIntentsCLI(t, nil, "list", "--keystore", p.path, "--older-than", "1h", "--state", "Pending")
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(stdout, "\n"), stdout)
	assert.Contains(t, stdout, p.pending[0].Key)

	stdout, _, err = runIntentsCLI(t, nil, "list", "--keystore", p.path, "--older-than", "100h")
	require.NoError(t, err)
	assert.Equal(t, "no intents in "+p.path+" match\n", stdout)
}

func TestList_JSONIsAnArrayOfSummaries(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)

	stdout, _, err := runIntentsCLI(t, nil, "list", "--keystore", p.path, "--json")
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows), stdout)
	require.Len(t, rows, len(p.all()))
	for i, in := range p.all() {
		assert.Equal(t, in.Key, rows[i]["key"])
		assert.Equal(t, in.Name, rows[i]["name"])
		assert.Equal(t, string(in.State), rows[i]["state"])
		assert.NotContains(t, rows[i], "body")
		assert.NotContains(t, rows[i], "header")
	}
	assert.EqualValues(t, 201, rows[0]["status"])
	assert.NotContains(t, stdout, testToken)

	stdout, _, err = runIntentsCLI(t, nil, "list", "--keystore", p.path, "--json", "--state", "expired")
	require.NoError(t, err)
	assert.Equal(t, "[]\n", stdout)
}

func TestList_BadFlagsAreOneLine(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	for _, args := range [][]string{
		{"--state", "done"},
		{"--older-than", "-1h"},
		{"--older-than", "soon"},
		{"--no-such-flag"},
		{"extra-argument"},
		{"--lock-timeout", "0s"},
	} {
		_, stderr, err := runIntentsCLI(t, nil, append([]string{"list", "--keystore", p.path}, args...)...)
		requireOneLineError(t, stderr, err)
	}
	_, stderr, err := runIntentsCLI(t, nil, "list", "--keystore", p.path, "--state", "done")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, `unknown state (want pending, accepted, succeeded, failed, expired)`)
}

func TestParseStates(t *testing.T) {
	t.Parallel()
	got, err := parseStates([]string{"pending", " FAILED ", "pending"})
	require.NoError(t, err)
	assert.Equal(t, []keystore.State{keystore.Pending, keystore.Failed}, got)
	got, err = parseStates(nil)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = parseStates([]string{""})
	assert.Error(t, err)
}
