package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// runCLI runs the idem command line as the binary does and returns what
// it printed and the status it would exit with.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(t.Context(), args, &out, &errOut, func(string) string { return "" })
	return out.String(), errOut.String(), code
}

// exitCase is one command line and the status it must exit with; setup,
// when set, prepares the keystore at path first.
type exitCase struct {
	name  string
	args  func(p populated) []string
	setup func(t *testing.T, p populated)
	want  int
}

func argv(a ...string) func(populated) []string { return func(populated) []string { return a } }

// withKeystore is an intents command line on the populated keystore.
func withKeystore(a ...string) func(populated) []string {
	return func(p populated) []string { return append(a, "--keystore", p.path) }
}

// Every command exits 0 when it did its work, 1 when it ran and found a
// failure, 2 when it could not run; and every failure is one line on
// stderr.
func TestExitCodes_EveryCommand(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { busy.Close() })
	closed := testenv.ClosedAddr(t)

	damageFirst := func(t *testing.T, p populated) { damageRecord(t, p.path, p.succeeded[0].Key) }
	settleFirstPending := func(t *testing.T, p populated) {
		_, _, code := runCLI(t, "intents", "settle", p.pending[0].Key, "--keystore", p.path, "--succeeded", "--note", "seen")
		require.Equal(t, 0, code)
	}
	cases := []exitCase{
		{name: "help", args: argv(), want: 0},
		{name: "unknown command", args: argv("sevre"), want: 2},
		{name: "version", args: argv("version"), want: 0},
		{name: "version --json", args: argv("version", "--json"), want: 0},
		{name: "version extra argument", args: argv("version", "now"), want: 2},
		{name: "version unknown flag", args: argv("version", "--short"), want: 2},

		{name: "serve bad flags", args: argv("serve", "--fail-next", "-1", "--fail-status", "3"), want: 2},
		{name: "serve address in use", args: argv("serve", "--addr", busy.Addr().String()), want: 2},
		{name: "serve store unreachable", args: argv("serve", "--store", "postgres://app:pw@"+closed+"/payments", "--principal-key", testPrincipalKey), want: 2},

		{name: "check no URL", args: argv("check"), want: 2},
		{name: "check unreachable", args: argv("check", "http://"+closed), want: 2},

		{name: "list", args: withKeystore("intents", "list"), want: 0},
		{name: "list damaged record", args: withKeystore("intents", "list"), setup: damageFirst, want: 1},
		{name: "list no keystore", args: argv("intents", "list", "--keystore", "/nonexistent/idem.db"), want: 2},
		{name: "list bad state", args: withKeystore("intents", "list", "--state", "done"), want: 2},
		{name: "list unreachable postgres", args: argv("intents", "list", "--keystore", "postgres://app:pw@"+closed+"/x"), want: 2},
		{name: "intents typo", args: argv("intents", "lsit"), want: 2},

		{name: "show", args: func(p populated) []string { return withKeystore("intents", "show", p.succeeded[0].Key)(p) }, want: 0},
		{name: "show no such intent", args: withKeystore("intents", "show", "nope"), want: 1},
		{name: "show no argument", args: withKeystore("intents", "show"), want: 2},
		{name: "show damaged record", setup: damageFirst, args: func(p populated) []string { return withKeystore("intents", "show", p.succeeded[0].Key)(p) }, want: 1},
		{name: "show damaged record by name", setup: damageFirst, args: func(p populated) []string { return withKeystore("intents", "show", p.succeeded[0].Name)(p) }, want: 1},
		{name: "settle damaged record", setup: damageFirst, args: func(p populated) []string {
			return withKeystore("intents", "settle", p.succeeded[0].Key, "--succeeded", "--note", "seen")(p)
		}, want: 1},
		{name: "repair", setup: damageFirst, args: func(p populated) []string {
			return withKeystore("intents", "repair", p.succeeded[0].Key, "--yes", "--export", filepath.Join(filepath.Dir(p.path), "x.json"))(p)
		}, want: 0},
		{name: "repair without --yes", setup: damageFirst, args: func(p populated) []string { return withKeystore("intents", "repair", p.succeeded[0].Key)(p) }, want: 1},
		{name: "repair sound record", args: func(p populated) []string { return withKeystore("intents", "repair", p.succeeded[0].Key)(p) }, want: 1},
		{name: "repair --yes without --export", setup: damageFirst, args: func(p populated) []string {
			return withKeystore("intents", "repair", p.succeeded[0].Key, "--yes")(p)
		}, want: 2},

		{name: "settle", args: func(p populated) []string {
			return withKeystore("intents", "settle", p.pending[0].Key, "--succeeded", "--note", "pay_1 at the provider")(p)
		}, want: 0},
		{name: "settle twice", setup: settleFirstPending, args: func(p populated) []string {
			return withKeystore("intents", "settle", p.pending[0].Key, "--failed", "--note", "second thoughts")(p)
		}, want: 1},
		{name: "settle without note", args: func(p populated) []string {
			return withKeystore("intents", "settle", p.pending[0].Key, "--succeeded")(p)
		}, want: 2},

		{name: "resume settles all", args: withKeystore("intents", "resume", "--no-progress", "--token", testToken), want: 0},
		{name: "resume leaves intents pending", args: withKeystore("intents", "resume", "--no-progress", "--token", testToken, "--max-attempts", "1"),
			setup: func(t *testing.T, p populated) { p.srv.FailNext(10, http.StatusServiceUnavailable, 0) }, want: 1},
		{name: "resume bad flag", args: withKeystore("intents", "resume", "--max-attempts", "0"), want: 2},
		{name: "resume server unreachable", args: withKeystore("intents", "resume", "--no-progress", "--token", testToken, "--max-attempts", "2"),
			setup: func(t *testing.T, p populated) { p.srv.Close() }, want: 2},
		{name: "resume --json server unreachable", args: withKeystore("intents", "resume", "--json", "--token", testToken, "--max-attempts", "1"),
			setup: func(t *testing.T, p populated) { p.srv.Close() }, want: 2},
		{name: "resume --key damaged record", setup: damageFirst, args: func(p populated) []string {
			return withKeystore("intents", "resume", "--key", p.succeeded[0].Key, "--token", testToken)(p)
		}, want: 1},

		{name: "purge", args: withKeystore("intents", "purge", "--older-than", "24h"), want: 0},
		{name: "purge damaged record", args: withKeystore("intents", "purge", "--older-than", "24h"), setup: damageFirst, want: 1},
		{name: "purge without cutoff", args: withKeystore("intents", "purge"), want: 2},
		{name: "purge cutoff under retention", args: withKeystore("intents", "purge", "--older-than", "1s"), want: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := populateKeystore(t)
			if tc.setup != nil {
				tc.setup(t, p)
			}
			args := tc.args(p)
			stdout, stderr, code := runCLI(t, args...)
			assert.Equal(t, tc.want, code, "idem %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), stdout, stderr)
			if code != 0 {
				assertOneErrorLine(t, stderr)
			}
		})
	}
}

// assertOneErrorLine checks that the last line of stderr is the error and
// that it is the only line starting with "Error:"; a damaged-record line
// may precede it, a multi-line error may not.
func assertOneErrorLine(t *testing.T, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	assert.True(t, strings.HasPrefix(last, "Error: "), "stderr ends with the error: %q", stderr)
	for _, l := range lines[:len(lines)-1] {
		assert.True(t, strings.HasPrefix(l, "damaged record "), "stderr has only the error and damaged records: %q", stderr)
	}
}

// --json prints one well-formed JSON document on stdout whatever happens,
// with the error when there is one.
func TestJSON_OneDocumentEvenOnFailure(t *testing.T) {
	t.Parallel()
	closed := testenv.ClosedAddr(t)
	cases := []exitCase{
		{name: "version", args: argv("version", "--json"), want: 0},
		{name: "version bad flag", args: argv("version", "--json", "--short"), want: 2},
		{name: "check unreachable", args: argv("check", "http://"+closed, "--json"), want: 2},
		{name: "list", args: withKeystore("intents", "list", "--json"), want: 0},
		{name: "list no keystore", args: argv("intents", "list", "--json", "--keystore", "/nonexistent/idem.db"), want: 2},
		{name: "list unreachable postgres", args: argv("intents", "list", "--json", "--keystore", "postgres://app:pw@"+closed+"/x"), want: 2},
		{name: "show no such intent", args: withKeystore("intents", "show", "nope", "--json"), want: 1},
		{name: "settle without verdict", args: withKeystore("intents", "settle", "nope", "--json", "--note", "x"), want: 2},
		{name: "settle no such intent", args: withKeystore("intents", "settle", "nope", "--json", "--failed", "--note", "x"), want: 1},
		{name: "resume", args: withKeystore("intents", "resume", "--json", "--token", testToken), want: 0},
		{name: "resume leaves intents pending", args: withKeystore("intents", "resume", "--json", "--token", testToken, "--max-attempts", "1"),
			setup: func(t *testing.T, p populated) { p.srv.FailNext(10, http.StatusServiceUnavailable, 0) }, want: 1},
		{name: "resume bad flag", args: withKeystore("intents", "resume", "--json", "--concurrency", "0"), want: 2},
		{name: "purge", args: withKeystore("intents", "purge", "--json", "--older-than", "24h"), want: 0},
		{name: "purge without cutoff", args: withKeystore("intents", "purge", "--json"), want: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := populateKeystore(t)
			if tc.setup != nil {
				tc.setup(t, p)
			}
			stdout, stderr, code := runCLI(t, tc.args(p)...)
			require.Equal(t, tc.want, code, "stdout: %s\nstderr: %s", stdout, stderr)
			dec := json.NewDecoder(strings.NewReader(stdout))
			var doc any
			require.NoError(t, dec.Decode(&doc), "stdout is JSON: %q", stdout)
			assert.False(t, dec.More(), "one document only: %q", stdout)
			if code != 0 {
				assertOneErrorLine(t, stderr)
				obj, ok := doc.(map[string]any)
				require.True(t, ok, "a failure is an object: %q", stdout)
				assert.NotEmpty(t, obj["error"], "the document says what went wrong: %q", stdout)
			}
		})
	}
}

// The resume report names each intent's outcome.
func TestResume_JSONReport(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	stdout, _, code := runCLI(t, "intents", "resume", "--json", "--keystore", p.path, "--token", testToken)
	require.Equal(t, 0, code, stdout)
	var rep resumeReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Equal(t, 2, rep.Resumed)
	assert.Equal(t, 2, rep.Succeeded)
	assert.Empty(t, rep.Error)
	keys := []string{rep.Intents[0].Key, rep.Intents[1].Key}
	assert.ElementsMatch(t, []string{p.pending[0].Key, p.pending[1].Key}, keys)
	assert.NotContains(t, stdout, testToken)
}

// A multi-line error (errors.Join, a Postgres connection error naming
// every address it tried) is printed on one line.
func TestErrorLine(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a; b", errorLine("a\nb\n"))
	assert.Equal(t, "failed to connect to `user=app`: 127.0.0.1:1: refused; [::1]:1: refused",
		errorLine("failed to connect to `user=app`:\n\t127.0.0.1:1: refused\n\t[::1]:1: refused"))
	assert.Equal(t, "one line", errorLine("one   line"))
}

// pgx names every address it tried on a line of its own; the operator
// still gets one line, with each address in it.
func TestPostgresErrorIsOneLine(t *testing.T) {
	t.Parallel()
	url := "postgres://app:pw@" + testenv.ClosedAddr(t) + "/payments"
	for _, args := range [][]string{
		{"intents", "list", "--keystore", url},
		{"serve", "--store", url, "--principal-key", testPrincipalKey},
	} {
		_, stderr, code := runCLI(t, args...)
		assert.Equal(t, 2, code, args)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		assert.Contains(t, stderr, "connection refused", args)
		assert.NotContains(t, stderr, "pw@", "the password is hidden")
	}
}
