package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// addLostAnswer adds to p's keystore an intent whose only attempt the
// server executed and whose answer it then dropped: pending, and it may
// have executed. Resending is what settle exists to avoid.
func addLostAnswer(t *testing.T, p populated) *idem.Intent {
	t.Helper()
	client, err := idem.New(idem.WithBoltStore(p.path, &keystore.BoltOptions{NoSync: true}), idem.WithMaxAttempts(1))
	require.NoError(t, err)
	defer client.Close()
	req, err := http.NewRequest(http.MethodPost, p.srv.URL+"/v1/payments",
		bytes.NewReader([]byte(`{"amount": 2000, "currency": "EUR", "reference": "order-9"}`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	in, err := client.Begin(t.Context(), "order-9/payment", req)
	require.NoError(t, err)
	p.srv.LoseNextResponses(1)
	resp, err := client.Do(t.Context(), in)
	if resp != nil {
		resp.Body.Close()
	}
	require.Error(t, err)
	require.Equal(t, idem.Pending, in.State)
	require.True(t, in.MayHaveExecuted)
	return in
}

// record reads one intent back from the bbolt keystore at path.
func record(t *testing.T, path, key string) *keystore.Record {
	t.Helper()
	for _, r := range readKeystore(t, path) {
		if r.Key == key {
			return r
		}
	}
	t.Fatalf("no record %s in %s", key, path)
	return nil
}

func TestSettle_SucceededByNameKeepsTheVerdictAndSendsNothing(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	in := addLostAnswer(t, p)
	requests := p.srv.Requests()

	list, _, err := runIntentsCLI(t, nil, "list", "--keystore", p.path)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^`+in.Key+`\s+order-9/payment\s+[0-9a-f]{8}\s+pending\s+.*\s+may have executed; `, list,
		"STATE stays pending; LAST says the attempt may have taken effect")
	show, _, err := runIntentsCLI(t, nil, "show", "--keystore", p.path, in.Name)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^May have executed:\s+yes$`, show)
	assert.NotContains(t, show, "Reconciliations")

	stdout, stderr, err := runIntentsCLI(t, nil, "settle", "--keystore", p.path, in.Name,
		"--succeeded", "--note", "pay_123 in the provider dashboard", "--by", "alice")
	require.NoError(t, err, stderr)
	assert.Equal(t, "settled  "+in.Key+"  order-9/payment  succeeded (manual, by alice: pay_123 in the provider dashboard)\n", stdout)
	assert.Equal(t, requests, p.srv.Requests(), "settling sends nothing")

	rec := record(t, p.path, in.Key)
	assert.Equal(t, keystore.Succeeded, rec.State)
	assert.True(t, rec.MayHaveExecuted, "the doubt stays on record")
	require.Len(t, rec.Reconciliations, 1)
	v := rec.Reconciliations[0]
	assert.Equal(t, keystore.Reconciliation{Outcome: "succeeded", Source: "manual", By: "alice", At: v.At,
		Note: "pay_123 in the provider dashboard"}, v)
	assert.False(t, v.At.IsZero())

	show, _, err = runIntentsCLI(t, nil, "show", "--keystore", p.path, in.Key)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^State:\s+succeeded$`, show)
	assert.Regexp(t, `(?m)^May have executed:\s+yes$`, show)
	assert.Regexp(t, `(?m)^Reconciliations\n  `+regexp.QuoteMeta(v.At.UTC().Format("2006-01-02T15:04:05Z"))+
		`  succeeded \(manual, by alice: pay_123 in the provider dashboard\)$`, show)
	assert.Contains(t, show, "\nResponse\n  none stored: settled by the reconciliation above\n")

	list, _, err = runIntentsCLI(t, nil, "list", "--keystore", p.path)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^`+in.Key+`\s+order-9/payment\s+[0-9a-f]{8}\s+succeeded\s+.*\s+reconciled: succeeded \(manual, by alice: `, list)
}

func TestSettle_FailedByKeyAsJSONWithTheDefaultSettler(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	in := addLostAnswer(t, p)
	host, err := os.Hostname()
	require.NoError(t, err)

	stdout, stderr, err := runIntentsCLI(t, map[string]string{"USER": "bob"}, "settle", "--keystore", p.path, in.Key,
		"--failed", "--note", "no such payment; ticket OPS-7", "--json")
	require.NoError(t, err, stderr)
	var d intentDetail
	require.NoError(t, json.Unmarshal([]byte(stdout), &d), stdout)
	assert.Equal(t, in.Key, d.Key)
	assert.Equal(t, keystore.Failed, d.State)
	assert.True(t, d.MayHaveExecuted)
	assert.Equal(t, "failed", d.Reconciled)
	require.Len(t, d.Reconciliations, 1)
	assert.Equal(t, "bob@"+host, d.Reconciliations[0].By)
	assert.Equal(t, "manual", d.Reconciliations[0].Source)

	// show --json and list --json carry the same fields.
	shown, _, err := runIntentsCLI(t, nil, "show", "--keystore", p.path, "--json", in.Key)
	require.NoError(t, err)
	assert.JSONEq(t, stdout, shown)
	listed, _, err := runIntentsCLI(t, nil, "list", "--keystore", p.path, "--json")
	require.NoError(t, err)
	var rows []map[string]any
	require.NoError(t, json.Unmarshal([]byte(listed), &rows))
	byKey := map[string]map[string]any{}
	for _, r := range rows {
		byKey[r["key"].(string)] = r
	}
	assert.Equal(t, true, byKey[in.Key]["may_have_executed"])
	assert.Equal(t, "failed", byKey[in.Key]["reconciled"])
	assert.Equal(t, false, byKey[p.succeeded[0].Key]["may_have_executed"], "always present")
	assert.NotContains(t, byKey[p.succeeded[0].Key], "reconciled")
}

func TestSettle_RefusesWhatIsAlreadySettled(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	in := addLostAnswer(t, p)
	paid := p.succeeded[0]

	_, stderr, err := runIntentsCLI(t, nil, "settle", "--keystore", p.path, paid.Name, "--failed", "--note", "x")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "intent "+paid.Key+" (order-0/payment) is already succeeded by the server's answer (201 Created)")
	assert.Empty(t, record(t, p.path, paid.Key).Reconciliations)
	assert.Equal(t, keystore.Succeeded, record(t, p.path, paid.Key).State)

	_, _, err = runIntentsCLI(t, nil, "settle", "--keystore", p.path, in.Key, "--succeeded", "--note", "found it", "--by", "alice")
	require.NoError(t, err)
	_, stderr, err = runIntentsCLI(t, nil, "settle", "--keystore", p.path, in.Key, "--failed", "--note", "no, not found", "--by", "carol")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "was already settled as succeeded (manual, by alice: found it) at ")
	rec := record(t, p.path, in.Key)
	assert.Equal(t, keystore.Succeeded, rec.State)
	assert.Len(t, rec.Reconciliations, 1)
}

func TestSettle_UnknownIntentAndBadFlagsAreOneLine(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	pending := p.pending[0].Key
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"unknown key":  {[]string{"no-such-intent", "--succeeded", "--note", "x"}, `no intent with key or name "no-such-intent"`},
		"no outcome":   {[]string{pending, "--note", "x"}, "give exactly one of --succeeded and --failed"},
		"two outcomes": {[]string{pending, "--succeeded", "--failed", "--note", "x"}, "give exactly one of --succeeded and --failed"},
		"no note":      {[]string{pending, "--succeeded"}, "--note is required"},
		"blank note":   {[]string{pending, "--failed", "--note", "  "}, "--note is required"},
		"empty by":     {[]string{pending, "--failed", "--note", "x", "--by", ""}, "--by: empty"},
		"no argument":  {[]string{"--succeeded", "--note", "x"}, "accepts 1 arg(s), received 0"},
	} {
		_, stderr, err := runIntentsCLI(t, nil, append([]string{"settle", "--keystore", p.path}, tc.args...)...)
		requireOneLineError(t, stderr, err)
		assert.Contains(t, stderr, tc.want, name)
	}
	assert.Empty(t, record(t, p.path, pending).Reconciliations, "nothing was recorded")
	assert.Equal(t, keystore.Pending, record(t, p.path, pending).State)
}
