package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// testToken is the bearer token the populated keystore's intents were
// sent with; it must never show up in any output.
const testToken = "tok_intents_secret"

// runIntentsCLI executes `idem intents args...` through a root command the
// way the binary does, with env as the environment.
func runIntentsCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	_, err = run(t.Context(), append([]string{"intents"}, args...), &out, &errOut, func(k string) string { return env[k] })
	return out.String(), errOut.String(), err
}

// requireOneLineError checks that the command failed and printed exactly
// one line, the error, on stderr.
func requireOneLineError(t *testing.T, stderr string, err error) {
	t.Helper()
	require.Error(t, err)
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	assert.Len(t, lines, 1, "stderr: %q", stderr)
	assert.True(t, strings.HasPrefix(lines[0], "Error: "), "stderr: %q", stderr)
}

// populated is a bbolt keystore written by the real client against a
// reference server: intents that succeeded, stayed pending and failed.
type populated struct {
	path      string
	srv       *idemtest.Server
	succeeded []*idem.Intent
	pending   []*idem.Intent
	failed    []*idem.Intent
	// binaryBody is the body of the failed intent.
	binaryBody []byte
}

func (p populated) all() []*idem.Intent {
	return append(append(append([]*idem.Intent(nil), p.succeeded...), p.pending...), p.failed...)
}

// populateKeystore writes two succeeded intents, two pending ones (the
// server answered 503 to their only attempt) and one failed one (a binary
// body the server refuses with a 4xx).
func populateKeystore(t *testing.T) populated {
	t.Helper()
	p := populated{
		path:       filepath.Join(t.TempDir(), "idem.db"),
		srv:        idemtest.NewServer(t),
		binaryBody: []byte{0x00, 0xff, 0x10, 0x80, 'x'},
	}
	client, err := idem.New(
		idem.WithBoltStore(p.path, &keystore.BoltOptions{NoSync: true}),
		idem.WithMaxAttempts(1),
	)
	require.NoError(t, err)
	defer client.Close()
	ctx := t.Context()

	send := func(name string, body []byte, contentType string) (*idem.Intent, error) {
		req, err := http.NewRequest(http.MethodPost, p.srv.URL+"/v1/payments", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Authorization", "Bearer "+testToken)
		in, err := client.Begin(ctx, name, req)
		require.NoError(t, err)
		resp, err := client.Do(ctx, in)
		if resp != nil {
			resp.Body.Close()
		}
		return in, err
	}
	payment := func(i int) []byte {
		return fmt.Appendf(nil, `{"amount": %d, "currency": "EUR", "reference": "order-%d"}`, 1000+i, i)
	}
	for i := range 2 {
		in, err := send(fmt.Sprintf("order-%d/payment", i), payment(i), "application/json")
		require.NoError(t, err)
		require.Equal(t, idem.Succeeded, in.State)
		p.succeeded = append(p.succeeded, in)
	}
	p.srv.FailNext(2, http.StatusServiceUnavailable, 0)
	for i := 2; i < 4; i++ {
		in, err := send(fmt.Sprintf("order-%d/payment", i), payment(i), "application/json")
		require.Error(t, err)
		require.Equal(t, idem.Pending, in.State)
		p.pending = append(p.pending, in)
	}
	in, err := send("order-4/payment", p.binaryBody, "application/octet-stream")
	require.Error(t, err)
	require.Equal(t, idem.Failed, in.State)
	p.failed = append(p.failed, in)
	require.Equal(t, 2, p.srv.PaymentCount())
	return p
}

// readKeystore returns every record of the bbolt keystore at path.
func readKeystore(t *testing.T, path string) []*keystore.Record {
	t.Helper()
	st, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	defer st.Close()
	recs, err := st.List(context.Background(), keystore.Filter{})
	require.NoError(t, err)
	return recs
}

// ageRecords moves the creation and last update of the records with these
// keys back by d, as if they had been written d ago.
func ageRecords(t *testing.T, path string, d time.Duration, keys ...string) {
	t.Helper()
	st, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	defer st.Close()
	for _, k := range keys {
		rec, err := st.Get(t.Context(), k)
		require.NoError(t, err)
		rec.CreatedAt = rec.CreatedAt.Add(-d)
		rec.UpdatedAt = rec.UpdatedAt.Add(-d)
		require.NoError(t, st.Update(t.Context(), rec))
	}
}

func TestIntents_HelpOnEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--help"}, {"list", "--help"}, {"show", "--help"}, {"resume", "--help"}, {"settle", "--help"}, {"purge", "--help"},
	} {
		stdout, _, err := runIntentsCLI(t, nil, args...)
		require.NoError(t, err, args)
		assert.Contains(t, stdout, "Usage:", args)
		assert.Contains(t, stdout, "--keystore", args)
	}
	stdout, _, err := runIntentsCLI(t, nil)
	require.NoError(t, err)
	assert.Contains(t, stdout, "Available Commands:")
}

func TestIntents_UnknownSubcommandIsOneLine(t *testing.T) {
	t.Parallel()
	_, stderr, err := runIntentsCLI(t, nil, "frobnicate")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "frobnicate")
}

func TestHumanAge(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		-time.Second:                 "0s",
		45 * time.Second:             "45s",
		12*time.Minute + time.Second: "12m",
		3*time.Hour + 5*time.Minute:  "3h5m",
		50 * time.Hour:               "2d2h",
	} {
		assert.Equal(t, want, humanAge(d), d)
	}
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "24h", shortDuration(24*time.Hour))
	assert.Equal(t, "1h30m", shortDuration(90*time.Minute))
	assert.Equal(t, "10m", shortDuration(10*time.Minute))
	assert.Equal(t, "1m30s", shortDuration(90*time.Second))
	assert.Equal(t, "500ms", shortDuration(500*time.Millisecond))
}

func TestOneLineOf(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a b c", oneLineOf("a\n b\t\tc\n", 10))
	assert.Equal(t, "abcd…", oneLineOf("abcdefgh", 5))
	assert.Equal(t, "é…", oneLineOf("ééé", 2))
}

func TestRedactedHidesSecretHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{"Authorization": {"Bearer x"}, "Cookie": {"a=b"}, "Content-Type": {"application/json"}}
	r := redacted(h)
	assert.Equal(t, []string{"[redacted]"}, r["Authorization"])
	assert.Equal(t, []string{"[redacted]"}, r["Cookie"])
	assert.Equal(t, []string{"application/json"}, r["Content-Type"])
	assert.Equal(t, "Bearer x", h.Get("Authorization"), "the original is untouched")
	assert.Nil(t, redacted(nil))
}

// FuzzOneLineOf checks that a stored message always fits one table cell:
// no line breaks, at most max runes, and untouched when it already fits.
func FuzzOneLineOf(f *testing.F) {
	for _, seed := range []string{"", "ok", "a\nb", "idem: gave up: retries exhausted (attempts=5)", "\xff\xfe", "ééééé\r\n\t"} {
		f.Add(seed, 5)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 1 || max > 1000 {
			return
		}
		got := oneLineOf(s, max)
		assert.NotContains(t, got, "\n")
		assert.NotContains(t, got, "\r")
		assert.LessOrEqual(t, utf8.RuneCountInString(got), max)
		if flat := strings.Join(strings.Fields(s), " "); utf8.RuneCountInString(flat) <= max {
			assert.Equal(t, flat, got)
		}
	})
}
