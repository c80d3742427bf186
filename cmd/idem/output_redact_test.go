package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// outputSecret is the credential every location of these tests carries.
const outputSecret = "Pw0rdXYZ"

// secretShapes are the ways a store location carries a credential, at an
// address where nothing listens.
func secretShapes(t *testing.T) map[string]string {
	addr := testenv.ClosedAddr(t)
	return map[string]string{
		"postgres userinfo":     "postgres://app:" + outputSecret + "@" + addr + "/db?sslmode=disable",
		"postgres ?password":    "postgres://app@" + addr + "/db?password=" + outputSecret + "&sslmode=disable",
		"postgres ?PASSWORD":    "postgresql://app@" + addr + "/db?sslmode=disable&PASSWORD=" + outputSecret,
		"postgres ?sslpassword": "postgres://app@" + addr + "/db?sslpassword=" + outputSecret,
		"postgres unparsable":   "postgres://app:" + outputSecret + "@db:notaport/db",
		"postgres space":        "postgres://app:a " + outputSecret + "@" + addr + "/db",
		"key=value":             "host=127.0.0.1 port=1 user=app password=" + outputSecret + " dbname=db",
		"key=value quoted":      "host=127.0.0.1 port=1 password='a b " + outputSecret + "' dbname=db",
		"redis userinfo":        "redis://:" + outputSecret + "@" + addr + "/0",
		"rediss user":           "rediss://u:" + outputSecret + "@" + addr + "/0",
		"redis ?password":       "redis://" + addr + "/0?password=" + outputSecret,
	}
}

// runOutput runs the command line as the binary does (run: the writers
// and the error line of main) and returns everything it wrote.
func runOutput(t *testing.T, life time.Duration, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut lockedBuffer
	ctx, cancel := context.WithTimeout(t.Context(), life)
	defer cancel()
	_, err = run(ctx, args, &out, &errOut, serveTestEnv(env))
	return out.String(), errOut.String(), err
}

// assertNoSecret checks every output of one run.
func assertNoSecret(t *testing.T, stdout, stderr string, err error) {
	t.Helper()
	assert.NotContains(t, stdout, outputSecret, "stdout")
	assert.NotContains(t, stderr, outputSecret, "stderr")
	if err != nil {
		// The error value reaches only callers in this process; what a
		// user sees is the redacted line on stderr, checked above.
		assert.NotEmpty(t, stderr)
	}
}

// Every shape of credential, through every output path of the command:
// serve's start-up error and logs, the intents commands' errors in text
// and JSON (by flag and by $IDEM_KEYSTORE), and check's errors and report.
func TestOutput_NoCredentialShapeReachesAnyOutput(t *testing.T) {
	t.Parallel()
	paths := map[string]func(loc string) (env map[string]string, args []string){
		"serve": func(loc string) (map[string]string, []string) {
			return nil, []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "debug", "--store", loc}
		},
		"serve --store=": func(loc string) (map[string]string, []string) {
			return nil, []string{"serve", "--addr", "127.0.0.1:0", "--store=" + loc}
		},
		"intents list": func(loc string) (map[string]string, []string) {
			return nil, []string{"intents", "list", "--keystore", loc}
		},
		"intents list --json": func(loc string) (map[string]string, []string) {
			return nil, []string{"intents", "list", "--json", "--keystore", loc}
		},
		"intents show --json $IDEM_KEYSTORE": func(loc string) (map[string]string, []string) {
			return map[string]string{keystoreEnv: loc}, []string{"intents", "show", "--json", "some-intent"}
		},
		"intents purge": func(loc string) (map[string]string, []string) {
			return nil, []string{"intents", "purge", "--keystore", loc}
		},
	}
	for shape, loc := range secretShapes(t) {
		for path, argsOf := range paths {
			t.Run(path+"/"+shape, func(t *testing.T) {
				t.Parallel()
				env, args := argsOf(loc)
				stdout, stderr, err := runOutput(t, time.Minute, env, args...)
				require.Error(t, err, "nothing listens at the location")
				assertNoSecret(t, stdout, stderr, err)
			})
		}
	}
}

// idem check's target URL may carry credentials too: its error line, its
// JSON report and its text output hide them.
func TestOutput_CheckHidesTheTargetsCredentials(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedAddr(t)
	for name, target := range map[string]string{
		"userinfo":  "http://u:" + outputSecret + "@" + addr,
		"?password": "http://" + addr + "/?password=" + outputSecret,
		"?token":    "http://" + addr + "/?token=" + outputSecret,
	} {
		for _, json := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/json=%v", name, json), func(t *testing.T) {
				t.Parallel()
				args := []string{"check", target}
				if json {
					args = append(args, "--json")
				}
				stdout, stderr, err := runOutput(t, time.Minute, nil, args...)
				require.Error(t, err)
				assertNoSecret(t, stdout, stderr, err)
			})
		}
	}
}

// A served run logs its store in the listening line without the password
// given as a query parameter. The test database does not check passwords.
func TestOutput_ServeListeningLineHidesQueryPassword(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	for _, param := range []string{"password", "Password"} {
		t.Run(param, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, err := runOutput(t, 3*time.Second, nil,
				"serve", "--addr", "127.0.0.1:0", "--log-level", "debug", "--store", dsn+sep+param+"="+outputSecret)
			assertNoSecret(t, stdout, stderr, err)
			if err != nil {
				t.Skipf("the store refused the connection (its error is checked): %v", stderr)
			}
			assert.Contains(t, stderr, "msg=listening")
			assert.Contains(t, stderr, param+"=REDACTED")
		})
	}
}

// The writer hides what a library prints in a shape the command did not
// foresee: the given credential's value itself.
func TestRedactWriter_ScrubsGivenValues(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := redactWriter{w: &buf, secrets: outputSecrets([]string{"serve", "--store=postgres://a:" + outputSecret + "@h/db"}, serveTestEnv(nil))}
	n, err := w.Write([]byte("driver said: auth " + outputSecret + " refused\n"))
	require.NoError(t, err)
	assert.Equal(t, len("driver said: auth "+outputSecret+" refused\n"), n)
	assert.Equal(t, "driver said: auth REDACTED refused\n", buf.String())
}
