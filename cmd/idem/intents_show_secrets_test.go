package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// adyenAPIKey is the Adyen API key of these tests; printed, it leaked.
const adyenAPIKey = "AQEyhmfxsekrit-adyen-cli-key-0077"

// An intent the client sent under dialect.Adyen with X-API-Key leaves no
// trace of the key in the keystore file, and `idem intents show` and
// `list`, as text or JSON, print none.
func TestShow_AdyenAPIKeyIsNeverShown(t *testing.T) {
	t.Parallel()
	sim := idemtest.NewServer(t, idemtest.WithDialect("adyen"))
	path := filepath.Join(t.TempDir(), "idem.db")
	client, err := idem.New(idem.WithBoltStore(path, &keystore.BoltOptions{NoSync: true}),
		idem.WithDialect(dialect.Adyen()), idem.WithMaxAttempts(1))
	require.NoError(t, err)
	sim.LoseNextResponses(1) // one pending intent, one settled
	var keys []string
	for _, ref := range []string{"order-1", "order-2"} {
		req, err := http.NewRequest(http.MethodPost, sim.URL+"/v1/payments",
			strings.NewReader(`{"amount": 1000, "currency": "EUR", "reference": "`+ref+`"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-API-Key", adyenAPIKey)
		in, err := client.Begin(t.Context(), ref+"/payment", req)
		require.NoError(t, err)
		if resp, _ := client.Do(t.Context(), in); resp != nil {
			resp.Body.Close()
		}
		keys = append(keys, in.Key)
	}
	require.NoError(t, client.Close())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.False(t, bytes.Contains(raw, []byte(adyenAPIKey)), "the keystore file holds the API key")
	for _, key := range keys {
		for _, args := range [][]string{
			{"show", "--keystore", path, key},
			{"show", "--keystore", path, "--json", key},
		} {
			stdout, stderr, err := runIntentsCLI(t, nil, args...)
			require.NoError(t, err, stderr)
			assert.Contains(t, stdout, key)
			assert.NotContains(t, stdout+stderr, adyenAPIKey, "%v", args)
		}
	}
	for _, args := range [][]string{{"list", "--keystore", path}, {"list", "--keystore", path, "--json"}} {
		stdout, stderr, err := runIntentsCLI(t, nil, args...)
		require.NoError(t, err, stderr)
		assert.NotContains(t, stdout+stderr, adyenAPIKey, "%v", args)
	}
}

// A keystore written by an earlier build holds X-API-Key in clear among an
// intent's stored headers, and an api_key in its URL and last error:
// `idem intents show` and `list` print them redacted.
func TestShow_RedactsDialectCredentialsAnEarlierBuildStored(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "idem.db")
	st, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)
	now := time.Now().UTC()
	body := []byte(`{"amount":1000}`)
	const target = "https://checkout-test.adyen.com/v71/payments?api_key=" + adyenAPIKey
	rec := &keystore.Record{
		Key:         "legacy-key-1",
		Name:        "legacy/payment",
		Method:      http.MethodPost,
		URL:         target,
		Header:      http.Header{"X-Api-Key": {adyenAPIKey}, "Content-Type": {"application/json"}},
		Body:        body,
		Fingerprint: idem.Fingerprint(http.MethodPost, target, body),
		State:       keystore.Pending,
		CreatedAt:   now,
		UpdatedAt:   now,
		// The transport error as an earlier build stored it.
		LastError: `idem: gave up: outcome unknown (attempts=1): Post "` + target + `": EOF`,
	}
	_, created, err := st.Create(context.Background(), rec)
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, st.Close())

	for _, args := range [][]string{
		{"show", "--keystore", path, "legacy-key-1"},
		{"show", "--keystore", path, "--json", "legacy-key-1"},
	} {
		stdout, stderr, err := runIntentsCLI(t, nil, args...)
		require.NoError(t, err, stderr)
		assert.NotContains(t, stdout, adyenAPIKey, "%v", args)
		assert.Contains(t, stdout, "[redacted]", "%v", args)
		assert.Contains(t, stdout, "application/json", "other headers are shown")
		assert.Contains(t, stdout, "api_key=REDACTED", "the URL and last error say which parameter it was")
	}
	for _, args := range [][]string{{"list", "--keystore", path}, {"list", "--keystore", path, "--json"}} {
		stdout, stderr, err := runIntentsCLI(t, nil, args...)
		require.NoError(t, err, stderr)
		assert.NotContains(t, stdout+stderr, adyenAPIKey, "%v", args)
	}
}
