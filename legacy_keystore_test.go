package idem

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// legacyIntent is one line of a manifest in testdata/legacy.
type legacyIntent struct {
	Name, Key, State string
	Amount           int
	Sent             bool
}

// The token and URL testdata/legacy/legacygen begun its intents with.
const (
	legacyToken  = "tok_legacy_build"
	legacyTarget = "http://payments.legacy.test/v1/payments"
)

// legacyKeystore copies the keystore an earlier build wrote (opening
// migrates a file in place) and reads its manifest.
func legacyKeystore(t *testing.T, commit string) (string, []legacyIntent) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "legacy", commit+".db"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "intents.db")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	js, err := os.ReadFile(filepath.Join("testdata", "legacy", commit+".json"))
	require.NoError(t, err)
	var manifest []legacyIntent
	require.NoError(t, json.Unmarshal(js, &manifest))
	require.NotEmpty(t, manifest)
	return path, manifest
}

// legacyRetention outlasts the age of every testdata keystore, so the
// tests stay about identity however long ago the files were written (a
// fresh reference server has never seen their keys).
const legacyRetention = 100 * 365 * 24 * time.Hour

// legacyClient is a client of the keystore at path whose requests to
// legacyTarget reach srv.
func legacyClient(t *testing.T, srv *idemtest.Server, path string, opts ...Option) *Client {
	t.Helper()
	addr := strings.TrimPrefix(srv.URL, "http://")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	return newTestClient(t, append([]Option{WithBoltStore(path, nil), WithHTTPClient(hc), WithMaxAttempts(2), WithRetention(legacyRetention)}, opts...)...)
}

// legacyRequest is the request legacygen began the intent with.
func legacyRequest(t *testing.T, in legacyIntent) *http.Request {
	t.Helper()
	body := fmt.Sprintf(`{"amount": %d, "currency": "EUR", "reference": %q}`, in.Amount, in.Name)
	req, err := http.NewRequest(http.MethodPost, legacyTarget, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+legacyToken)
	return req
}

// pendingKeys are the keys of the manifest's unsettled intents.
func pendingKeys(manifest []legacyIntent) []string {
	var keys []string
	for _, in := range manifest {
		if in.State == string(Pending) {
			keys = append(keys, in.Key)
		}
	}
	return keys
}

// A keystore written before names were scoped by principal, re-run by
// this build with the same names, payloads and token: every pending
// intent is still listed, no Begin mints a key, each says which key it
// found (ErrIdentityAmbiguous), and nothing is sent. Adopted, each intent
// keeps its key: the settled ones replay locally, and each unsettled one
// is sent under its own key, once.
func TestKeystoreOfABuildBeforeScopedNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path, manifest := legacyKeystore(t, "9fb8ecb")
	srv := idemtest.NewServer(t)
	c := legacyClient(t, srv, path)

	pending, err := c.Pending(ctx)
	require.NoError(t, err)
	var listed []string
	for _, in := range pending {
		listed = append(listed, in.Key)
		assert.Empty(t, in.Principal, "written before principals")
	}
	assert.ElementsMatch(t, pendingKeys(manifest), listed, "no pending intent is lost")

	for _, in := range manifest {
		_, err := c.Begin(ctx, in.Name, legacyRequest(t, in))
		require.ErrorIs(t, err, ErrIdentityAmbiguous, in.Name)
		var ie *IdentityError
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Existing, 1)
		assert.Equal(t, in.Key, ie.Existing[0].Key, in.Name)
		assert.Equal(t, State(in.State), ie.Existing[0].State, in.Name)
	}
	recs, err := c.store.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Len(t, recs, len(manifest), "no new intent")
	assert.Zero(t, srv.Requests(), "nothing sent")
	t.Logf("build 9fb8ecb: %d intents (%d pending); before adoption: %d new keys, %d requests sent",
		len(manifest), len(pendingKeys(manifest)), len(recs)-len(manifest), srv.Requests())

	for _, in := range manifest {
		adopted, err := c.Begin(ctx, in.Name, legacyRequest(t, in), WithAdopt(in.Key))
		require.NoError(t, err, in.Name)
		assert.Equal(t, in.Key, adopted.Key, in.Name)
		resp, err := c.Do(ctx, adopted)
		require.NoError(t, err, in.Name)
		_ = resp.Body.Close()
		assert.Equal(t, Succeeded, adopted.State, in.Name)
	}
	assert.Equal(t, len(pendingKeys(manifest)), srv.PaymentCount(), "one payment per unsettled intent, none for a settled one")
	t.Logf("build 9fb8ecb: after adoption, %d payments for %d pending intents", srv.PaymentCount(), len(pendingKeys(manifest)))

	// The names are this principal's now: a re-run finds them.
	for _, in := range manifest {
		again := begin(t, c, in.Name, legacyRequest(t, in))
		assert.Equal(t, in.Key, again.Key, in.Name)
		_, err := c.Do(ctx, again)
		require.NoError(t, err)
	}
	assert.Equal(t, len(pendingKeys(manifest)), srv.PaymentCount())
	t.Logf("build 9fb8ecb: after a re-run of every name, %d payments", srv.PaymentCount())
}

// A keystore written by the build that first scoped names by principal
// (under the default principal key) is re-run as it was: the same names
// and token find the same intents, with no question asked.
func TestKeystoreOfABuildWithScopedNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path, manifest := legacyKeystore(t, "a7007cd")
	srv := idemtest.NewServer(t)
	c := legacyClient(t, srv, path)

	pending, err := c.Pending(ctx)
	require.NoError(t, err)
	var listed []string
	for _, in := range pending {
		listed = append(listed, in.Key)
	}
	assert.ElementsMatch(t, pendingKeys(manifest), listed, "no pending intent is lost")

	for _, in := range manifest {
		found := begin(t, c, in.Name, legacyRequest(t, in))
		assert.Equal(t, in.Key, found.Key, in.Name)
		resp, err := c.Do(ctx, found)
		require.NoError(t, err, in.Name)
		_ = resp.Body.Close()
	}
	assert.Equal(t, len(pendingKeys(manifest)), srv.PaymentCount(), "one payment per unsettled intent, none for a settled one")
	t.Logf("build a7007cd: %d intents (%d pending), %d payments after the re-run", len(manifest), len(pendingKeys(manifest)), srv.PaymentCount())
}
