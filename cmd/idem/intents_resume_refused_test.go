package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

func TestRefusalText(t *testing.T) {
	t.Parallel()
	missing := &idem.GiveUpError{Reason: fmt.Errorf("%w: X-Api-Key is not set (the intent was begun with it)", idem.ErrCredentialsMissing)}
	assert.Equal(t, "credentials missing: X-Api-Key (the intent was begun with it; give --token or --header)", refusalText(missing, ""))
	assert.Equal(t, "credentials missing: X-Api-Key (the intent was begun with it; --origin leaves out https://api.example.com)",
		refusalText(missing, "https://api.example.com"))
	assert.Equal(t, "credentials missing (the intent was begun with credentials; give --token or --header)",
		refusalText(&idem.GiveUpError{Reason: idem.ErrCredentialsMissing}, ""), "no header named")

	mismatch := &idem.GiveUpError{Reason: fmt.Errorf("%w (the intent's principal 0a1b2c3d, this attempt's 4e5f6a7b)", idem.ErrCredentialsMismatch)}
	assert.Regexp(t, `^credentials name another principal than the intent was begun with \(give the token it was begun with; `, refusalText(mismatch, ""))

	assert.Empty(t, refusalText(&idem.GiveUpError{Reason: idem.ErrRetriesExhausted}, ""))
	assert.Empty(t, refusalText(nil, ""))

	o := markRefused(outcome{key: "k1", name: "n1", state: keystore.Pending, err: missing}, "")
	assert.Equal(t, "refused    k1  n1  credentials missing: X-Api-Key (the intent was begun with it; give --token or --header)", outcomeLine(o))
	o = markRefused(outcome{key: "k2", state: keystore.Pending, err: errors.New("idem: gave up")}, "")
	assert.Equal(t, keystore.Pending, o.state, "any other error is left as it is")
}

// TestResume_RefusedForCredentials resumes intents begun with a token
// without it, with another one, and with --origin leaving their origin
// out: each is refused with one line saying why, counted in the summary,
// the exit is non-zero and nothing reaches the server. With the token
// they succeed.
func TestResume_RefusedForCredentials(t *testing.T) {
	t.Parallel()
	ref := idemtest.NewServer(t)
	other := idemtest.NewServer(t)
	path, intents := beginIntents(t, postJSON(t, ref.URL+"/v1/payments", testToken))
	in := intents[0]
	line := func(why string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^refused    ` + in.Key + `  ` + regexp.QuoteMeta(in.Name) + `  ` + regexp.QuoteMeta(why) + `$`)
	}

	for _, c := range []struct {
		args []string
		why  string
	}{
		{nil, "credentials missing: Authorization (the intent was begun with it; give --token or --header)"},
		{[]string{"--token", "tok_of_another_tenant"}, "credentials name another principal than the intent was begun with " +
			"(give the token it was begun with; resume one tenant's intents at a time with --key or --origin)"},
		{[]string{"--token", testToken, "--origin", other.URL}, "credentials missing: Authorization (the intent was begun with it; --origin leaves out " + ref.URL + ")"},
	} {
		args := append([]string{"resume", "--keystore", path, "--no-progress"}, c.args...)
		stdout, stderr, err := runIntentsCLI(t, nil, args...)
		requireOneLineError(t, stderr, err)
		assert.Contains(t, stdout, "resumed 1 intent: 0 succeeded, 0 failed, 0 still pending, 0 expired, 1 refused for credentials\n", c.args)
		assert.Contains(t, stderr, "1 of 1 intents not settled (0 failed, 0 still pending, 0 expired, 1 refused for credentials)", c.args)
		assert.Regexp(t, line(c.why), stdout, c.args)
		assert.NotContains(t, stdout+stderr, "tok_of_another_tenant")
	}
	assert.Zero(t, ref.Requests(), "nothing was sent")
	assert.Equal(t, keystore.Pending, states(t, path)[in.Key], "a refused intent stays as it was")

	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", path, "--no-progress", "--token", testToken)
	require.NoError(t, err, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Len(t, ref.Payments(testToken), 1)
}

// TestResume_DamagedRecordsAreNamedAndTheRestResumed puts an undecodable
// record into a real bbolt keystore next to good pending ones: the good
// ones are resumed, the damaged one gets a line of its own, and the exit
// is non-zero.
func TestResume_DamagedRecordsAreNamedAndTheRestResumed(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	const badKey = "9c1d1e55-damaged"
	db, err := bolt.Open(p.path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("records")).Put([]byte(badKey), []byte(`{"key": "9c1d1e55-damaged", "state": `))
	}))
	require.NoError(t, db.Close())

	st, err := keystore.OpenBolt(p.path, nil)
	require.NoError(t, err)
	_, listErr := st.List(t.Context(), keystore.Filter{})
	require.NoError(t, st.Close())
	var ce *keystore.CorruptRecordsError
	require.ErrorAs(t, listErr, &ce, "the keystore names the damaged record and returns the rest")

	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--no-progress", "--token", testToken)
	requireOneLineError(t, stderr, err)
	assert.Regexp(t, `(?m)^damaged    `+regexp.QuoteMeta(badKey)+`  \S`, stdout, "a damaged record is named by its key, as list shows keys")
	assert.Contains(t, stderr, "idem intents repair KEY --export FILE --yes")
	assert.Contains(t, stdout, "resumed 2 intents: 2 succeeded, 0 failed, 0 still pending, 0 expired; 1 damaged record not read\n")
	assert.Contains(t, stderr, "1 damaged record in "+p.path+" could not be read")
	for _, in := range p.pending {
		assert.Regexp(t, `(?m)^succeeded  `+in.Key, stdout)
	}
	assert.Equal(t, 4, p.srv.PaymentCount())
}

func TestDamagedRecordsAndSummary(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("listing: %w", &keystore.CorruptRecordsError{
		Keys: []string{"k-one", "k\xff-two"},
		Errs: []error{errors.New("keystore: record key#1234abcd has unknown encoding 123"), errors.New("bad\nline")},
	})
	bad := damagedRecords(err)
	require.Len(t, bad, 2)
	var out bytes.Buffer
	printDamaged(&out, bad)
	assert.Equal(t, "damaged    k-one  keystore: record key#1234abcd has unknown encoding 123\n"+
		"damaged    "+keystore.KeyRef("k\xff-two")+"  bad line\n", out.String(), "a printable key is shown, any other by its key# reference")
	assert.Nil(t, damagedRecords(keystore.ErrCorrupt), "a whole-file error is no list of damaged records")

	out.Reset()
	require.Error(t, summarizeResume(&out, []outcome{{state: keystore.Succeeded}}, 2, "idem.db"))
	assert.Equal(t, "resumed 1 intent: 1 succeeded, 0 failed, 0 still pending, 0 expired; 2 damaged records not read\n", out.String())
	out.Reset()
	require.NoError(t, summarizeResume(&out, []outcome{{state: keystore.Succeeded}}, 0, "idem.db"))
	assert.Equal(t, "resumed 1 intent: 1 succeeded, 0 failed, 0 still pending, 0 expired\n", out.String())
}
